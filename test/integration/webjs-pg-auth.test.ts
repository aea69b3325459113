/**
 * WEBJS_AUTH=postgres (issue 15 item 5): the RemoteAuth store on a real PostgreSQL (pg-auth-store.ts), the
 * library's own RemoteAuth moving a profile from one "node" (data directory) to another through it, and the
 * driver factory choosing RemoteAuth (with the stand-in Client: no Chromium is started).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { createRequire } from 'node:module';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import wweb from 'whatsapp-web.js';
import { simulatedClock } from '../../src/clock.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import type { WebjsDriver } from '../../src/drivers/webjs/driver.js';
import { webjsAuthFor, webjsDriverFactory } from '../../src/drivers/webjs/factory.js';
import { sessionPaths } from '../../src/drivers/webjs/options.js';
import { PgAuthStore } from '../../src/drivers/webjs/pg-auth-store.js';
import type { Pool } from '../../src/store/pool.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { StandInClient } from '../unit/webjs-standin.js';

let db: TestDb;
let root: string;

before(async () => {
  db = await createTestDb('webjs_pg_auth');
  root = await mkdtemp(path.join(tmpdir(), 'webjs-pg-auth-'));
});
after(async () => {
  await db?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

/** archiver (whatsapp-web.js's own dependency for RemoteAuth; untyped): the part these tests use. */
interface ZipArchive {
  pipe(out: NodeJS.WritableStream): void;
  append(source: Buffer | string, entry: { name: string }): void;
  finalize(): Promise<void>;
  once(event: 'error', listener: (err: Error) => void): void;
}
const archiver: (format: 'zip') => ZipArchive = createRequire(import.meta.url)('archiver');

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A node's data directory (RemoteAuth's dataPath). */
async function nodeDir(name: string): Promise<string> {
  const dir = path.join(root, name);
  await mkdir(dir, { recursive: true });
  return dir;
}

/** A real zip (archiver, as RemoteAuth makes them) of incompressible files, `mb` MiB in all, at dir/<session>.zip. */
async function writeZip(dir: string, session: string, mb: number): Promise<Buffer> {
  const file = path.join(dir, `${session}.zip`);
  const archive = archiver('zip');
  const out = createWriteStream(file);
  const closed = new Promise<void>((resolve, reject) => {
    out.once('close', resolve);
    out.once('error', reject);
    archive.once('error', reject);
  });
  archive.pipe(out);
  for (let i = 0; i < mb; i++) archive.append(randomBytes(1024 * 1024), { name: `Default/IndexedDB/blob-${i}.bin` });
  archive.append('{"wa":"local storage"}', { name: 'Default/Local Storage/leveldb/000003.log' });
  await archive.finalize();
  await closed;
  return readFile(file);
}

async function storedParts(): Promise<number> {
  const r = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM webjs_auth_parts');
  return r.rows[0]?.n ?? -1;
}

describe('the PostgreSQL RemoteAuth store', () => {
  test('save, exists, extract, delete: a zip of a few MB comes back byte-identical', async () => {
    const a = await nodeDir('rt-a');
    const b = await nodeDir('rt-b');
    const session = 'RemoteAuth-roundtrip';
    const zip = await writeZip(a, session, 3);
    assert.ok(zip.length > 3 * 1024 * 1024);
    const storeA = new PgAuthStore({ pool: db.pool, dataPath: a });
    const storeB = new PgAuthStore({ pool: db.pool, dataPath: b, chunkBytes: 256 * 1024 + 7 });

    assert.equal(await storeA.sessionExists({ session }), false);
    await storeA.save({ session });
    assert.equal(await storeA.sessionExists({ session }), true);
    assert.equal(await storeB.sessionExists({ session }), true, 'another node sees it');
    assert.equal(await storedParts(), 0, 'no parts left behind');

    // the slices of another size than the save's: the value is one, not a list of slices
    const target = path.join(b, `${session}.zip`);
    await storeB.extract({ session, path: target });
    const back = await readFile(target);
    assert.equal(back.length, zip.length);
    assert.equal(sha(back), sha(zip));
    assert.equal((await stat(target)).mode & 0o777, 0o600, 'the extracted credential is private');
    assert.deepEqual((await readdir(b)).sort(), [`${session}.zip`], 'no partial file left');

    // the row in the table is the zip itself
    const row = await db.pool.query<{ data: Buffer }>('SELECT data FROM webjs_auth WHERE session = $1', [session]);
    assert.equal(sha(row.rows[0]?.data ?? Buffer.alloc(0)), sha(zip));

    await storeB.delete({ session });
    assert.equal(await storeA.sessionExists({ session }), false);
    await assert.rejects(storeB.extract({ session, path: target }), /webjs session RemoteAuth-roundtrip is not stored/);
  });

  test('concurrent saves of one session: one of them whole, never a mix; afterwards the last save wins', async () => {
    const session = 'RemoteAuth-concurrent';
    const nodes = await Promise.all(['cc-a', 'cc-b', 'cc-c', 'cc-d'].map(nodeDir));
    const zips = await Promise.all(nodes.map((dir) => writeZip(dir, session, 2)));
    const digests = zips.map(sha);
    assert.equal(new Set(digests).size, nodes.length);
    // small slices: the uploads interleave statement by statement
    const stores = nodes.map((dir) => new PgAuthStore({ pool: db.pool, dataPath: dir, chunkBytes: 64 * 1024 }));
    const reader = new PgAuthStore({ pool: db.pool, dataPath: root, chunkBytes: 32 * 1024 });

    await stores[0]!.save({ session });
    const reads: string[] = [];
    const readWhileSaving = (async () => {
      for (let i = 0; i < 3; i++) {
        const target = path.join(root, `concurrent-read-${i}.zip`);
        await reader.extract({ session, path: target });
        reads.push(sha(await readFile(target)));
      }
    })();
    await Promise.all([...stores.map((s) => s.save({ session })), readWhileSaving]);

    const row = await db.pool.query<{ data: Buffer }>('SELECT data FROM webjs_auth WHERE session = $1', [session]);
    assert.equal(row.rowCount, 1);
    assert.ok(digests.includes(sha(row.rows[0]!.data)), 'the stored zip is one of the saved ones, byte for byte');
    for (const r of reads) assert.ok(digests.includes(r), 'a read during the saves got one whole zip');
    assert.equal(await storedParts(), 0);

    // one after the other: the later save is what is stored
    await stores[2]!.save({ session });
    await stores[1]!.save({ session });
    const target = path.join(root, 'concurrent-last.zip');
    await reader.extract({ session, path: target });
    assert.equal(sha(await readFile(target)), digests[1]);
    await reader.delete({ session });
  });

  test('a delete while a save is on its way wins: the save fails, nothing is stored', async () => {
    const session = 'RemoteAuth-overtaken';
    const dir = await nodeDir('overtaken');
    await writeZip(dir, session, 1);
    const other = new PgAuthStore({ pool: db.pool, dataPath: root });
    const pool = afterQuery(db.pool, 'INSERT INTO webjs_auth_parts', 2, () => other.delete({ session }));
    const store = new PgAuthStore({ pool, dataPath: dir, chunkBytes: 128 * 1024 });
    await assert.rejects(store.save({ session }), /the save was overtaken by a delete of the session/);
    assert.equal(await store.sessionExists({ session }), false);
    assert.equal(await storedParts(), 0);
  });

  test('a save that replaces the row during a read: the read starts over and returns the new zip whole', async () => {
    const session = 'RemoteAuth-replaced';
    const a = await nodeDir('replaced-a');
    const b = await nodeDir('replaced-b');
    await writeZip(a, session, 1);
    const second = await writeZip(b, session, 1);
    await new PgAuthStore({ pool: db.pool, dataPath: a }).save({ session });
    const saveB = new PgAuthStore({ pool: db.pool, dataPath: b });
    const pool = afterQuery(db.pool, 'SELECT substring', 2, () => saveB.save({ session }));
    const reader = new PgAuthStore({ pool, dataPath: root, chunkBytes: 100 * 1024 });
    const target = path.join(root, 'replaced.zip');
    await reader.extract({ session, path: target });
    assert.equal(sha(await readFile(target)), sha(second));
    await reader.delete({ session });
  });

  test('names that are not RemoteAuth session names are refused (no path outside dataPath)', async () => {
    const store = new PgAuthStore({ pool: db.pool, dataPath: root });
    await assert.rejects(store.save({ session: '../etc/passwd' }), /letters, digits, _ and - only/);
    await assert.rejects(store.sessionExists({ session: 'a b' }), /letters, digits, _ and - only/);
  });
});

/** The pool, running `action` once right after the `n`th query whose text starts with `prefix`. */
function afterQuery(pool: Pool, prefix: string, n: number, action: () => Promise<void>): Pool {
  let seen = 0;
  const query = async (text: unknown, values?: unknown): Promise<unknown> => {
    const result: unknown = await Reflect.apply(pool.query, pool, values === undefined ? [text] : [text, values]);
    if (typeof text === 'string' && text.startsWith(prefix) && ++seen === n) await action();
    return result;
  };
  return new Proxy(pool, { get: (target, key) => (key === 'query' ? query : Reflect.get(target, key, target)) });
}

/** The parts of the library's RemoteAuth this test drives directly (they are not in its type declarations). */
interface RemoteAuthInternals {
  setup(client: unknown): void;
  beforeBrowserInitialized(): Promise<void>;
  storeRemoteSession(options?: { emit?: boolean }): Promise<void>;
  logout(): Promise<void>;
  userDataDir: string;
}

function internals(strategy: unknown): RemoteAuthInternals {
  assert.ok(strategy instanceof wweb.RemoteAuth);
  for (const m of ['setup', 'beforeBrowserInitialized', 'storeRemoteSession', 'logout']) {
    assert.equal(typeof Reflect.get(strategy, m), 'function', m);
  }
  return strategy as unknown as RemoteAuthInternals;
}

async function tree(dir: string, prefix = ''): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const rel = path.join(prefix, e.name);
    if (e.isDirectory()) Object.assign(out, await tree(path.join(dir, e.name), rel));
    else out[rel] = sha(await readFile(path.join(dir, e.name)));
  }
  return out;
}

describe('the driver factory with WEBJS_AUTH=postgres', () => {
  function driverOn(dataDir: string, instanceId: string, auth: ReturnType<typeof webjsAuthFor>): { driver: WebjsDriver; client: () => StandInClient } {
    let current: StandInClient | null = null;
    const factory = webjsDriverFactory({
      auth,
      clock: simulatedClock(),
      clientFactory: (options) => (current = new StandInClient(options)),
    });
    const driver = factory({ instanceId, dataDir, callTimeoutMs: 1_000 });
    assert.ok(driver.kind === 'webjs');
    return {
      driver: driver as WebjsDriver,
      client: () => {
        assert.ok(current, 'no client was created');
        return current;
      },
    };
  }

  test('WEBJS_AUTH: local by default, postgres when set, anything else refused without the value', () => {
    assert.equal(loadConfig({}).WEBJS_AUTH, 'local');
    assert.equal(loadConfig({ WEBJS_AUTH: 'postgres' }).WEBJS_AUTH, 'postgres');
    assert.throws(
      () => loadConfig({ WEBJS_AUTH: 'mongodb' }),
      (err: unknown) => err instanceof ConfigError && err.message === 'invalid configuration: WEBJS_AUTH must be local or postgres',
    );
    assert.deepEqual(webjsAuthFor('local', db.pool), { kind: 'local' });
    assert.deepEqual(webjsAuthFor('postgres', db.pool), { kind: 'postgres', pool: db.pool });
  });

  test('RemoteAuth with the PostgreSQL store, clientId = the instance id, under DATA_DIR/sessions', async () => {
    const dataDir = await nodeDir('factory');
    const { driver, client } = driverOn(dataDir, 'inst-pg-1', webjsAuthFor('postgres', db.pool));
    await driver.initialize();
    const auth = client().options.authStrategy;
    assert.ok(auth instanceof wweb.RemoteAuth, 'RemoteAuth when configured');
    assert.equal(auth.clientId, 'inst-pg-1');
    assert.equal(auth.dataPath, path.join(dataDir, 'sessions'));
    assert.ok(Reflect.get(auth, 'store') instanceof PgAuthStore);
    assert.equal(Reflect.get(auth, 'backupSyncIntervalMs'), 300_000);
    assert.equal(sessionPaths(dataDir, 'inst-pg-1', 'postgres').userDataDir, path.join(dataDir, 'sessions', 'RemoteAuth-inst-pg-1'));
    await driver.destroy();

    const local = driverOn(dataDir, 'inst-local-1', webjsAuthFor('local', db.pool));
    await local.driver.initialize();
    assert.ok(local.client().options.authStrategy instanceof wweb.LocalAuth, 'LocalAuth otherwise');
    await local.driver.destroy();

    assert.throws(() => webjsDriverFactory({ auth: { kind: 'postgres', pool: db.pool, backupSyncIntervalMs: 59_999 } }), /at least 60000/);
  });

  test("the library's RemoteAuth moves a profile from one node to another through PostgreSQL; logout forgets it", async () => {
    const instanceId = 'inst-move-1';
    // node A: a fresh start (nothing stored), the browser writes its profile, RemoteAuth backs it up
    const a = driverOn(await nodeDir('move-a'), instanceId, webjsAuthFor('postgres', db.pool));
    await a.driver.initialize();
    const authA = internals(a.client().options.authStrategy);
    authA.setup({ options: { puppeteer: {} } });
    await authA.beforeBrowserInitialized();
    const profile = authA.userDataDir;
    await mkdir(path.join(profile, 'Default', 'IndexedDB', 'https_web.whatsapp.com_0.indexeddb.leveldb'), { recursive: true });
    await mkdir(path.join(profile, 'Default', 'Local Storage', 'leveldb'), { recursive: true });
    await mkdir(path.join(profile, 'Default', 'Cache'), { recursive: true });
    await writeFile(path.join(profile, 'Default', 'IndexedDB', 'https_web.whatsapp.com_0.indexeddb.leveldb', '000005.ldb'), randomBytes(2 * 1024 * 1024));
    await writeFile(path.join(profile, 'Default', 'Local Storage', 'leveldb', '000003.log'), randomBytes(4096));
    await writeFile(path.join(profile, 'Default', 'Cache', 'data_0'), randomBytes(1024));
    await authA.storeRemoteSession();
    assert.equal(await storedParts(), 0);
    const stored = await db.pool.query('SELECT 1 FROM webjs_auth WHERE session = $1', [`RemoteAuth-${instanceId}`]);
    assert.equal(stored.rowCount, 1);
    await a.driver.destroy();

    // node B: its own data directory, the same instance: the profile is restored before the browser starts
    const b = driverOn(await nodeDir('move-b'), instanceId, webjsAuthFor('postgres', db.pool));
    await b.driver.initialize();
    const authB = internals(b.client().options.authStrategy);
    authB.setup({ options: { puppeteer: {} } });
    await authB.beforeBrowserInitialized();
    const expected = await tree(path.join(profile, 'Default'));
    delete expected[path.join('Cache', 'data_0')];
    assert.deepEqual(await tree(path.join(authB.userDataDir, 'Default')), expected, 'IndexedDB and Local Storage restored, byte for byte; caches not carried');

    await authB.logout();
    const gone = await db.pool.query('SELECT 1 FROM webjs_auth WHERE session = $1', [`RemoteAuth-${instanceId}`]);
    assert.equal(gone.rowCount, 0, 'a logout deletes the stored link');
    await b.driver.destroy();
  });
});

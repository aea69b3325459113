/**
 * The media store against real PostgreSQL and a real directory: ids scoped to their instance, 404 vs 410,
 * retention, quota eviction oldest first, the store ceilings, and the sweeper bringing disk and index back
 * into agreement from every state a kill can leave behind.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { simulatedClock } from '../../src/clock.js';
import { DomainError } from '../../src/errors.js';
import { createMediaStore, type MediaStore, type MediaStoreOptions } from '../../src/media/store.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const HOUR = 3_600_000;

let db: TestDb;
let dataDir: string;
let instA: string;
let instB: string;

async function addInstance(name: string): Promise<string> {
  const id = randomUUID();
  await db.pool.query(`INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')`, [id, name]);
  return id;
}

async function expectApiError(p: Promise<unknown>, status: number, code: string): Promise<DomainError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof DomainError, `expected DomainError ${code}, got ${String(err)}`);
    assert.equal(err.status, status, err.message);
    assert.equal(err.code, code);
    return err;
  }
  assert.fail(`expected ${status} ${code}`);
}

const bytes = (n: number, seed = 1) => Buffer.alloc(n, seed);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function* chunks(total: number, size = 64 * KiB): AsyncGenerator<Buffer> {
  for (let sent = 0; sent < total; sent += size) yield Buffer.alloc(Math.min(size, total - sent), 3);
}

before(async () => {
  db = await createTestDb('media_store');
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-media-'));
  instA = await addInstance('media-a');
  instB = await addInstance('media-b');
});

after(async () => {
  await db.close();
  await rm(dataDir, { recursive: true, force: true });
});

beforeEach(async () => {
  await db.pool.query('DELETE FROM media');
  await rm(path.join(dataDir, 'media'), { recursive: true, force: true });
});

function makeStore(extra: Partial<MediaStoreOptions> = {}) {
  const clock = simulatedClock(Date.now());
  const disk = { free: 100 * 1024 ** 3 };
  const store = createMediaStore({ pool: db.pool, dataDir, clock, freeDiskBytes: async () => disk.free, ...extra });
  return { store, clock, disk };
}

const fileOf = (store: MediaStore, instanceId: string, mediaId: string) => path.join(store.root, instanceId, mediaId);

async function namesIn(store: MediaStore, instanceId: string): Promise<string[]> {
  try {
    return (await readdir(path.join(store.root, instanceId))).sort();
  } catch {
    return [];
  }
}

describe('media store', () => {
  test('put, get, read: bytes intact, named by id, private modes, 72 h retention', async () => {
    const { store, clock } = makeStore();
    const data = Buffer.from('%PDF-1.7 a small document');
    const rec = await store.put(instA, { data, mimetype: 'application/pdf', filename: '../../etc/passwd', origin: 'upload' });
    assert.match(rec.mediaId, /^md_[0-9a-f]{24}$/);
    assert.equal(rec.size, data.length);
    assert.equal(rec.sha256, sha(data));
    assert.equal(rec.createdAt, clock.now());
    assert.equal(rec.expiresAt, clock.now() + 72 * HOUR);
    assert.equal(rec.filename, '../../etc/passwd', 'kept as metadata only');

    assert.deepEqual(await namesIn(store, instA), [rec.mediaId]);
    assert.equal((await stat(fileOf(store, instA, rec.mediaId))).mode & 0o777, 0o600);
    assert.equal((await stat(path.join(store.root, instA))).mode & 0o777, 0o700);

    assert.deepEqual(await store.get(instA, rec.mediaId), rec);
    const { data: back } = await store.read(instA, rec.mediaId);
    assert.ok(back.equals(data));
  });

  test('a stream is stored chunk by chunk with its size and checksum', async () => {
    const { store } = makeStore();
    const rec = await store.put(instA, { stream: chunks(3 * MiB + 17), mimetype: 'video/mp4', origin: 'incoming', messageId: 'true_1@c.us_AB' });
    assert.equal(rec.size, 3 * MiB + 17);
    const opened = await store.open(instA, rec.mediaId);
    let n = 0;
    const h = createHash('sha256');
    for await (const c of opened.stream) {
      n += (c as Buffer).length;
      h.update(c as Buffer);
    }
    assert.equal(n, rec.size);
    assert.equal(opened.size, rec.size);
    assert.equal(h.digest('hex'), rec.sha256);
    assert.deepEqual(await store.findByMessage(instA, 'true_1@c.us_AB'), rec);
    assert.equal(await store.findByMessage(instB, 'true_1@c.us_AB'), null);
  });

  test('media ids are scoped to their instance: another instance gets 404 for everything', async () => {
    const { store } = makeStore();
    const rec = await store.put(instA, { data: bytes(10), mimetype: 'image/png', origin: 'upload' });
    await expectApiError(store.get(instB, rec.mediaId), 404, 'MEDIA_NOT_FOUND');
    await expectApiError(store.open(instB, rec.mediaId), 404, 'MEDIA_NOT_FOUND');
    await expectApiError(store.read(instB, rec.mediaId), 404, 'MEDIA_NOT_FOUND');
    await expectApiError(store.delete(instB, rec.mediaId), 404, 'MEDIA_NOT_FOUND');
    assert.equal((await store.get(instA, rec.mediaId)).mediaId, rec.mediaId, 'the owner still has it');
  });

  test('404 MEDIA_NOT_FOUND for unknown, malformed, deleted and expired; 410 MEDIA_GONE for a missing file', async () => {
    const { store, clock } = makeStore();
    await expectApiError(store.get(instA, 'md_000000000000000000000000'), 404, 'MEDIA_NOT_FOUND');
    await expectApiError(store.get(instA, '../../../etc/passwd'), 404, 'MEDIA_NOT_FOUND');

    const gone = await store.put(instA, { data: bytes(10), mimetype: 'image/png', origin: 'upload' });
    await unlink(fileOf(store, instA, gone.mediaId));
    await expectApiError(store.get(instA, gone.mediaId), 410, 'MEDIA_GONE');
    await expectApiError(store.open(instA, gone.mediaId), 410, 'MEDIA_GONE');

    const deleted = await store.put(instA, { data: bytes(10), mimetype: 'image/png', origin: 'upload' });
    await store.delete(instA, deleted.mediaId);
    await expectApiError(store.get(instA, deleted.mediaId), 404, 'MEDIA_NOT_FOUND');
    await expectApiError(store.delete(instA, deleted.mediaId), 404, 'MEDIA_NOT_FOUND');
    assert.ok(!(await namesIn(store, instA)).includes(deleted.mediaId));

    const expiring = await store.put(instA, { data: bytes(10), mimetype: 'image/png', origin: 'upload' });
    clock.increment(72 * HOUR - 1);
    await store.get(instA, expiring.mediaId);
    clock.increment(1);
    await expectApiError(store.get(instA, expiring.mediaId), 404, 'MEDIA_NOT_FOUND');
    // the gone one expired too: past retention it is simply not found
    await expectApiError(store.get(instA, gone.mediaId), 404, 'MEDIA_NOT_FOUND');
  });

  test('the per-instance quota evicts the oldest media first, only of that instance', async () => {
    const { store, clock } = makeStore({ instanceMaxMb: 1 });
    const put = async (inst: string) => {
      clock.increment(1000);
      return store.put(inst, { data: bytes(400 * KiB), mimetype: 'image/jpeg', origin: 'upload' });
    };
    const a1 = await put(instA);
    const b1 = await put(instB);
    const a2 = await put(instA);
    const a3 = await put(instA); // 1200 KiB > 1 MiB: a1 goes
    await expectApiError(store.get(instA, a1.mediaId), 404, 'MEDIA_NOT_FOUND');
    await store.get(instA, a2.mediaId);
    await store.get(instA, a3.mediaId);
    await store.get(instB, b1.mediaId);
    const a4 = await put(instA); // a2 goes next, not a3
    await expectApiError(store.get(instA, a2.mediaId), 404, 'MEDIA_NOT_FOUND');
    await store.get(instA, a3.mediaId);
    await store.get(instA, a4.mediaId);
    assert.deepEqual(await namesIn(store, instA), [a3.mediaId, a4.mediaId].sort());
    const { rows } = await db.pool.query('SELECT id FROM media WHERE instance_id = $1 ORDER BY id', [instA]);
    assert.deepEqual(rows.map((r) => r.id), [a3.mediaId, a4.mediaId].sort(), 'evicted rows are gone too');
  });

  test('507 too_large above the 16 MiB per-file ceiling, decided while streaming; nothing left behind', async () => {
    const { store } = makeStore();
    let produced = 0;
    async function* big() {
      for (;;) {
        produced += 256 * KiB;
        yield Buffer.alloc(256 * KiB);
        if (produced > 64 * MiB) throw new Error('the store kept reading past its ceiling');
      }
    }
    const err = await expectApiError(store.put(instA, { stream: big(), mimetype: 'video/mp4', origin: 'upload' }), 507, 'MEDIA_STORE_UNAVAILABLE');
    assert.equal(err.extra.reason, 'too_large');
    assert.ok(produced <= 16 * MiB + 256 * KiB, `read ${produced} bytes`);
    assert.deepEqual(await namesIn(store, instA), []);
    const ok = await store.put(instA, { stream: chunks(16 * MiB), mimetype: 'video/mp4', origin: 'upload' });
    assert.equal(ok.size, 16 * MiB, 'exactly the ceiling is stored');
  });

  test('507 low_disk below 5 GB free, before anything is written', async () => {
    const { store, disk } = makeStore();
    disk.free = 5 * 1024 ** 3 - 1;
    const err = await expectApiError(store.put(instA, { data: bytes(10), mimetype: 'image/png', origin: 'upload' }), 507, 'MEDIA_STORE_UNAVAILABLE');
    assert.equal(err.extra.reason, 'low_disk');
    assert.deepEqual(await namesIn(store, instA), []);
    disk.free = 5 * 1024 ** 3;
    await store.put(instA, { data: bytes(10), mimetype: 'image/png', origin: 'upload' });
  });

  test('a staged file is invisible until committed and discard leaves nothing', async () => {
    const { store } = makeStore();
    const staged = await store.stage(instA, bytes(100));
    await expectApiError(store.get(instA, staged.mediaId), 404, 'MEDIA_NOT_FOUND');
    await staged.discard();
    assert.deepEqual(await namesIn(store, instA), []);
  });
});

describe('media sweeper', () => {
  const GRACE = 15 * 60_000;

  /** Disk and index agree: every file has a live row, no tombstone or expired row is left. */
  async function assertAgreement(store: MediaStore, now: number) {
    for (const inst of [instA, instB]) {
      const files = (await namesIn(store, inst)).filter((n) => n.startsWith('md_') || n.startsWith('.md_'));
      const { rows } = await db.pool.query<{ id: string; live: boolean }>(
        'SELECT id, (deleted_at IS NULL AND expires_at > $2) AS live FROM media WHERE instance_id = $1',
        [inst, new Date(now)],
      );
      assert.deepEqual(rows.filter((r) => !r.live), [], 'no tombstones or expired rows');
      const live = new Set(rows.map((r) => r.id));
      for (const f of files) assert.ok(live.has(f), `file ${f} has a live row`);
    }
  }

  test('expired media: files and rows go', async () => {
    const { store, clock } = makeStore();
    const old = await store.put(instA, { data: bytes(10), mimetype: 'image/png', origin: 'upload' });
    clock.increment(HOUR);
    const young = await store.put(instA, { data: bytes(10), mimetype: 'image/png', origin: 'upload' });
    clock.increment(71 * HOUR);
    const report = await store.sweep();
    assert.equal(report.expired, 1);
    assert.deepEqual(await namesIn(store, instA), [young.mediaId]);
    const { rows } = await db.pool.query('SELECT id FROM media');
    assert.deepEqual(rows.map((r) => r.id), [young.mediaId]);
    await expectApiError(store.get(instA, old.mediaId), 404, 'MEDIA_NOT_FOUND');
    await assertAgreement(store, clock.now());
  });

  test('every state a kill can leave is repaired, and a second sweep finds nothing to do', async () => {
    const { store, clock } = makeStore();
    const dir = path.join(store.root, instA);
    const keep = await store.put(instA, { data: bytes(10), mimetype: 'image/png', origin: 'upload' });

    // put killed after writing the temp file, before the rename
    const tempName = '.md_aaaaaaaaaaaaaaaaaaaaaaaa.tmp';
    await writeFile(path.join(dir, tempName), 'partial');
    // put killed after the rename, before the row insert
    const orphan = 'md_bbbbbbbbbbbbbbbbbbbbbbbb';
    await writeFile(path.join(dir, orphan), 'complete but unindexed');
    // delete killed after marking the row, before the unlink
    const marked = await store.put(instA, { data: bytes(10), mimetype: 'image/png', origin: 'upload' });
    await db.pool.query('UPDATE media SET deleted_at = now() WHERE id = $1', [marked.mediaId]);
    // delete killed after the unlink, before the row delete
    const unlinked = await store.put(instA, { data: bytes(10), mimetype: 'image/png', origin: 'upload' });
    await db.pool.query('UPDATE media SET deleted_at = now() WHERE id = $1', [unlinked.mediaId]);
    await unlink(path.join(dir, unlinked.mediaId));
    // a live row whose file vanished by other means: 410 until it expires
    const vanished = await store.put(instA, { data: bytes(10), mimetype: 'image/png', origin: 'upload' });
    await unlink(path.join(dir, vanished.mediaId));
    // a file that is not ours by name is never touched
    await writeFile(path.join(dir, 'README'), 'not media');

    // within the grace period an unindexed file may be a put in progress elsewhere: left alone
    const early = await store.sweep();
    assert.equal(early.tombstones, 2);
    assert.equal(early.orphanFiles + early.tempFiles, 0);
    assert.ok((await namesIn(store, instA)).includes(orphan));

    // the clock started before the files were written (real mtimes): a minute more than the grace
    clock.increment(GRACE + 60_000);
    const report = await store.sweep();
    assert.deepEqual(report, { expired: 0, tombstones: 0, evicted: 0, orphanFiles: 1, tempFiles: 1 });
    assert.deepEqual(await namesIn(store, instA), ['README', keep.mediaId].sort());
    await assertAgreement(store, clock.now());
    await expectApiError(store.get(instA, vanished.mediaId), 410, 'MEDIA_GONE');
    await store.get(instA, keep.mediaId);

    assert.deepEqual(await store.sweep(), { expired: 0, tombstones: 0, evicted: 0, orphanFiles: 0, tempFiles: 0 });

    clock.increment(72 * HOUR);
    const late = await store.sweep();
    assert.equal(late.expired, 2, 'the kept one and the 410 one expire');
    await expectApiError(store.get(instA, vanished.mediaId), 404, 'MEDIA_NOT_FOUND');
    assert.equal((await db.pool.query('SELECT 1 FROM media')).rowCount, 0);
  });

  test('a temp file written before the store was made (a killed process\'s upload) goes at the first sweep, within the grace period', async () => {
    const dir = path.join(dataDir, 'media', instA);
    await mkdir(dir, { recursive: true });
    const killed = '.md_cccccccccccccccccccccccc.tmp';
    await writeFile(path.join(dir, killed), 'cut off by a kill');
    const minuteAgo = new Date(Date.now() - 60_000);
    await utimes(path.join(dir, killed), minuteAgo, minuteAgo);
    const { store } = makeStore();
    const mine = '.md_dddddddddddddddddddddddd.tmp';
    await writeFile(path.join(dir, mine), 'written since');
    assert.equal((await store.sweep()).tempFiles, 1);
    const left = await namesIn(store, instA);
    assert.ok(!left.includes(killed), 'the earlier process\'s temp file removed');
    assert.ok(left.includes(mine), 'one written since the store was made waits out the grace period');
    await unlink(path.join(dir, mine));
  });

  test('a file being written by this process is never swept, however old', async () => {
    const { store, clock } = makeStore();
    const staged = await store.stage(instA, bytes(100));
    const tmp = (await namesIn(store, instA)).find((n) => n.endsWith('.tmp'));
    assert.ok(tmp);
    const past = new Date(Date.now() - 24 * HOUR);
    await utimes(path.join(store.root, instA, tmp), past, past);
    clock.increment(GRACE * 4);
    assert.equal((await store.sweep()).tempFiles, 0);
    const rec = await staged.commit({ mimetype: 'image/png', origin: 'upload' });
    assert.equal((await store.get(instA, rec.mediaId)).size, 100);
  });

  test('a lowered quota is enforced by the sweeper, oldest first', async () => {
    const big = makeStore({ instanceMaxMb: 10 });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      big.clock.increment(1000);
      ids.push((await big.store.put(instA, { data: bytes(400 * KiB), mimetype: 'image/png', origin: 'upload' })).mediaId);
    }
    const small = createMediaStore({ pool: db.pool, dataDir, clock: big.clock, instanceMaxMb: 1, freeDiskBytes: async () => 1e12 });
    const report = await small.sweep();
    assert.equal(report.evicted, 2);
    assert.deepEqual(await namesIn(small, instA), ids.slice(2).sort());
  });
});

describe('media store shared by several nodes (one database, a DATA_DIR each)', () => {
  test('a media stored through one node is read on another, which keeps a copy; a delete anywhere ends it everywhere', async () => {
    const other = await mkdtemp(path.join(os.tmpdir(), 'mgw-media-other-'));
    try {
      const here = makeStore({ shared: true });
      const there = createMediaStore({ pool: db.pool, dataDir: other, clock: here.clock, freeDiskBytes: async () => 1e12, shared: true });
      // more than one part of media_blobs (1 MiB each), the last one short
      const data = Buffer.concat([bytes(MiB, 7), bytes(MiB, 8), bytes(200 * KiB, 9)]);
      const rec = await here.store.put(instA, { data, mimetype: 'image/png', origin: 'upload' });
      const { rows: parts } = await db.pool.query<{ part: number; n: number }>('SELECT part, length(data) AS n FROM media_blobs WHERE media_id = $1 ORDER BY part', [rec.mediaId]);
      assert.deepEqual(parts.map((p) => [p.part, p.n]), [[0, MiB], [1, MiB], [2, 200 * KiB]]);
      assert.deepEqual(await namesIn(there, instA), [], 'the other node has no file yet');

      assert.equal((await there.get(instA, rec.mediaId)).sha256, sha(data));
      const read = await there.read(instA, rec.mediaId);
      assert.equal(sha(read.data), sha(data));
      assert.deepEqual(await namesIn(there, instA), [rec.mediaId], 'a copy, no temp file left');
      assert.equal((await stat(fileOf(there, instA, rec.mediaId))).mode & 0o777, 0o600);
      const opened = await there.open(instA, rec.mediaId);
      let streamed = 0;
      for await (const c of opened.stream) streamed += (c as Buffer).length;
      assert.equal(streamed, data.length);

      // a part missing (written before the parts were complete, or lost): 410, and no partial copy left behind
      const gone = await here.store.put(instA, { data, mimetype: 'image/png', origin: 'upload' });
      await db.pool.query('DELETE FROM media_blobs WHERE media_id = $1 AND part = 1', [gone.mediaId]);
      await expectApiError(there.read(instA, gone.mediaId), 410, 'MEDIA_GONE');
      assert.deepEqual((await namesIn(there, instA)).filter((n) => n.includes(gone.mediaId)), []);

      // another instance's key does not reach it through the copy
      await expectApiError(there.read(instB, rec.mediaId), 404, 'MEDIA_NOT_FOUND');
      await there.delete(instA, rec.mediaId);
      await expectApiError(here.store.read(instA, rec.mediaId), 404, 'MEDIA_NOT_FOUND');
      const { rows } = await db.pool.query('SELECT 1 FROM media_blobs WHERE media_id = $1', [rec.mediaId]);
      assert.equal(rows.length, 0, 'the bytes go with the row');
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });

  test('a node that does not share keeps the bytes on its disk only (410 MEDIA_GONE elsewhere, as before)', async () => {
    const other = await mkdtemp(path.join(os.tmpdir(), 'mgw-media-other-'));
    try {
      const here = makeStore();
      const there = createMediaStore({ pool: db.pool, dataDir: other, clock: here.clock, freeDiskBytes: async () => 1e12, shared: true });
      const rec = await here.store.put(instA, { data: bytes(KiB), mimetype: 'image/png', origin: 'upload' });
      await expectApiError(there.read(instA, rec.mediaId), 410, 'MEDIA_GONE');
      const { rows } = await db.pool.query('SELECT 1 FROM media_blobs');
      assert.equal(rows.length, 0);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { TestDb } from '../helpers/db.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestDb, NEEDS_SERVER } from '../helpers/db.js';
import { Writable } from 'node:stream';
import { migrate, loadMigrations, MigrationFailed, newerMigrations } from '../../src/store/migrate.js';
import { startGateway } from '../../src/gateway.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createPool, isStoreError } from '../../src/store/pool.js';
import { isConnectionError } from '../../src/store/health.js';
import { startFailure } from '../../src/run-main.js';

const dbs: TestDb[] = [];
after(async () => {
  for (const d of dbs) await d.close();
});

async function schemaOf(db: TestDb): Promise<string> {
  const { rows } = await db.pool.query<{ t: string }>(
    `SELECT table_name || '.' || column_name || ':' || data_type || ':' || is_nullable AS t
       FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1`,
  );
  const idx = await db.pool.query<{ t: string }>(`SELECT indexname || ':' || indexdef AS t FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1`);
  return [...rows.map((r) => r.t), ...idx.rows.map((r) => r.t)].join('\n');
}

test('migrating twice applies nothing the second time and leaves the same schema', async () => {
  const db = await createTestDb('migr_twice');
  dbs.push(db);
  const first = await schemaOf(db);
  assert.deepEqual(await migrate(db.pool), []);
  assert.equal(await schemaOf(db), first);
  const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations');
  assert.equal(rows[0]?.n, (await loadMigrations()).length);
});

test('a database a newer version migrated: the older start says so, names what it does not know, and runs', async () => {
  const db = await createTestDb('migr_newer');
  dbs.push(db);
  assert.deepEqual(await newerMigrations(db.pool), [], 'this version\'s own database');
  await db.pool.query(`INSERT INTO schema_migrations (version, name) VALUES (9998, '9998_from_a_newer_version'), (9999, '9999_and_another')`);
  assert.deepEqual(await newerMigrations(db.pool), ['9998_from_a_newer_version', '9999_and_another']);

  const lines: string[] = [];
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-migr-newer-'));
  const gw = await startGateway({
    config: loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN: 'a'.repeat(40), DEMO_INSTANCE: 'false' }),
    database: db.config,
    log: createLogger({ level: 'info', stream: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }) }),
  });
  try {
    const warned = lines.map((l) => JSON.parse(l) as { level: number; msg: string; migrations?: string[] }).filter((l) => l.msg.includes('newer version'));
    assert.equal(warned.length, 1, lines.join(''));
    assert.equal(warned[0]?.level, 40, 'a warning');
    assert.deepEqual(warned[0]?.migrations, ['9998_from_a_newer_version', '9999_and_another']);
    assert.equal((await fetch(`${gw.url}/health`)).status, 200, 'and it runs');
  } finally {
    await gw.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('two processes migrating at once: each migration applied exactly once, same schema as a serial run', {
  // PGlite serves every connection from one backend, so session advisory locks cannot exclude each other there;
  // several nodes always share a real server.
  skip: !process.env.TEST_DATABASE_URL && 'needs a PostgreSQL server (TEST_DATABASE_URL): the embedded one has a single backend',
}, async () => {
  const serial = await createTestDb('migr_serial');
  dbs.push(serial);
  const fresh = await createTestDb('migr_conc', { migrate: false });
  dbs.push(fresh);
  // two independent pools stand for two gateway nodes starting together
  const a = createPool(fresh.config);
  const b = createPool(fresh.config);
  try {
    const [ra, rb] = await Promise.all([migrate(a), migrate(b)]);
    const all = (await loadMigrations()).map((m) => m.name).sort();
    assert.deepEqual([...ra, ...rb].sort(), all, 'every migration applied once in total');
  } finally {
    await a.end();
    await b.end();
  }
  assert.equal(await schemaOf(fresh), await schemaOf(serial));
});

/** A folder of migrations written for one test (removed by the caller). */
async function migrationsDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-migr-'));
  for (const [name, sql] of Object.entries(files)) await writeFile(path.join(dir, name), sql);
  return dir;
}

const CONFIG = { DATABASE_URL: 'postgres://gw:s3cret@db.example:5432/gw', PORT: 3000, HOST: '127.0.0.1' };

test('a migration the server refuses fails naming it, with the SQLSTATE and the store mark kept: the start names DATABASE_URL', async () => {
  const db = await createTestDb('migr_refused', { migrate: false });
  dbs.push(db);
  const dir = await migrationsDir({ '0001_fine.sql': 'CREATE TABLE fine (id int)', '0002_refused.sql': 'ALTER TABLE no_such_table ADD COLUMN x int' });
  try {
    const err = await migrate(db.pool, dir).then(() => null, (e: unknown) => e);
    assert.ok(err instanceof MigrationFailed, String(err));
    assert.match(err.message, /^migration 0002_refused failed: relation "no_such_table" does not exist/);
    assert.equal(err.code, '42P01');
    assert.equal(err.severity, 'ERROR');
    assert.ok(isStoreError(err), 'still an error the store raised');
    assert.equal(isConnectionError(err), false, 'the server answered: not an unreachable store');
    assert.equal(startFailure(err, CONFIG), `cannot use the PostgreSQL server of DATABASE_URL: ${err.message}`);
    const { rows } = await db.pool.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY version');
    assert.deepEqual(rows.map((r) => r.name), ['0001_fine'], 'the failed one left nothing recorded');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a connection lost in the middle of a migration is PostgreSQL unreachable, not a bare failure', NEEDS_SERVER, async () => {
  const db = await createTestDb('migr_lost', { migrate: false });
  dbs.push(db);
  const marker = `migr_lost_${process.pid}`;
  const dir = await migrationsDir({ '0001_slow.sql': `SELECT pg_sleep(60) AS ${marker}` });
  const pool = createPool(db.config);
  try {
    const running = migrate(pool, dir).then(() => null, (e: unknown) => e);
    // the migration's backend, once its statement runs, ended by the server (what a restarted server does)
    let ended = 0;
    for (const until = Date.now() + 10_000; ended === 0 && Date.now() < until; ) {
      const { rows } = await db.pool.query<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()`,
        [`%AS ${marker}%`],
      );
      ended = rows[0]?.n ?? 0;
      if (ended === 0) await new Promise((r) => setTimeout(r, 5));
    }
    assert.equal(ended, 1, 'the migration ran');
    const err = await running;
    assert.ok(err instanceof MigrationFailed, String(err));
    assert.match(err.message, /^migration 0001_slow failed: /);
    assert.ok(isConnectionError(err), `a lost connection: ${err.message} (${err.code ?? 'no code'})`);
    assert.match(startFailure(err, CONFIG), /^cannot use the PostgreSQL server of DATABASE_URL: migration 0001_slow failed/);
  } finally {
    await pool.end().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
});

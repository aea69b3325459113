import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { migrate, loadMigrations } from '../../src/store/migrate.js';
import { createPool } from '../../src/store/pool.js';

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

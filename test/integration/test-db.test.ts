/**
 * The tests' own databases (test/helpers/db.ts) on a PostgreSQL server, as `npm test` runs them: a run's template
 * is migrated once, a file's migrated database is a copy of it holding every migration and nothing of another
 * file, `migrate: false` still gives an empty one, and the end of the run drops every database of its tag (a file
 * killed before its close() leaves its own behind), and none of another run.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createTemplateDb, createTestDb, dropRunDatabases } from '../helpers/db.js';
import { loadMigrations } from '../../src/store/migrate.js';

const BASE = process.env.TEST_DATABASE_URL;
const SKIP = !BASE && 'needs a PostgreSQL server (TEST_DATABASE_URL): the template is a server\'s';

/** This file plays a run of its own: its tag, not the tag of the `npm test` running it. */
const RUN = { MGW_TEST_RUN: process.env.MGW_TEST_RUN, MGW_TEST_TEMPLATE_DB: process.env.MGW_TEST_TEMPLATE_DB };
const TAG = randomBytes(4).toString('hex');
after(async () => {
  for (const [k, v] of Object.entries(RUN)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  if (BASE) await dropRunDatabases(BASE, TAG);
});

async function databases(): Promise<string[]> {
  const c = new pg.Client({ connectionString: BASE });
  await c.connect();
  try {
    const { rows } = await c.query<{ datname: string }>('SELECT datname FROM pg_database WHERE strpos(datname, $1) > 0 ORDER BY datname', [`_${TAG}_`]);
    return rows.map((r) => r.datname);
  } finally {
    await c.end();
  }
}

test('a run\'s template is copied for each migrated database; the end of the run drops what is left of it', { skip: SKIP }, async () => {
  const base = BASE ?? '';
  process.env.MGW_TEST_RUN = TAG;
  delete process.env.MGW_TEST_TEMPLATE_DB;
  const template = await createTemplateDb(base);
  assert.match(template, new RegExp(`^mgw_template_${TAG}_[0-9a-f]{8}$`));
  process.env.MGW_TEST_TEMPLATE_DB = template;

  const migrations = (await loadMigrations()).map((m) => m.version);
  const a = await createTestDb('copy a');
  const b = await createTestDb('copy b');
  const empty = await createTestDb('copy empty', { migrate: false });
  assert.ok(a.url?.includes(`_${TAG}_`));
  // every migration recorded in the copy, the schema there, and the copies apart
  const applied = (await a.pool.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map((r) => r.version);
  assert.deepEqual(applied, migrations);
  await a.pool.query('CREATE TABLE only_in_a (x int)');
  const seenInB = await b.pool.query("SELECT 1 FROM pg_tables WHERE tablename = 'only_in_a'");
  assert.equal(seenInB.rowCount, 0);
  const emptyTables = await empty.pool.query("SELECT 1 FROM pg_tables WHERE schemaname = 'public'");
  assert.equal(emptyTables.rowCount, 0, 'migrate: false is an empty database, not a copy');

  await a.close();
  assert.deepEqual((await databases()).filter((n) => n.startsWith('mgw_copy_a')), []);
  // b and the empty one are not closed, as a test file killed by its timeout leaves them
  await b.pool.end();
  await empty.pool.end();
  // another run's database is not this run's to drop
  const other = randomBytes(4).toString('hex');
  process.env.MGW_TEST_RUN = other;
  const theirs = await createTestDb('other run', { migrate: false });
  try {
    const dropped = await dropRunDatabases(base, TAG);
    assert.deepEqual(dropped.sort(), [template, new URL(b.url ?? '').pathname.slice(1), new URL(empty.url ?? '').pathname.slice(1)].sort());
    assert.deepEqual(await databases(), []);
    const left = await theirs.pool.query('SELECT 1 AS one');
    assert.equal(left.rows[0]?.one, 1);
  } finally {
    await theirs.close();
  }
});

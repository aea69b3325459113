/**
 * A database of its own for each test file: against TEST_DATABASE_URL (a real PostgreSQL server) a fresh
 * database is created from it and dropped when the file is done; without it, a fresh embedded PostgreSQL
 * (PGlite) in a temporary directory. Either way the schema is migrated and nothing depends on an earlier run.
 *
 * On a server, `npm test` (scripts/run-tests.mjs) migrates one template database for the run (createTemplateDb)
 * and names it in MGW_TEST_TEMPLATE_DB: a migrated database is then a copy of it (CREATE DATABASE … TEMPLATE, about
 * 35 ms) instead of its own 24 migrations (about 300 ms idle, over a second on a busy two-core machine; some 170
 * databases a run). A test that migrates by hand (`migrate: false`) still gets an empty one.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { checkout, createPool, unbounded, type Pool, type PoolConfig } from '../../src/store/pool.js';
import { migrate } from '../../src/store/migrate.js';
import { startEmbeddedPostgres } from '../../src/store/embedded.js';

export interface TestDb {
  pool: Pool;
  /** connection settings of this database, e.g. to start a gateway process against it */
  config: PoolConfig;
  /** connection URL (only for a real server; null for the embedded one) */
  url: string | null;
  close(): Promise<void>;
}

/**
 * A fixture's statement (a table grown by generate_series, its ANALYZE or VACUUM) run as long as it needs: the
 * store's deadlines (4 s on the server, 5 s in the client) are the gateway's, and such a fill of 200,000 rows
 * with their triggers outlasted them on a loaded machine (a CI run, a suite beside a benchmark). The session's
 * statement_timeout is lifted for that statement only and put back before the connection returns to the pool.
 */
export async function fixtureQuery(pool: Pool, text: string, values: unknown[] = []): Promise<void> {
  const { client, release } = await checkout(pool);
  try {
    await client.query('SET statement_timeout = 0');
    await client.query({ text, values, ...unbounded });
    await client.query('RESET statement_timeout');
    release();
  } catch (err) {
    release(err instanceof Error ? err : new Error(String(err)));
    throw err;
  }
}

/**
 * The option of a test that needs two backends at once (a lock held by one session while another works): the
 * embedded PostgreSQL (PGlite) serializes sessions, so without a server such a test would wait forever.
 */
export const NEEDS_SERVER = {
  skip: !process.env.TEST_DATABASE_URL && 'needs a PostgreSQL server (TEST_DATABASE_URL): the embedded one has a single backend, so no lock is ever waited for',
};

/** A statement on the server's maintenance database (TEST_DATABASE_URL's), on a connection of its own: its rows. */
async function onServer<R extends pg.QueryResultRow = pg.QueryResultRow>(base: string, text: string, values: unknown[] = []): Promise<R[]> {
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    return (await admin.query<R>(text, values)).rows;
  } finally {
    await admin.end();
  }
}

/** A database's URL on the server of `base`. */
function databaseUrl(base: string, name: string): string {
  const u = new URL(base);
  u.pathname = `/${name}`;
  return u.toString();
}

/** The test run's tag (MGW_TEST_RUN, from scripts/run-tests.mjs): in the name of every database it makes. */
function runTag(): string | null {
  const tag = process.env.MGW_TEST_RUN ?? '';
  return /^[0-9a-f]{8}$/.test(tag) ? tag : null;
}

/** The name of a new database: its label, the run's tag, then random (at most 52 characters of PostgreSQL's 63). */
function databaseName(label: string): string {
  const tag = runTag();
  return `mgw_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase().slice(0, 30)}_${tag ? `${tag}_` : ''}${randomBytes(4).toString('hex')}`;
}

/** The run's template (MGW_TEST_TEMPLATE_DB), if it names one that createTemplateDb could have made. */
function runTemplate(): string | null {
  const name = process.env.MGW_TEST_TEMPLATE_DB ?? '';
  return /^mgw_template_[0-9a-f]{8}_[0-9a-f]{8}$/.test(name) ? name : null;
}

/**
 * A migrated database on the server of TEST_DATABASE_URL for a test run to copy (see the top of this file); its
 * name, which dropRunDatabases removes at the end of the run. No connection to it stays open: a copy needs none.
 */
export async function createTemplateDb(base: string): Promise<string> {
  const name = databaseName('template');
  await onServer(base, `CREATE DATABASE ${name}`);
  try {
    const pool = createPool({ connectionString: databaseUrl(base, name), max: 1 });
    try {
      await migrate(pool);
    } finally {
      await pool.end();
    }
  } catch (err) {
    await dropDatabase(base, name).catch(() => undefined);
    throw err;
  }
  return name;
}

/** Drop database `name` of the server of `base`, whoever is still connected to it. */
async function dropDatabase(base: string, name: string): Promise<void> {
  await onServer(base, `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
}

/**
 * Drop every database the run tagged `tag` made that is still there: its template, and those of test files that
 * ended before their close() (killed by their timeout, by a signal to `npm test`). Returns their names.
 */
export async function dropRunDatabases(base: string, tag: string): Promise<string[]> {
  const rows = await onServer<{ datname: string }>(
    base,
    `SELECT datname FROM pg_database WHERE datname LIKE 'mgw\_%' AND strpos(datname, $1) > 0 ORDER BY datname`,
    [`_${tag}_`],
  );
  const names = rows.map((r) => r.datname);
  for (const name of names) await dropDatabase(base, name);
  return names;
}

export async function createTestDb(label = 'test', opts: { migrate?: boolean } = {}): Promise<TestDb> {
  const base = process.env.TEST_DATABASE_URL;
  if (base) {
    const name = databaseName(label);
    const template = opts.migrate !== false ? runTemplate() : null;
    await onServer(base, template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
    const url = databaseUrl(base, name);
    const config: PoolConfig = { connectionString: url };
    const pool = createPool(config);
    if (opts.migrate !== false && !template) await migrate(pool);
    return {
      pool,
      config,
      url,
      async close() {
        await pool.end();
        await dropDatabase(base, name);
      },
    };
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-testdb-'));
  const embedded = await startEmbeddedPostgres(dir);
  const config: PoolConfig = { ...embedded.connection, max: 1 };
  const pool = createPool(config);
  if (opts.migrate !== false) await migrate(pool);
  return {
    pool,
    config,
    url: null,
    async close() {
      await pool.end();
      await embedded.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

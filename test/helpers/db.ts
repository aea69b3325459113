/**
 * A database of its own for each test file: against TEST_DATABASE_URL (a real PostgreSQL server) a fresh
 * database is created from it and dropped when the file is done; without it, a fresh embedded PostgreSQL
 * (PGlite) in a temporary directory. Either way the schema is migrated and nothing depends on an earlier run.
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

export async function createTestDb(label = 'test', opts: { migrate?: boolean } = {}): Promise<TestDb> {
  const base = process.env.TEST_DATABASE_URL;
  if (base) {
    const name = `mgw_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase().slice(0, 30)}_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const u = new URL(base);
    u.pathname = `/${name}`;
    const url = u.toString();
    const config: PoolConfig = { connectionString: url };
    const pool = createPool(config);
    if (opts.migrate !== false) await migrate(pool);
    return {
      pool,
      config,
      url,
      async close() {
        await pool.end();
        const c = new pg.Client({ connectionString: base });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.end();
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

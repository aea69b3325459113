/**
 * Numbered plain-SQL migrations from sql/ (0001_name.sql, ...), applied at start.
 *
 * Why a session-level advisory lock around the whole run: two nodes starting at once must not both apply
 * 0002. The second waits on the lock, then finds 0002 recorded and skips it. Each file runs in its own
 * transaction together with its bookkeeping row, so a failed file leaves no half-applied schema.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { checkout, isStoreError, raisedByStore, unbounded, type Pool } from './pool.js';
import { PACKAGE_ROOT } from '../package-root.js';

/** sql/ beside package.json: the same folder whether this runs from src/ (tsx) or from dist/src/ (compiled). */
export const SQL_DIR = path.join(PACKAGE_ROOT, 'sql');
const LOCK_KEY = 727_001; // arbitrary, constant: "mgw migrations"

/**
 * A migration that failed, named, with what the store raised kept: its SQLSTATE (`code`), its `severity` and the
 * store's mark (src/store/pool.ts), so a start that fails on it still says what broke (a connection lost mid-way
 * is PostgreSQL unreachable; a permission refused is the server of DATABASE_URL) rather than a bare message.
 */
export class MigrationFailed extends Error {
  readonly code?: string;
  readonly severity?: string;

  constructor(migration: string, cause: unknown) {
    super(`migration ${migration} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'MigrationFailed';
    const { code, severity } = (cause ?? {}) as { code?: unknown; severity?: unknown };
    if (typeof code === 'string') this.code = code;
    if (typeof severity === 'string') this.severity = severity;
  }
}

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export async function loadMigrations(dir = SQL_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (f) => ({
      version: Number(f.slice(0, 4)),
      name: f.replace(/\.sql$/, ''),
      sql: await readFile(path.join(dir, f), 'utf8'),
    })),
  );
}

/** Apply every migration not yet recorded. Returns the names applied by this call. */
export async function migrate(pool: Pool, dir = SQL_DIR): Promise<string[]> {
  const migrations = await loadMigrations(dir);
  const { client, release } = await checkout(pool);
  const applied: string[] = [];
  try {
    // a migration, and the wait for another node's, may take as long as it takes: lift the store deadlines
    await client.query('SET statement_timeout = 0');
    await client.query({ text: 'SELECT pg_advisory_lock($1)', values: [LOCK_KEY], ...unbounded });
    try {
      await client.query(
        `CREATE TABLE IF NOT EXISTS schema_migrations (
           version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const done = new Set(
        (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
      );
      for (const m of migrations) {
        if (done.has(m.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query({ text: m.sql, ...unbounded });
          await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
          await client.query('COMMIT');
          applied.push(m.name);
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          const failed = new MigrationFailed(m.name, err);
          throw isStoreError(err) ? raisedByStore(failed) : failed;
        }
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => undefined);
    }
  } finally {
    await client.query('RESET statement_timeout').catch(() => undefined);
    release();
  }
  return applied;
}

/**
 * The migrations recorded in the database that this version of the gateway does not have (their names, in
 * order): a newer version migrated it, and this one was started on it (a rollback, a node of a cluster left
 * behind in an upgrade). Found from the outside: older versions ran on a newer schema without a word. A start
 * says so (src/gateway.ts) rather than refuse: a node left behind must keep running through a rolling upgrade.
 */
export async function newerMigrations(pool: Pool, dir = SQL_DIR): Promise<string[]> {
  const known = new Set((await loadMigrations(dir)).map((m) => m.version));
  const { rows } = await pool.query<{ version: number; name: string }>('SELECT version, name FROM schema_migrations ORDER BY version');
  return rows.filter((r) => !known.has(r.version)).map((r) => r.name);
}

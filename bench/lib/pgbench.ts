/**
 * The yardstick of the acceptance benchmarks: pgbench's single-row INSERT rate on the same PostgreSQL server,
 * same client count, into a table of a database of its own (dropped at the end).
 *
 * A run of rounds (bench/lib/rounds.ts) keeps that database for all its pgbench runs and empties the table
 * before each, instead of a database per run: DROP DATABASE forces a checkpoint, and after a checkpoint every page's first change writes the
 * whole page to the WAL again, so a drop between rounds slowed the gateway's next round, not pgbench's.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

export interface Pgbench {
  /** one pgbench run: its rate in transactions (one-row INSERTs) per second */
  tps(clients: number, durationMs: number): Promise<number>;
  /** drop the database */
  close(): Promise<void>;
}

export async function openPgbench(base: string): Promise<Pgbench> {
  const dbName = `mgw_bench_pgbench_${process.pid}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const u = new URL(base);
  u.pathname = `/${dbName}`;
  const c = new pg.Client({ connectionString: u.toString() });
  const close = async () => {
    await c.end().catch(() => undefined);
    await admin.query(`DROP DATABASE ${dbName} WITH (FORCE)`);
    await admin.end();
  };
  try {
    await c.connect();
    await c.query('CREATE TABLE bench_rows (id bigserial PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');
  } catch (err) {
    await close();
    throw err;
  }
  const script = path.join(mkdtempSync(path.join(os.tmpdir(), 'mgw-pgbench-')), 'insert.sql');
  writeFileSync(script, `INSERT INTO bench_rows (payload) VALUES ('{"phone":"4915112345678","message":"hello"}');\n`);
  return {
    async tps(clients, durationMs) {
      await c.query('TRUNCATE bench_rows');
      const out = execFileSync('pgbench', ['-n', '-c', String(clients), '-j', '2', '-T', String(Math.round(durationMs / 1000)), '-f', script, '-h', u.hostname, '-p', u.port || '5432', '-U', u.username || 'postgres', dbName], { encoding: 'utf8' });
      return Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? NaN);
    },
    close,
  };
}


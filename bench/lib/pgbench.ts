/**
 * The yardstick of the acceptance benchmarks: pgbench's single-row INSERT rate on the same PostgreSQL server,
 * same client count, into a fresh table of a fresh database (dropped afterwards).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

export async function pgbenchInsertTps(base: string, clients: number, durationMs: number): Promise<number> {
  const dbName = `mgw_bench_pgbench_${process.pid}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  try {
    const u = new URL(base);
    u.pathname = `/${dbName}`;
    const c = new pg.Client({ connectionString: u.toString() });
    await c.connect();
    await c.query('CREATE TABLE bench_rows (id bigserial PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');
    await c.end();
    const script = path.join(mkdtempSync(path.join(os.tmpdir(), 'mgw-pgbench-')), 'insert.sql');
    writeFileSync(script, `INSERT INTO bench_rows (payload) VALUES ('{"phone":"4915112345678","message":"hello"}');\n`);
    const out = execFileSync('pgbench', ['-n', '-c', String(clients), '-j', '2', '-T', String(Math.round(durationMs / 1000)), '-f', script, '-h', u.hostname, '-p', u.port || '5432', '-U', u.username || 'postgres', dbName], { encoding: 'utf8' });
    return Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? NaN);
  } finally {
    await admin.query(`DROP DATABASE ${dbName} WITH (FORCE)`);
    await admin.end();
  }
}

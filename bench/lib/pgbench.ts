/**
 * The yardstick of the acceptance benchmarks: pgbench's single-row INSERT rate on the same PostgreSQL server,
 * same client count, into a table of a database of its own (dropped at the end), and its transactions'
 * latency p99: what PostgreSQL alone answers the same clients in, the yardstick of a p99 goal.
 *
 * A run of rounds (bench/lib/rounds.ts) keeps that database for all its pgbench runs and empties the table
 * before each, instead of a database per run: DROP DATABASE forces a checkpoint, and after a checkpoint every page's first change writes the
 * whole page to the WAL again, so a drop between rounds slowed the gateway's next round, not pgbench's.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { writeFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { percentile } from './queue-fixture.js';

/** One pgbench run: its rate in transactions (one-row INSERTs) per second, and their latency p99 (ms). */
export interface PgbenchRun {
  tps: number;
  p99: number;
}

export interface Pgbench {
  /** one pgbench run of `clients` for `durationMs`, each transaction's latency logged (pgbench -l) */
  run(clients: number, durationMs: number): Promise<PgbenchRun>;
  /** drop the database */
  close(): Promise<void>;
}

const execFileAsync = promisify(execFile);

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
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mgw-pgbench-'));
  const script = path.join(dir, 'insert.sql');
  writeFileSync(script, `INSERT INTO bench_rows (payload) VALUES ('{"phone":"4915112345678","message":"hello"}');\n`);
  return {
    async run(clients, durationMs) {
      await c.query('TRUNCATE bench_rows');
      // -l: a line per transaction in log.<pid>[.<thread>], its third field the latency in µs; a fifth of them
      // (--sampling-rate), so that writing the log does not slow the yardstick it measures
      const logs = path.join(dir, 'log');
      // asynchronously: the gateway shares this process, and an event loop blocked for the whole run left its
      // timers seconds overdue (dispatch slots, leases, housekeeping), so that what they then did all at once
      // fell into the gateway's next round; an idle gateway beside pgbench is what a machine has anyway
      const { stdout: out } = await execFileAsync('pgbench', ['-n', '-c', String(clients), '-j', '2', '-T', String(Math.round(durationMs / 1000)), '-l', '--sampling-rate=0.2', `--log-prefix=${logs}`, '-f', script, '-h', u.hostname, '-p', u.port || '5432', '-U', u.username || 'postgres', dbName], { encoding: 'utf8', cwd: dir });
      const latencies: number[] = [];
      for (const f of readdirSync(dir).filter((name) => name.startsWith('log.'))) {
        const file = path.join(dir, f);
        for (const line of readFileSync(file, 'utf8').split('\n')) {
          const us = Number(line.split(' ')[2]);
          if (line !== '' && Number.isFinite(us)) latencies.push(us / 1000);
        }
        rmSync(file);
      }
      return { tps: Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? NaN), p99: percentile(latencies, 99) };
    },
    async close() {
      rmSync(dir, { recursive: true, force: true });
      await close();
    },
  };
}


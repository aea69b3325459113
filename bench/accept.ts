/**
 * v2 send-message acceptance against real PostgreSQL, as a ratio of pgbench's single-row insert TPS measured
 * in the same run on the same server (goal ≥ 0.6), with the acceptance latency p99 (goal ≤ 25 ms).
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/accept.ts
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startTestGateway } from '../test/helpers/gateway.js';
import { runLoad, fmt } from './lib/load.js';

const base = process.env.TEST_DATABASE_URL;
if (!base) {
  console.error('bench/accept.ts needs TEST_DATABASE_URL (a PostgreSQL server; pgbench runs against it)');
  process.exit(2);
}
const DURATION = Number(process.env.BENCH_MS ?? 8_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);

// ---- pgbench: one-row INSERTs into a fresh table of a fresh database, same client count
const dbName = `mgw_bench_pgbench_${process.pid}`;
const admin = new pg.Client({ connectionString: base });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);
const u = new URL(base);
u.pathname = `/${dbName}`;
const c2 = new pg.Client({ connectionString: u.toString() });
await c2.connect();
await c2.query('CREATE TABLE bench_rows (id bigserial PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');
await c2.end();
const dir = mkdtempSync(path.join(os.tmpdir(), 'mgw-pgbench-'));
const script = path.join(dir, 'insert.sql');
writeFileSync(script, `INSERT INTO bench_rows (payload) VALUES ('{"phone":"4915112345678","message":"hello"}');\n`);
const pgbenchOut = execFileSync('pgbench', ['-n', '-c', String(CONCURRENCY), '-j', '2', '-T', String(Math.round(DURATION / 1000)), '-f', script, '-h', u.hostname, '-p', u.port || '5432', '-U', u.username || 'postgres', dbName], { encoding: 'utf8' });
const tps = Number(/tps = ([\d.]+)/.exec(pgbenchOut)?.[1] ?? NaN);
await admin.query(`DROP DATABASE ${dbName} WITH (FORCE)`);
await admin.end();

// ---- the gateway: acceptance of v2 send-message (validation, idempotency check, plan, job + outbox in PostgreSQL)
const t = await startTestGateway({ label: 'bench_accept', env: { QUEUE_MAX_PENDING: '10000000' } });
const { apiKey } = await t.createInstance('bench', {
  settings: { minDelayMs: 60_000, maxDelayMs: 60_000, maxPerHour: null, maxPer24h: null, quietHours: null, defaultTtlSeconds: 2_592_000 },
});
const spec = {
  url: `${t.url}/api/v2/send-message`,
  method: 'POST',
  headers: { authorization: `Bearer ${apiKey}` },
  body: '{"phone":"4915112345678","message":"hello {{n}}"}',
  concurrency: CONCURRENCY,
};
await runLoad({ ...spec, durationMs: 1_000 }); // warm-up
const r = await runLoad({ ...spec, durationMs: DURATION });
const keyed = await runLoad({ ...spec, body: '{"phone":"4915112345678","message":"hello {{n}}","idempotencyKey":"bench-key-{{n}}-x"}', durationMs: DURATION });

console.log(`pgbench single-row INSERT:        ${fmt(tps, 0)} tps (${CONCURRENCY} clients)`);
console.log(`v2 send-message acceptance:       ${fmt(r.rps, 0)} req/s  p50 ${fmt(r.p50, 2)} ms  p99 ${fmt(r.p99, 2)} ms  errors ${r.errors}`);
console.log(`  … with idempotency keys:        ${fmt(keyed.rps, 0)} req/s  p50 ${fmt(keyed.p50, 2)} ms  p99 ${fmt(keyed.p99, 2)} ms  errors ${keyed.errors}`);
console.log(`ratio acceptance / pgbench:       ${fmt(r.rps / tps, 3)}  (goal ≥ 0.6; p99 goal ≤ 25 ms)`);
await t.stop();

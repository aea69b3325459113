/**
 * v2 send-message acceptance against real PostgreSQL, as a ratio of pgbench's single-row insert TPS measured
 * in the same run on the same server (goal ≥ 0.6), with the acceptance latency p99 (goal ≤ 25 ms).
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/accept.ts
 */
import { startTestGateway } from '../test/helpers/gateway.js';
import { runLoad, fmt } from './lib/load.js';
import { pgbenchInsertTps } from './lib/pgbench.js';

const base = process.env.TEST_DATABASE_URL;
if (!base) {
  console.error('bench/accept.ts needs TEST_DATABASE_URL (a PostgreSQL server; pgbench runs against it)');
  process.exit(2);
}
const DURATION = Number(process.env.BENCH_MS ?? 8_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);

// ---- pgbench: one-row INSERTs, same client count (bench/lib/pgbench.ts)
const tps = await pgbenchInsertTps(base, CONCURRENCY, DURATION);

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

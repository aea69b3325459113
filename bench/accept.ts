/**
 * v2 send-message acceptance against real PostgreSQL, as a ratio of pgbench's single-row insert TPS measured
 * in the same run on the same server (goal ≥ 0.6), with the acceptance latency p99 (goal ≤ 25 ms).
 *
 * It also measures the ceiling of any HTTP API on this machine: a bare Koa server that reads the same JSON body
 * and answers 202, with no auth, no validation and no database, under the same load generator. The gateway
 * cannot accept faster than that, so `ceiling / pgbench` says how much of the 0.6 goal HTTP alone leaves.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/accept.ts
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { startTestGateway } from '../test/helpers/gateway.js';
import { runLoad, fmt, errorsText } from './lib/load.js';
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

// ---- the ceiling: a bare Koa server reading and parsing the same body, answering 202
const bare = new Koa();
bare.use(async (ctx) => {
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { phone?: string };
  ctx.status = 202;
  ctx.body = { success: true, data: { accepted: typeof body.phone === 'string' } };
});
const bareServer = http.createServer(bare.callback());
await new Promise<void>((r) => bareServer.listen(0, '127.0.0.1', r));
const bareSpec = {
  url: `http://127.0.0.1:${(bareServer.address() as AddressInfo).port}/`,
  method: 'POST',
  body: '{"phone":"4915112345678","message":"hello {{n}}"}',
  concurrency: CONCURRENCY,
};
await runLoad({ ...bareSpec, durationMs: 1_000 }); // warm-up
const ceiling = await runLoad({ ...bareSpec, durationMs: DURATION });
bareServer.close();

// ---- the gateway: acceptance of v2 send-message (validation, idempotency check, plan, job + outbox in PostgreSQL)
const t = await startTestGateway({ label: 'bench_accept', env: { QUEUE_MAX_PENDING: '10000000' } });
// One message a minute, so nothing is sent meanwhile; a queue holds 30 days (43,200 slots) of them before the
// planner refuses with 422, so the keyed run gets an instance of its own.
const settings = { minDelayMs: 60_000, maxDelayMs: 60_000, maxPerHour: null, maxPer24h: null, quietHours: null, defaultTtlSeconds: 2_592_000 };
const { apiKey } = await t.createInstance('bench', { settings });
const { apiKey: keyedApiKey } = await t.createInstance('bench-keyed', { settings });
const spec = {
  url: `${t.url}/api/v2/send-message`,
  method: 'POST',
  headers: { authorization: `Bearer ${apiKey}` },
  body: '{"phone":"4915112345678","message":"hello {{n}}"}',
  concurrency: CONCURRENCY,
};
await runLoad({ ...spec, durationMs: 1_000 }); // warm-up
const r = await runLoad({ ...spec, durationMs: DURATION });
const keyed = await runLoad({ ...spec, headers: { authorization: `Bearer ${keyedApiKey}` }, body: '{"phone":"4915112345678","message":"hello {{n}}","idempotencyKey":"bench-key-{{n}}-x"}', durationMs: DURATION });

console.log(`pgbench single-row INSERT:        ${fmt(tps, 0)} tps (${CONCURRENCY} clients)`);
console.log(`v2 send-message acceptance:       ${fmt(r.rps, 0)} req/s  p50 ${fmt(r.p50, 2)} ms  p99 ${fmt(r.p99, 2)} ms  ${errorsText(r)}`);
console.log(`  … with idempotency keys:        ${fmt(keyed.rps, 0)} req/s  p50 ${fmt(keyed.p50, 2)} ms  p99 ${fmt(keyed.p99, 2)} ms  ${errorsText(keyed)}`);
console.log(`bare Koa POST (the HTTP ceiling):  ${fmt(ceiling.rps, 0)} req/s  p50 ${fmt(ceiling.p50, 2)} ms  p99 ${fmt(ceiling.p99, 2)} ms  ${errorsText(ceiling)}`);
console.log(`ratio acceptance / pgbench:       ${fmt(r.rps / tps, 3)}  (goal ≥ 0.6; p99 goal ≤ 25 ms)`);
console.log(`ratio ceiling / pgbench:          ${fmt(ceiling.rps / tps, 3)}  (what a bare HTTP server reaches on this machine)`);
console.log(`ratio acceptance / ceiling:       ${fmt(r.rps / ceiling.rps, 3)}`);
await t.stop();

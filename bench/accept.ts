/**
 * v2 send-message acceptance against real PostgreSQL, as a ratio of pgbench's single-row insert TPS measured
 * in the same run on the same server (goal ≥ 0.6), with the acceptance latency p99 (goal ≤ 25 ms). The
 * acceptance runs in rounds with pgbench before and after each (bench/lib/rounds.ts): the figures are the
 * medians over the rounds. The load generator writes HTTP on plain sockets (bench/lib/raw-load-worker.ts): it
 * shares the machine with the gateway and PostgreSQL, as pgbench's lean client does; node's http client spends
 * three to four times its CPU per request, and the two are run in turn too, so its effect is printed.
 *
 * It also measures the ceiling of any HTTP API on this machine: a bare Koa server that reads the same JSON body
 * and answers 202, with no auth, no validation and no database, under the same load generator. The gateway
 * cannot accept faster than that, so `ceiling / pgbench` says how much of the 0.6 goal HTTP alone leaves. A bare
 * node:http server doing the same without Koa is measured right after it: the difference is what Koa itself takes.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/accept.ts
 *   BENCH_MS=4000 (each run) BENCH_ROUNDS=4 BENCH_CONCURRENCY=32
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { startTestGateway } from '../test/helpers/gateway.js';
import { runLoad, fmt, errorsText, unlessErrors } from './lib/load.js';
import { median } from './lib/queue-fixture.js';
import { measured, medianRun, printLatencyFloor, printGroupCommit, printMachineCeiling, printPgbench, printRounds, roundsAgainstPgbench } from './lib/rounds.js';

const base = process.env.TEST_DATABASE_URL;
if (!base) {
  console.error('bench/accept.ts needs TEST_DATABASE_URL (a PostgreSQL server; pgbench runs against it)');
  process.exit(2);
}
const DURATION = Number(process.env.BENCH_MS ?? 4_000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 4));
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 4_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);

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
  client: 'raw' as const,
};
await runLoad({ ...bareSpec, durationMs: 1_000 }); // warm-up
const { value: ceiling, busyUs: ceilingBusyUs } = await measured(() => runLoad({ ...bareSpec, durationMs: DURATION }));
bareServer.close();

// ---- the same without Koa: node's http server alone reading and parsing the body (what Koa itself adds)
const nodeServer = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { phone?: string };
    const text = JSON.stringify({ success: true, data: { accepted: typeof body.phone === 'string' } });
    res.writeHead(202, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  });
});
await new Promise<void>((r) => nodeServer.listen(0, '127.0.0.1', r));
const nodeSpec = { ...bareSpec, url: `http://127.0.0.1:${(nodeServer.address() as AddressInfo).port}/` };
await runLoad({ ...nodeSpec, durationMs: 1_000 }); // warm-up
const { value: nodeCeiling, busyUs: nodeBusyUs } = await measured(() => runLoad({ ...nodeSpec, durationMs: DURATION }));
nodeServer.close();

// ---- the gateway: acceptance of v2 send-message (validation, idempotency check, plan, job + outbox in PostgreSQL)
const t = await startTestGateway({ label: 'bench_accept', env: { QUEUE_MAX_PENDING: '10000000' } });
// One message every 5 s, so next to nothing is sent meanwhile. A queue holds 30 days of them (518,400 slots)
// before the planner refuses with 422 TTL_UNREACHABLE; the warm-up, each round and the keyed run get an
// instance of their own. At one a minute (43,200 slots) a machine accepting 10,800 req/s filled a round's
// instance in 4 s, and the round measured that capacity instead of the gateway: a round with errors is not a
// rate, so the ratio is not printed then (below).
const settings = { minDelayMs: 5_000, maxDelayMs: 5_000, maxPerHour: null, maxPer24h: null, quietHours: null, defaultTtlSeconds: 2_592_000 };
const apiKeyOf = async (name: string) => (await t.createInstance(name, { settings })).apiKey;
const specOf = (apiKey: string) => ({
  url: `${t.url}/api/v2/send-message`,
  method: 'POST',
  headers: { authorization: `Bearer ${apiKey}` },
  body: '{"phone":"4915112345678","message":"hello {{n}}"}',
  concurrency: CONCURRENCY,
  client: 'raw' as const,
});
const roundKeys: string[] = [];
for (let i = 0; i < ROUNDS; i++) roundKeys.push(await apiKeyOf(`bench-${i}`));
const keyedApiKey = await apiKeyOf('bench-keyed');
// warm-up (JIT, heap): measured, the first rounds after a 1 s warm-up ran 30 % below the later ones
await runLoad({ ...specOf(await apiKeyOf('bench-warm')), durationMs: WARMUP_MS });
// rounds of acceptance with pgbench (one-row INSERTs, same client count) before and after each
const rounds = await roundsAgainstPgbench(base, CONCURRENCY, ROUNDS, (i) => ({ ...specOf(roundKeys[i] as string), durationMs: DURATION }), () => t.gw.groupCommitStats());
const r = medianRun(rounds.runs);
const keyed = await runLoad({ ...specOf(keyedApiKey), body: '{"phone":"4915112345678","message":"hello {{n}}","idempotencyKey":"bench-key-{{n}}-x"}', durationMs: DURATION });
// the two load generators in turn, in the same minute, each on an instance of its own
const viaHttp = await runLoad({ ...specOf(await apiKeyOf('bench-http')), durationMs: DURATION, client: 'node-http' });
const viaRaw = await runLoad({ ...specOf(await apiKeyOf('bench-raw')), durationMs: DURATION, client: 'raw' });

printPgbench(rounds, CONCURRENCY);
console.log(`v2 send-message acceptance:       ${fmt(r.rps, 0)} req/s  p50 ${fmt(r.p50, 2)} ms  p99 ${fmt(r.p99, 2)} ms  ${errorsText(r)}  (medians of ${ROUNDS} rounds of ${DURATION / 1000} s)`);
printRounds(rounds, viaHttp, viaRaw);
printLatencyFloor(rounds, CONCURRENCY, 25);
printMachineCeiling(rounds, 0.6);
printGroupCommit(rounds);
console.log(`  … with idempotency keys:        ${fmt(keyed.rps, 0)} req/s  p50 ${fmt(keyed.p50, 2)} ms  p99 ${fmt(keyed.p99, 2)} ms  ${errorsText(keyed)}`);
// its machine CPU per request (the server and the load generator; no database): what HTTP alone takes of the
// CPU an acceptance may spend per row if it is to reach a ratio to pgbench (printMachineCeiling)
const ceilingCpu = ceilingBusyUs !== null ? `, machine CPU ${fmt(ceilingBusyUs / Math.max(1, ceiling.requests), 0)} µs per request` : '';
console.log(`bare Koa POST (the HTTP ceiling):  ${fmt(ceiling.rps, 0)} req/s  p50 ${fmt(ceiling.p50, 2)} ms  p99 ${fmt(ceiling.p99, 2)} ms  ${errorsText(ceiling)}${ceilingCpu}`);
const nodeCpu = nodeBusyUs !== null ? `, machine CPU ${fmt(nodeBusyUs / Math.max(1, nodeCeiling.requests), 0)} µs per request` : '';
console.log(`bare node:http POST (no Koa):     ${fmt(nodeCeiling.rps, 0)} req/s  p50 ${fmt(nodeCeiling.p50, 2)} ms  p99 ${fmt(nodeCeiling.p99, 2)} ms  ${errorsText(nodeCeiling)}${nodeCpu}`);
console.log(`ratio acceptance / pgbench:       ${unlessErrors([r], () => `${fmt(median(rounds.ratios), 3)}  (median of the rounds' ratios, each to the pgbench runs around it; goal ≥ 0.6; p99 goal ≤ 25 ms)`)}`);
console.log(`ratio ceiling / pgbench:          ${fmt(ceiling.rps / median(rounds.tps), 3)}  (what a bare HTTP server reaches on this machine)`);
console.log(`ratio acceptance / ceiling:       ${fmt(r.rps / ceiling.rps, 3)}`);
await t.stop();

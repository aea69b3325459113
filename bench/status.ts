/**
 * GET /api/status and GET /api/v2/queue with a valid key (auth, instance view, counts kept by the queue) against
 * a bare Koa hello-world on the same machine, with the same load generator; prints the ratios (goal ≥ 0.5 each).
 *
 * The machine is shared, so the run is split into rounds: the hello-world, then each route, then the
 * hello-world again opening the next round. A round's ratio is the route's rate over the mean of the two
 * hello-world rates around it; the figure printed is the median over the rounds (each round's ratio is listed too).
 * Both servers run in this process and the load generator in another, so the CPU time this process used per
 * answered request is printed as well: on a busy machine it varies much less than the rates do.
 *
 *   npx tsx bench/status.ts            (TEST_DATABASE_URL or embedded PostgreSQL)
 *   BENCH_MS=3000 BENCH_ROUNDS=4 BENCH_CONCURRENCY=32
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { startTestGateway } from '../test/helpers/gateway.js';
import { runLoad, fmt, unlessErrors, type LoadResult, type LoadSpec } from './lib/load.js';

const DURATION = Number(process.env.BENCH_MS ?? 3_000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 4));
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);

const hello = new Koa();
hello.use((ctx) => {
  ctx.body = { success: true, data: { hello: 'world' } };
});
const helloServer = http.createServer(hello.callback());
await new Promise<void>((r) => helloServer.listen(0, '127.0.0.1', r));
const helloSpec: LoadSpec = { url: `http://127.0.0.1:${(helloServer.address() as AddressInfo).port}/`, concurrency: CONCURRENCY, durationMs: DURATION };

const t = await startTestGateway({ label: 'bench_status' });
const { apiKey } = await t.createInstance('bench');
const routes: Array<{ label: string; name: string; spec: LoadSpec }> = [
  { label: 'GET /api/status', name: 'status', spec: { url: `${t.url}/api/status`, headers: { authorization: `Bearer ${apiKey}` }, concurrency: CONCURRENCY, durationMs: DURATION } },
  { label: 'GET /api/v2/queue', name: 'queue', spec: { url: `${t.url}/api/v2/queue`, headers: { authorization: `Bearer ${apiKey}` }, concurrency: CONCURRENCY, durationMs: DURATION } },
];

/** A load run with the CPU time this process (the server under load) spent per answered request. */
type Measured = LoadResult & { cpuUs: number };
async function measure(spec: LoadSpec): Promise<Measured> {
  const before = process.cpuUsage();
  const r = await runLoad(spec);
  const used = process.cpuUsage(before);
  return { ...r, cpuUs: (used.user + used.system) / Math.max(1, r.requests) };
}

// warm-up
await runLoad({ ...helloSpec, durationMs: 1_000 });
for (const r of routes) await runLoad({ ...r.spec, durationMs: 1_000 });

const hellos: Measured[] = [await measure(helloSpec)];
const results = new Map<string, Measured[]>(routes.map((r) => [r.name, []]));
for (let i = 0; i < ROUNDS; i++) {
  for (const r of routes) results.get(r.name)?.push(await measure(r.spec));
  hellos.push(await measure(helloSpec));
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const summary = (label: string, rs: Measured[]) =>
  console.log(
    `${label.padEnd(24)}${fmt(median(rs.map((r) => r.rps)), 0)} req/s (median of ${rs.length}; ${fmt(Math.min(...rs.map((r) => r.rps)), 0)}–${fmt(Math.max(...rs.map((r) => r.rps)), 0)})` +
      `  p50 ${fmt(median(rs.map((r) => r.p50)), 2)} ms  p99 ${fmt(median(rs.map((r) => r.p99)), 2)} ms  errors ${rs.reduce((n, r) => n + r.errors, 0)}` +
      `  cpu ${fmt(median(rs.map((r) => r.cpuUs)), 0)} µs/req`,
  );
summary('bare Koa hello-world:', hellos);
for (const r of routes) summary(`${r.label}:`, results.get(r.name) ?? []);
const helloCpu = median(hellos.map((h) => h.cpuUs));
for (const r of routes) {
  const rs = results.get(r.name) ?? [];
  const ratios = rs.map((x, i) => x.rps / (((hellos[i] as Measured).rps + (hellos[i + 1] as Measured).rps) / 2));
  const figure = () => `${fmt(median(ratios), 3)}  (rounds: ${ratios.map((x) => fmt(x, 3)).join(', ')}; cpu per request hello / ${r.name}: ${fmt(helloCpu / median(rs.map((x) => x.cpuUs)), 3)})`;
  console.log(`ratio ${r.name} / hello:  ${unlessErrors([...rs, ...hellos], figure)}`);
}

await t.stop();
helloServer.close();

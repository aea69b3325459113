/**
 * GET /api/status with a valid key (auth, instance actor view, queue counts from PostgreSQL) against a bare
 * Koa hello-world on the same machine, measured in one run with the same load generator; prints the ratio.
 *
 *   npx tsx bench/status.ts            (TEST_DATABASE_URL or embedded PostgreSQL)
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { startTestGateway } from '../test/helpers/gateway.js';
import { runLoad, fmt } from './lib/load.js';

const DURATION = Number(process.env.BENCH_MS ?? 5_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);

const hello = new Koa();
hello.use((ctx) => {
  ctx.body = { success: true, data: { hello: 'world' } };
});
const helloServer = http.createServer(hello.callback());
await new Promise<void>((r) => helloServer.listen(0, '127.0.0.1', r));
const helloUrl = `http://127.0.0.1:${(helloServer.address() as AddressInfo).port}/`;

const t = await startTestGateway({ label: 'bench_status' });
const { apiKey } = await t.createInstance('bench');

await runLoad({ url: helloUrl, concurrency: CONCURRENCY, durationMs: 1_000 }); // warm-up
await runLoad({ url: `${t.url}/api/status`, headers: { authorization: `Bearer ${apiKey}` }, concurrency: CONCURRENCY, durationMs: 1_000 });
const base = await runLoad({ url: helloUrl, concurrency: CONCURRENCY, durationMs: DURATION });
const status = await runLoad({ url: `${t.url}/api/status`, headers: { authorization: `Bearer ${apiKey}` }, concurrency: CONCURRENCY, durationMs: DURATION });

console.log(`bare Koa hello-world:  ${fmt(base.rps, 0)} req/s  p50 ${fmt(base.p50, 2)} ms  p99 ${fmt(base.p99, 2)} ms  errors ${base.errors}`);
console.log(`GET /api/status:       ${fmt(status.rps, 0)} req/s  p50 ${fmt(status.p50, 2)} ms  p99 ${fmt(status.p99, 2)} ms  errors ${status.errors}`);
console.log(`ratio status / hello:  ${fmt(status.rps / base.rps, 3)}`);

await t.stop();
helloServer.close();

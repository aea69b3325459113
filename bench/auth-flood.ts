/**
 * A flood of unknown API keys beside an honest client: what it costs the honest client's acceptance. Every
 * well-formed key the gateway has not verified is looked up in PostgreSQL (src/http/auth.ts KeyResolver), and a
 * caller that sends a fresh random key with each request (a key-guessing scan, or a misconfigured client
 * retrying) makes every one of its requests a lookup. The benchmark runs, in turn, in rounds: the honest
 * client alone (v2 send-message on one instance, its key verified once), and the honest client with the flood
 * beside it (`BENCH_FLOOD_CONCURRENCY` clients, each request a key never seen, all answered 401
 * INVALID_API_KEY). It prints the honest client's rate and p99 in both, their ratio (the median of the
 * rounds'), and the flood's own rate.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/auth-flood.ts
 *   BENCH_MS=3000 BENCH_ROUNDS=4 BENCH_CONCURRENCY=16 BENCH_FLOOD_CONCURRENCY=64
 */
import { randomBytes } from 'node:crypto';
import { startTestGateway } from '../test/helpers/gateway.js';
import { runLoad, fmt, errorsText, unlessErrors, type LoadResult, type LoadSpec } from './lib/load.js';
import { median } from './lib/queue-fixture.js';

const DURATION = Number(process.env.BENCH_MS ?? 3_000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 4));
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const FLOOD = Number(process.env.BENCH_FLOOD_CONCURRENCY ?? 64);

const t = await startTestGateway({ label: 'bench_auth_flood', env: { QUEUE_MAX_PENDING: '10000000' } });
// one message every 5 s: next to nothing is sent meanwhile (bench/accept.ts)
const settings = { minDelayMs: 5_000, maxDelayMs: 5_000, maxPerHour: null, maxPer24h: null, quietHours: null, defaultTtlSeconds: 2_592_000 };
const honestSpec = async (name: string): Promise<LoadSpec> => ({
  url: `${t.url}/api/v2/send-message`,
  method: 'POST',
  headers: { authorization: `Bearer ${(await t.createInstance(name, { settings })).apiKey}` },
  body: '{"phone":"4915112345678","message":"hello {{n}}"}',
  concurrency: CONCURRENCY,
  durationMs: DURATION,
  client: 'raw',
});
/** Keys of the gateway's form that no instance has: each request of the flood takes the next one. */
const unknownKeys = (n: number) => Array.from({ length: n }, () => `wapi_flood_${randomBytes(18).toString('base64url')}`);
const floodSpec = (): LoadSpec => ({
  url: `${t.url}/api/v2/send-message`,
  method: 'POST',
  keys: unknownKeys(60_000),
  body: '{"phone":"4915112345678","message":"hello {{n}}"}',
  concurrency: FLOOD,
  durationMs: DURATION,
  client: 'raw',
  onlyStatus: [401],
});

await runLoad({ ...(await honestSpec('warm')), durationMs: 2_000 });
await runLoad({ ...floodSpec(), durationMs: 1_000 });
const alone: LoadResult[] = [];
const beside: LoadResult[] = [];
const floods: LoadResult[] = [];
for (let i = 0; i < ROUNDS; i++) {
  alone.push(await runLoad(await honestSpec(`alone-${i}`)));
  const honest = await honestSpec(`beside-${i}`);
  const [h, f] = await Promise.all([runLoad(honest), runLoad(floodSpec())]);
  beside.push(h);
  floods.push(f);
}
const med = (rs: LoadResult[], f: (r: LoadResult) => number) => median(rs.map(f));
console.log(`honest client alone:          ${fmt(med(alone, (r) => r.rps), 0)} req/s  p99 ${fmt(med(alone, (r) => r.p99), 2)} ms  (rounds: ${alone.map((r) => fmt(r.rps, 0)).join(', ')} req/s; ${alone.map(errorsText).join('; ')})`);
console.log(`honest client beside a flood: ${fmt(med(beside, (r) => r.rps), 0)} req/s  p99 ${fmt(med(beside, (r) => r.p99), 2)} ms  (rounds: ${beside.map((r) => fmt(r.rps, 0)).join(', ')} req/s; ${beside.map(errorsText).join('; ')})`);
console.log(`the flood (${FLOOD} clients, a new unknown key each request, all 401): ${fmt(med(floods, (r) => r.rps), 0)} req/s  p99 ${fmt(med(floods, (r) => r.p99), 2)} ms  (${floods.map(errorsText).join('; ')})`);
const ratios = alone.map((a, i) => (beside[i]?.rps ?? 0) / a.rps);
console.log(`ratio beside / alone:         ${unlessErrors([...alone, ...beside, ...floods], () => `${fmt(median(ratios), 3)}  (median of the rounds: ${ratios.map((r) => fmt(r, 3)).join(', ')})`)}`);
await t.stop();

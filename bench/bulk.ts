/**
 * POST /api/send-bulk (v1) of 1,000 and of 5,000 entries (issue 18, goal 1: 5,000 answered in ≤ 250 ms):
 * the time to the whole answer, median of several runs, each on a fresh instance with an empty queue (5,000
 * entries fill it to QUEUE_MAX_PENDING exactly). Every entry must come back `queued`. Also the gateway
 * process's CPU time per call (user + system; the gateway runs in this process), which a busy machine
 * stretches far less than the wall time.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/bulk.ts
 *   BENCH_RUNS=5
 */
import { startTestGateway } from '../test/helpers/gateway.js';
import { fmt } from './lib/load.js';
import { bulkBody, holdSettings, median, timed } from './lib/queue-fixture.js';

if (!process.env.TEST_DATABASE_URL) {
  console.error('bench/bulk.ts needs TEST_DATABASE_URL (a PostgreSQL server)');
  process.exit(2);
}
const RUNS = Number(process.env.BENCH_RUNS ?? 5);

const t = await startTestGateway({ label: 'bench_bulk' });
const settings = holdSettings();
let n = 0;

async function once(entries: number): Promise<{ ms: number; cpu: number }> {
  const { apiKey } = await t.createInstance(`bulk${n++}`, { settings });
  const body = bulkBody(entries, `bulk${n}`);
  const c0 = process.cpuUsage();
  const r = await timed(`${t.url}/api/send-bulk`, apiKey, 'POST', body);
  const c = process.cpuUsage(c0);
  const messages = (r.body.data?.messages ?? []) as { status: string; error?: string }[];
  const queued = messages.filter((m) => m.status === 'queued').length;
  if (r.status !== 200 || queued !== entries) {
    throw new Error(`send-bulk of ${entries}: ${r.status}, ${queued} queued; first refusal: ${messages.find((m) => m.status !== 'queued')?.error ?? r.body.code}`);
  }
  return { ms: r.ms, cpu: (c.user + c.system) / 1000 };
}

await once(1_000); // warm-up
const figures: Record<number, { ms: number; cpu: number }[]> = { 1_000: [], 5_000: [] };
for (let i = 0; i < RUNS; i++) {
  for (const size of [1_000, 5_000]) figures[size]!.push(await once(size));
}
for (const size of [1_000, 5_000]) {
  const xs = figures[size]!.map((f) => f.ms);
  const cpu = figures[size]!.map((f) => f.cpu);
  console.log(`send-bulk of ${String(size).padStart(5)} entries: median ${fmt(median(xs), 0)} ms  (${xs.map((x) => fmt(x, 0)).join(', ')} ms; ${RUNS} runs${size === 5_000 ? '; goal ≤ 250 ms' : ''})  gateway cpu median ${fmt(median(cpu), 0)} ms`);
}
await t.stop();

/**
 * v2 send-message acceptance spread over many instances (one request per instance in turn, as an operator's
 * traffic looks), as a ratio of pgbench's single-row INSERT TPS measured in the same run on the same server
 * (goal ≥ 0.6, p99 ≤ 25 ms). The node-wide group commit (src/queue/group-commit.ts) commits the batches of
 * many instances together; the figures of its groups are printed too. The acceptance runs in rounds with
 * pgbench before and after each (bench/lib/rounds.ts): the figures are the medians over the rounds. The load
 * generator writes HTTP on plain sockets, as bench/accept.ts explains; node's http client is run in turn too.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/accept-spread.ts
 *   BENCH_INSTANCES=500 BENCH_CONCURRENCY=50 BENCH_MS=4000 (each run) BENCH_ROUNDS=4
 */
import { startTestGateway } from '../test/helpers/gateway.js';
import { runLoad, fmt, errorsText, unlessErrors } from './lib/load.js';
import { median } from './lib/queue-fixture.js';
import { medianRun, printLatencyFloor, printGroupCommit, printMachineCeiling, printPgbench, printRounds, roundsAgainstPgbench } from './lib/rounds.js';
import { quietWithin, untilStoreQuiet } from './lib/quiet.js';

const base = process.env.TEST_DATABASE_URL;
if (!base) {
  console.error('bench/accept-spread.ts needs TEST_DATABASE_URL (a PostgreSQL server; pgbench runs against it)');
  process.exit(2);
}
const DURATION = Number(process.env.BENCH_MS ?? 4_000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 4));
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const INSTANCES = Number(process.env.BENCH_INSTANCES ?? 500);

// ---- the gateway with INSTANCES instances; each request goes to the next instance
const t = await startTestGateway({ label: 'bench_spread', env: { QUEUE_MAX_PENDING: '10000000' } });
// One message every ten minutes per instance: after the warm-up's, none is due while the rounds run (with one a
// minute, the second messages of all 500 came due together in the third round and stalled it: p99 200-250 ms)
const settings = { minDelayMs: 600_000, maxDelayMs: 600_000, maxPerHour: null, maxPer24h: null, quietHours: null, defaultTtlSeconds: 2_592_000 };
const keys: string[] = [];
for (let i = 0; i < INSTANCES; i++) keys.push((await t.createInstance(`spread${i}`, { settings })).apiKey);
const spec = {
  url: `${t.url}/api/v2/send-message`,
  method: 'POST',
  keys,
  body: '{"phone":"4915112345678","message":"hello {{n}}","idempotencyKey":"spread-key-{{n}}"}',
  concurrency: CONCURRENCY,
  client: 'raw' as const,
};
// Warm-up until every instance has had a message. An instance's first message is due at once (one every ten minutes:
// the next ones are not), so a warm-up that missed some would measure their first dispatches (a claim, the
// call, an outcome written, each instance's key looked up once) inside the run. Then until those dispatches
// and their receipts (the sandbox's recipients read 5 s after delivery) are written: the run measures
// acceptance alone (bench/dispatch.ts measures dispatch under acceptance load).
const warm = performance.now();
for (let round = 0; ; round++) {
  await runLoad({ ...spec, durationMs: 1_000 });
  const { rows } = await t.gw.pool.query<{ n: number }>('SELECT count(DISTINCT instance_id)::int AS n FROM jobs');
  if ((rows[0]?.n ?? 0) >= INSTANCES) break;
  if (round >= 20) throw new Error(`the warm-up reached ${rows[0]?.n} of ${INSTANCES} instances`);
}
const quiet = quietWithin(await untilStoreQuiet(t.gw.pool, 6_000, 60_000, 'go on'));
const warmS = (performance.now() - warm) / 1000;
// rounds with pgbench (one-row INSERTs, same client count) before and after each; each round its own keys
const rounds = await roundsAgainstPgbench(base, CONCURRENCY, ROUNDS, (i) => ({ ...spec, body: spec.body.replace('spread-', `spread-m${i}-`), durationMs: DURATION }), () => t.gw.groupCommitStats());
const r = medianRun(rounds.runs);
// A client's retries of what was accepted (a retry storm after a timeout): the busiest round's requests again,
// same instances, same keys and bodies, so every one is an idempotent replay (200; a fresh 202 counts as an
// error here). Each group's statement then finds their keys remembered and answers them with their jobs: the
// units decide again from that answer and write nothing more (src/queue/group-commit.ts), the path the fresh
// rounds never take. Half a round of the busiest one, so that it does not run past the requests that round
// made (replays of the first round, when it was the slowest, ran past them: 34 fresh 202s in a run on E).
const busiest = rounds.runs.reduce((best, run, i) => (run.requests > (rounds.runs[best]?.requests ?? 0) ? i : best), 0);
const replays = await runLoad({ ...spec, body: spec.body.replace('spread-', `spread-m${busiest}-`), durationMs: DURATION / 2, onlyStatus: [200] });
// the two load generators in turn, in the same minute (bench/accept.ts says why)
const viaHttp = await runLoad({ ...spec, body: spec.body.replace('spread-', 'spread-h-'), durationMs: DURATION, client: 'node-http' });
const viaRaw = await runLoad({ ...spec, body: spec.body.replace('spread-', 'spread-r-'), durationMs: DURATION, client: 'raw' });
// the same right after without idempotency keys (the rounds send one with every request; bench/accept.ts does not)
const unkeyed = await runLoad({ ...spec, body: '{"phone":"4915112345678","message":"hello {{n}}"}', durationMs: DURATION, client: 'raw' });

printPgbench(rounds, CONCURRENCY);
console.log(`acceptance over ${INSTANCES} instances:   ${fmt(r.rps, 0)} req/s  p50 ${fmt(r.p50, 2)} ms  p99 ${fmt(r.p99, 2)} ms  ${errorsText(r)}  (medians of ${ROUNDS} rounds of ${DURATION / 1000} s)`);
printRounds(rounds, viaHttp, viaRaw);
printLatencyFloor(rounds, CONCURRENCY, 25);
printMachineCeiling(rounds, 0.6);
printGroupCommit(rounds);
console.log(`  … without idempotency keys:     ${fmt(unkeyed.rps, 0)} req/s  p50 ${fmt(unkeyed.p50, 2)} ms  p99 ${fmt(unkeyed.p99, 2)} ms  ${errorsText(unkeyed)}  (right after the plain-sockets run with keys: ${fmt(unkeyed.rps / viaRaw.rps, 2)} of its rate)`);
console.log(`idempotent replays:               ${fmt(replays.rps, 0)} req/s  p50 ${fmt(replays.p50, 2)} ms  p99 ${fmt(replays.p99, 2)} ms  ${errorsText(replays)}  (round ${busiest + 1}'s requests again, ${DURATION / 2000} s; ${fmt(replays.rps / r.rps, 2)} of the fresh rounds' rate)`);
console.log(`warm-up (every instance's first message, sent and read) ${fmt(warmS, 1)} s before the measured run${quiet ? '' : '; the store was never quiet for 6 s within a minute, so the rounds may hold the tail of the warm-up (dispatches, receipts)'}`);
console.log(`ratio spread acceptance / pgbench: ${unlessErrors(rounds.runs, () => `${fmt(median(rounds.ratios), 3)}  (median of the rounds' ratios, each to the pgbench runs around it; goal ≥ 0.6; p99 goal ≤ 25 ms)`)}`);
await t.stop();

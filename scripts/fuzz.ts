/**
 * `npm run fuzz`: the seeded fuzzer (test/helpers/fuzz.ts) over every route of a real gateway, FUZZ_REQUESTS
 * requests (default 100,000), FUZZ_CONCURRENCY at once (default 8); prints the summary and exits 1 on any
 * violation. FUZZ_SEED reproduces a run, FUZZ_SEED with FUZZ_ONLY=<index> one request of it.
 * Database: TEST_DATABASE_URL (a PostgreSQL server; a fresh database is created and dropped), else an
 * embedded one.
 */
import { formatSummary, runFuzz, seedFromEnv, startFuzzRig } from '../test/helpers/fuzz.js';

function intEnv(name: string, dflt: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer`);
  return n;
}

const seed = seedFromEnv();
const requests = intEnv('FUZZ_REQUESTS', 100_000);
const concurrency = Math.max(1, intEnv('FUZZ_CONCURRENCY', 8));
const only = process.env.FUZZ_ONLY ? intEnv('FUZZ_ONLY', 0) : undefined;
console.log(`fuzz: seed ${seed}, ${only !== undefined ? `request #${only} only` : `${requests} requests`}, concurrency ${concurrency}`);

const rig = await startFuzzRig('fuzz_script');
// Ctrl-C or SIGTERM ends the run early: the summary is printed and the database dropped
let stopRequested = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => (stopRequested = true));
let failed = true;
try {
  const summary = await runFuzz(rig, {
    seed,
    requests,
    concurrency,
    ...(only !== undefined ? { only } : {}),
    progressEvery: 10_000,
    stopRequested: () => stopRequested,
    onProgress: (n) => console.log(`  ${n} requests`),
  });
  const health = await fetch(`${rig.t.url}/health`);
  const alive = health.status === 200 && ((await health.json()) as { success?: boolean }).success === true;
  console.log(formatSummary(summary, 40));
  console.log(`health at the end: ${alive ? '200, alive' : `NOT ALIVE (${health.status})`}`);
  failed = !alive || summary.violations.length > 0 || summary.errorLogs.length > 0;
} finally {
  await rig.stop();
}
process.exit(failed ? 1 : 0);

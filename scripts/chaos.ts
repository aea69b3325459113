/**
 * `npm run chaos`: the long run of the crash checker (test/helpers/crash-checker.ts). The gateway is SIGKILLed
 * CHAOS_KILLS times (default 50) under v1 + v2 load and restarted; then the sandbox ledger is compared with the
 * jobs table and the counts are printed. Exits non-zero on any violation.
 *
 * Needs a PostgreSQL server: TEST_DATABASE_URL (or DATABASE_URL), e.g. postgres://postgres@127.0.0.1:5432/postgres;
 * a fresh database is created in it and dropped afterwards. CHAOS_SEED repeats a run's random choices.
 */
import { formatSummary, runCrashCheck } from '../test/helpers/crash-checker.js';

function intFromEnv(name: string, dflt: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return dflt;
  if (!/^\d+$/.test(raw) || Number(raw) < min) {
    process.stderr.write(`${name} must be an integer of at least ${min}\n`);
    process.exit(2);
  }
  return Number(raw);
}

const kills = intFromEnv('CHAOS_KILLS', 50, 1);
const seed = intFromEnv('CHAOS_SEED', Math.floor(Math.random() * 1_000_000), 0);
const v2Clients = intFromEnv('CHAOS_V2_CLIENTS', 4, 0);
const v1Clients = intFromEnv('CHAOS_V1_CLIENTS', 2, 0);
// (assigning undefined to process.env would store the string 'undefined', and the check below would pass)
if (!process.env.TEST_DATABASE_URL && process.env.DATABASE_URL) process.env.TEST_DATABASE_URL = process.env.DATABASE_URL;
if (!process.env.TEST_DATABASE_URL) {
  process.stderr.write('npm run chaos needs a PostgreSQL server: set TEST_DATABASE_URL (or DATABASE_URL)\n');
  process.exit(2);
}

process.stdout.write(`crash checker: ${kills} kills, seed ${seed}, ${v2Clients} v2 + ${v1Clients} v1 clients\n`);
const result = await runCrashCheck({ kills, seed, v2Clients, v1Clients, progress: (line) => process.stdout.write(`  ${line}\n`) });
process.stdout.write(`${formatSummary(result)}\n`);
process.exit(result.failed ? 1 : 0);

/**
 * What the request log costs an acceptance, as `npm start` runs the gateway: a process of its own (src/main.ts,
 * npm start's V8 flags) whose stdout is a pipe read by another process (here this one, as a log collector would),
 * with LOG_LEVEL=info (the default: one JSON line per request) against LOG_LEVEL=warn (no request lines). The
 * other benchmarks run the gateway in their own process with a silent logger, so they do not see this cost.
 *
 * Two gateways, each on a database of its own, take v2 send-message acceptance on one instance in turn (the order
 * alternates from round to round), so that the machine's minute falls on both. Printed: each one's rate and the
 * CPU of its process per acceptance (from /proc), and what the request line costs (the difference).
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/request-log.ts
 *   BENCH_MS=4000 (each run) BENCH_ROUNDS=4 BENCH_CONCURRENCY=32
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startSandboxServer } from '../src/http/sandbox-server.js';
import { createTestDb, type TestDb } from '../test/helpers/db.js';
import { callGateway, startSandboxedGateway, type RunningProcess } from '../test/helpers/gateway-process.js';
import { runLoad, fmt, errorsText, unlessErrors, type LoadResult } from './lib/load.js';
import { median } from './lib/queue-fixture.js';
import { startFlags } from './lib/start-flags.js';

if (!process.env.TEST_DATABASE_URL) {
  console.error('bench/request-log.ts needs TEST_DATABASE_URL (each gateway gets a database of its own there)');
  process.exit(2);
}
const DURATION = Number(process.env.BENCH_MS ?? 4_000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 4));
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const ADMIN = 'bench-request-log-admin-0123456789';
/** clock ticks a second of /proc/<pid>/stat's utime and stime (USER_HZ: 100 on Linux) */
const TICKS = 100;

interface Side {
  name: string;
  db: TestDb;
  dataDir: string;
  gw: RunningProcess;
  apiKey: string;
  runs: { load: LoadResult; cpuUs: number }[];
}

/** The process's CPU time so far (user and system), in µs. */
async function cpuOf(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // the fields after the command's closing parenthesis: state is field 3, utime 14 and stime 15
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / TICKS;
}

const sandbox = await startSandboxServer({ port: 0, host: '127.0.0.1', statePath: null });
const sides: Side[] = [];
try {
  for (const [name, level] of [['the request log (LOG_LEVEL=info, the default)', 'info'], ['no request lines (LOG_LEVEL=warn)', 'warn']] as const) {
    const db = await createTestDb(`bench_reqlog_${level}`);
    const dataDir = await mkdtemp(path.join(os.tmpdir(), `mgw-bench-reqlog-${level}-`));
    const gw = await startSandboxedGateway(
      { dataDir, databaseUrl: db.url ?? '', sandboxUrl: sandbox.url, adminToken: ADMIN, env: { LOG_LEVEL: level, NODE_OPTIONS: startFlags().join(' '), QUEUE_MAX_PENDING: '10000000' } },
      { tailChars: 4_000, startTimeoutMs: 60_000 },
    );
    // one message every 5 s (518,400 slots in 30 days), as bench/accept.ts: nothing is refused, next to nothing sent
    const settings = { minDelayMs: 5_000, maxDelayMs: 5_000, maxPerHour: null, maxPer24h: null, quietHours: null, defaultTtlSeconds: 2_592_000 };
    const created = await callGateway(gw.url, ADMIN, 'POST', '/admin/v1/instances', { name: `reqlog-${level}`, driver: 'sandbox', settings });
    const data = created.body.data as { instance: { id: string }; apiKey: string };
    sandbox.network.link(data.instance.id, { phoneNumber: level === 'info' ? '4915550400001' : '4915550400002' });
    sides.push({ name, db, dataDir, gw, apiKey: data.apiKey, runs: [] });
  }
  for (const side of sides) {
    for (let i = 0; i < 200; i++) {
      const s = await callGateway(side.gw.url, side.apiKey, 'GET', '/api/status');
      if ((s.body.data as { connected?: boolean } | undefined)?.connected === true) break;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const spec = (side: Side, durationMs: number) => ({
    url: `${side.gw.url}/api/v2/send-message`,
    method: 'POST',
    headers: { authorization: `Bearer ${side.apiKey}` },
    body: '{"phone":"4915112345678","message":"hello {{n}}"}',
    concurrency: CONCURRENCY,
    durationMs,
    client: 'raw' as const,
  });
  for (const side of sides) await runLoad(spec(side, 4_000)); // warm-up (JIT, heap)
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const pid = side.gw.proc.pid as number;
      const before = await cpuOf(pid);
      const load = await runLoad(spec(side, DURATION));
      side.runs.push({ load, cpuUs: ((await cpuOf(pid)) - before) / Math.max(1, load.requests) });
    }
  }
  for (const side of sides) {
    const rps = median(side.runs.map((r) => r.load.rps));
    const cpu = median(side.runs.map((r) => r.cpuUs));
    console.log(`${side.name}:`);
    console.log(`  ${fmt(rps, 0)} req/s (rounds ${side.runs.map((r) => fmt(r.load.rps, 0)).join(', ')}), p99 ${fmt(median(side.runs.map((r) => r.load.p99)), 2)} ms`);
    for (const r of side.runs) if (r.load.errors > 0) console.log(`  a round with ${errorsText(r.load)}`);
    console.log(`  the gateway process's CPU per acceptance: ${fmt(cpu, 0)} µs (rounds ${side.runs.map((r) => fmt(r.cpuUs, 0)).join(', ')})`);
  }
  const [logged, quiet] = sides as [Side, Side];
  const pairs = logged.runs.map((r, i) => r.cpuUs - (quiet.runs[i]?.cpuUs ?? NaN));
  const rates = logged.runs.map((r, i) => r.load.rps / (quiet.runs[i]?.load.rps ?? NaN));
  // a round with refusals measured something else than acceptance: no figure from it (as bench/accept.ts)
  const loads = sides.flatMap((side) => side.runs.map((r) => r.load));
  console.log(`the request line's CPU per acceptance: ${unlessErrors(loads, () => `${fmt(median(pairs), 0)} µs (rounds ${pairs.map((x) => fmt(x, 0)).join(', ')})`)}`);
  console.log(`rate with the request log / without:  ${unlessErrors(loads, () => `${fmt(median(rates), 3)} (rounds ${rates.map((x) => fmt(x, 3)).join(', ')})`)}`);
} finally {
  for (const side of sides) {
    await side.gw.kill('SIGTERM');
    await side.db.close();
    await rm(side.dataDir, { recursive: true, force: true });
  }
  await sandbox.close();
}

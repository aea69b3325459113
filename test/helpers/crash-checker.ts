/**
 * The crash checker (issue 13): the sandbox network outside the gateway (it keeps the ledger of everything it
 * received), the gateway as a child process against a fresh PostgreSQL database, load from concurrent v2 and
 * v1 clients, and the gateway SIGKILLed at random moments and restarted, again and again. After the last
 * restart has settled, the ledger is compared with the jobs table (test/helpers/crash-verify.ts).
 * Shared by the short run in `npm test` (test/e2e/crash-checker.test.ts) and `npm run chaos` (scripts/chaos.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startSandboxServer } from '../../src/http/sandbox-server.js';
import { createTestDb } from './db.js';
import type { Pool } from '../../src/store/pool.js';
import { freePort, startSandboxedGateway, type RunningProcess, type SandboxedGateway } from './gateway-process.js';
import { startLoad } from './crash-load.js';
import { verify, violated, type JobRow, type Verdict } from './crash-verify.js';

export interface CrashCheckOptions {
  kills: number;
  seed: number;
  v2Clients?: number;
  v1Clients?: number;
  /** the gateway lives a random time in [minUpMs, maxUpMs] after it listens, then is killed */
  minUpMs?: number;
  maxUpMs?: number;
  /** after the last restart, how long the jobs may make no progress towards terminal states */
  settleMs?: number;
  /** pause between two requests of one client (the load's rate) */
  thinkMs?: number;
  progress?: (line: string) => void;
}

export interface CrashCheckResult {
  kills: number;
  seed: number;
  wallMs: number;
  /** the gateway ended on its own, or could not start */
  crashes: string[];
  /** the last gateway stopped with exit code 0 on SIGTERM */
  cleanStop: boolean;
  verdict: Verdict;
  failed: boolean;
}

const ADMIN = 'chaos-admin-token-0123456789abcdef';
const INSTANCE_PHONE = '4915100000777';
/** small pauses, no ceilings, no quiet hours: the queue drains as fast as the network answers */
const SETTINGS = { minDelayMs: 0, maxDelayMs: 20, quietHours: null, maxPerHour: null, maxPer24h: null };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A small seeded generator (mulberry32), so a run can be repeated with CHAOS_SEED. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

async function json(url: string, token: string, method: string, body?: unknown): Promise<{ status: number; data: Record<string, unknown> }> {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(30_000),
  });
  const parsed = (await res.json()) as { data?: Record<string, unknown> };
  return { status: res.status, data: parsed.data ?? {} };
}

async function until(cond: () => Promise<boolean>, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await cond().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

export async function runCrashCheck(opts: CrashCheckOptions): Promise<CrashCheckResult> {
  const started = Date.now();
  const random = seeded(opts.seed);
  const say = opts.progress ?? (() => undefined);
  const minUp = opts.minUpMs ?? 300;
  const maxUp = opts.maxUpMs ?? 2_500;
  const crashes: string[] = [];
  /** when each gateway process was spawned (unix ms), to tell which one accepted or dispatched a job */
  const starts: number[] = [];

  const sandbox = await startSandboxServer({ port: 0, host: '127.0.0.1', statePath: null });
  const db = await createTestDb('chaos');
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-chaos-'));
  let gw: RunningProcess | null = null;
  try {
    if (!db.url) throw new Error('the crash checker needs a PostgreSQL server (TEST_DATABASE_URL): two processes share the database');
    // one fixed port, so that the clients find every restarted gateway where the killed one was
    const env: SandboxedGateway = { port: await freePort(), dataDir, databaseUrl: db.url, sandboxUrl: sandbox.url, adminToken: ADMIN };
    const start = async (): Promise<RunningProcess> => {
      for (let tries = 1; ; tries++) {
        try {
          starts.push(Date.now());
          // its output is kept as a bounded tail, to explain a crash
          return await startSandboxedGateway(env, { tailChars: 8_000 });
        } catch (err) {
          crashes.push(`start failed: ${err instanceof Error ? err.message.slice(-2_000) : String(err)}`);
          if (tries >= 3) throw err;
        }
      }
    };
    gw = await start();
    const created = await json(`${gw.url}/admin/v1/instances`, ADMIN, 'POST', { name: 'chaos', driver: 'sandbox', settings: SETTINGS });
    if (created.status !== 201) throw new Error(`creating the instance answered ${created.status}`);
    const instanceId = String((created.data.instance as { id: string }).id);
    const apiKey = String(created.data.apiKey);
    sandbox.network.link(instanceId, { phoneNumber: INSTANCE_PHONE });
    const connected = async () => (await json(`${gw?.url ?? ''}/api/status`, apiKey, 'GET')).data.connected === true;
    await until(connected, 'the instance to connect', 30_000);

    const load = startLoad({
      url: gw.url, apiKey, runId: opts.seed.toString(36), random, thinkMs: opts.thinkMs ?? 200,
      v2Clients: opts.v2Clients ?? 4, v1Clients: opts.v1Clients ?? 2,
    });
    for (let k = 1; k <= opts.kills; k++) {
      await sleep(minUp + random() * (maxUp - minUp));
      if (gw.crashed()) crashes.push(`the gateway exited on its own before kill ${k}:\n${gw.output().slice(-2_000)}`);
      await gw.kill('SIGKILL');
      const killedAt = Date.now();
      await sleep(random() * 150);
      gw = await start();
      say(`kill ${k}/${opts.kills} after ${load.records.length} requests; listening again after ${Date.now() - killedAt} ms`);
    }

    // the last gateway stays: let the clients get their answers and the jobs reach terminal states
    say(`restarted ${opts.kills} times in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    await until(connected, 'the instance to connect after the last restart', 30_000);
    say(`connected after the last restart at ${((Date.now() - started) / 1000).toFixed(1)} s`);
    await load.stop(60_000);
    say(`clients answered at ${((Date.now() - started) / 1000).toFixed(1)} s`);
    await settle(db.pool, say, opts.settleMs ?? 15_000);
    say(`jobs settled at ${((Date.now() - started) / 1000).toFixed(1)} s`);
    if (gw.crashed()) crashes.push(`the last gateway exited on its own:\n${gw.output().slice(-2_000)}`);
    const stopped = await gw.kill('SIGTERM');
    gw = null;

    const jobs = await readJobs(db.pool);
    const ledger = sandbox.network.ledger(instanceId).map((e) => ({ seq: e.seq, messageId: e.messageId, body: e.body }));
    const incarnation = (t: number) => starts.filter((s) => s <= t).length;
    const verdict = verify(load.records, load.attempts(), jobs, ledger, incarnation);
    const cleanStop = stopped.code === 0;
    return {
      kills: opts.kills, seed: opts.seed, wallMs: Date.now() - started, crashes, cleanStop, verdict,
      failed: violated(verdict) || crashes.length > 0,
    };
  } finally {
    if (gw) await gw.kill('SIGKILL');
    await sandbox.close();
    await db.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/**
 * Wait until no job is queued, scheduled or sending. Gives up when the count has not gone down for
 * `stallMs`, or after `capMs`: the verdict then shows what still waits.
 */
async function settle(pool: Pool, say: (line: string) => void, stallMs: number, capMs = 15 * 60_000): Promise<void> {
  const started = Date.now();
  let best = Number.POSITIVE_INFINITY;
  let bestAt = Date.now();
  let shown = 0;
  for (;;) {
    const { rows } = await pool.query<{ state: string; n: number }>(
      `SELECT state, count(*)::int AS n FROM jobs WHERE state IN ('queued','scheduled','sending') GROUP BY state`,
    );
    const pending = rows.reduce((sum, r) => sum + r.n, 0);
    if (pending === 0) return;
    if (pending < best) {
      best = pending;
      bestAt = Date.now();
    }
    if (Date.now() - bestAt > stallMs || Date.now() - started > capMs) {
      say(`gave up waiting: ${rows.map((r) => `${r.n} ${r.state}`).join(', ')} jobs`);
      return;
    }
    if (Date.now() - shown > 5_000) {
      shown = Date.now();
      say(`waiting for ${rows.map((r) => `${r.n} ${r.state}`).join(', ')} jobs`);
    }
    await sleep(100);
  }
}

interface JobDbRow {
  id: string;
  state: string;
  message_id: string | null;
  body: string | null;
  origin_route: string;
  result_code: string | null;
  error_message: string | null;
  queued_at: Date;
  dispatched_at: Date | null;
}

async function readJobs(pool: Pool): Promise<JobRow[]> {
  const { rows } = await pool.query<JobDbRow>(
    `SELECT id, state, message_id, payload->>'body' AS body, origin_route, result_code, error_message, queued_at, dispatched_at
       FROM jobs ORDER BY seq`,
  );
  return rows.map((r) => ({
    id: r.id, state: r.state, messageId: r.message_id, body: r.body, originRoute: r.origin_route, resultCode: r.result_code,
    errorMessage: r.error_message, queuedAt: r.queued_at.getTime(), dispatchedAt: r.dispatched_at ? r.dispatched_at.getTime() : null,
  }));
}

/** The printed summary: the counts the issue asks for, then every violation. */
export function formatSummary(r: CrashCheckResult): string {
  const v = r.verdict;
  const rows: [string, string | number][] = [
    ['seed', r.seed],
    ['wall time (s)', (r.wallMs / 1000).toFixed(1)],
    ['kills', r.kills],
    ['requests', v.requests],
    ['HTTP attempts', v.attempts],
    ['accepted', v.accepted],
    ['jobs', v.jobs],
    ['sent', v.byState.sent ?? 0],
    ['unknown', v.byState.unknown ?? 0],
    ['failed', v.byState.failed ?? 0],
    ['cancelled', v.byState.cancelled ?? 0],
    ['expired', v.byState.expired ?? 0],
    ['still waiting', (v.byState.queued ?? 0) + (v.byState.scheduled ?? 0)],
    ['ledger entries', v.ledgerEntries],
    ['duplicates', v.duplicates],
    ['v1 resends of in-flight (inherent)', v.v1InFlightResends],
    ['v1 sent after its request died', v.orphanSends],
    ['lost', v.lost],
    ['left sending', v.leftSending],
    ['sent, not in ledger', v.sentNotInLedger],
    ['ledger, no sent/unknown job', v.strayLedgerEntries],
    ['crashes', r.crashes.length],
    ['clean SIGTERM stop', r.cleanStop ? 'yes' : 'no'],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = rows.map(([k, val]) => `  ${k.padEnd(width)}  ${String(val)}`);
  for (const [reason, n] of Object.entries(v.failedReasons)) lines.push(`  failed ${n}× ${reason}`);
  if (v.violations.length > 0) lines.push('violations:', ...v.violations.map((x) => `  - ${x}`));
  if (r.crashes.length > 0) lines.push('crashes:', ...r.crashes.map((x) => `  - ${x}`));
  lines.push(r.failed ? 'VERDICT: VIOLATIONS FOUND' : 'VERDICT: ok');
  return lines.join('\n');
}

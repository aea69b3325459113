/**
 * A whole gateway for a test file: its own database (test/helpers/db.ts), its own data directory, the
 * in-process sandbox network, a real HTTP server on a loopback port, and (optionally) a simulated clock.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger, createLogger } from '../../src/log.js';
import { simulatedClock, type Clock } from '../../src/clock.js';
import type { SimulatedClock } from 'xstate';
import { createTestDb, type TestDb } from './db.js';
import { claimPool, type Pool } from '../../src/store/pool.js';
import type { Instance } from '../../src/store/instances.js';
import type { InstanceSettings } from '../../src/queue/settings.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

export interface TestGateway {
  gw: Gateway;
  url: string;
  db: TestDb;
  /** its DATA_DIR (a temporary directory, removed at stop) */
  dataDir: string;
  clock: Clock;
  /** present when started with `simulated: true` */
  sim: (SimulatedClock & Clock) | null;
  adminToken: string;
  api(apiKey: string, method: string, route: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse>;
  admin(method: string, route: string, body?: unknown): Promise<ApiResponse>;
  /** POST /api/v2/send-message with this key: the job id of its 202 (any other answer throws, with its text) */
  accept(apiKey: string, body: Record<string, unknown>): Promise<string>;
  /** create an instance through the operator API; linked on the sandbox unless `link: false` */
  createInstance(name: string, opts?: { settings?: Partial<InstanceSettings>; link?: boolean; phone?: string }): Promise<{ instance: Instance; apiKey: string; phone: string }>;
  /** advance simulated time in steps, letting I/O settle between steps */
  advance(ms: number, stepMs?: number): Promise<void>;
  /**
   * advance simulated time step by step until `cond` holds (at most `maxMs` of simulated time). Between steps
   * real I/O gets `realWaitMs` (default 3 ms): where the awaited thing is real I/O (a reconnect, a delivery),
   * small steps with a longer real wait keep simulated time from running past it (a delivery timeout on the
   * simulated clock would fire before the receiver answered). When the simulated budget is spent, real I/O
   * still gets a grace of real time (REAL_GRACE_MS) before the wait fails: a loaded machine is slow, not wrong.
   * `storeIdle`: before each step, wait (in real time, at most STORE_IDLE_MS) until the gateway has no query
   * out, so that a timer armed once a write returns (the dispatch lane's next slot) is armed before the step,
   * and what runs after a query reads the instant the query was made at.
   */
  advanceUntil<T>(cond: () => T | Promise<T>, what: string, opts?: { stepMs?: number; maxMs?: number; realWaitMs?: number; storeIdle?: boolean }): Promise<NonNullable<T>>;
  stop(): Promise<void>;
}

export interface ApiResponse {
  status: number;
  text: string;
  body: { success: boolean; data?: Record<string, unknown> & { [k: string]: unknown }; error?: string; code?: string };
  headers: Headers;
}

let phoneSeq = 0;

function withPort(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

/** Real time a wait on simulated time still gives real I/O after its simulated budget is spent. */
const REAL_GRACE_MS = 10_000;

/** When the simulated clock's earliest pending timer is due (XState's SimulatedClock keeps them in `timeouts`). */
function nextTimerAt(sim: SimulatedClock): number | null {
  const timeouts = (sim as unknown as { timeouts: Map<number, { start: number; timeout: number }> }).timeouts;
  let next: number | null = null;
  for (const t of timeouts.values()) {
    const due = t.start + t.timeout;
    if (next === null || due < next) next = due;
  }
  return next;
}

/** Real time `advanceUntil`'s `storeIdle` waits at most for the gateway's queries to return. */
const STORE_IDLE_MS = 2_000;

/**
 * Until no query of the gateway is out (its pool and its claim connections: none checked out, none waited
 * for) and what ran after the last one had its turns; at most STORE_IDLE_MS of real time.
 */
async function storeIdle(pool: Pool): Promise<void> {
  const busy = (p: Pool) => p.totalCount !== p.idleCount || p.waitingCount > 0;
  const deadline = Date.now() + STORE_IDLE_MS;
  while (Date.now() < deadline) {
    if (!busy(pool) && !busy(claimPool(pool))) {
      await settle();
      if (!busy(pool) && !busy(claimPool(pool))) return;
    }
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Let pending promises and I/O callbacks run (a few turns of the event loop, no timers). */
export async function settle(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((r) => setImmediate(r));
}

/** Poll `cond` on real I/O turns until it holds; fails after `limit` turns (no sleeping). */
export async function waitFor<T>(cond: () => T | Promise<T>, what: string, limit = 2_000): Promise<NonNullable<T>> {
  for (let i = 0; i < limit; i++) {
    const v = await cond();
    if (v) return v as NonNullable<T>;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The phone unlinks the instance (the sandbox's unlink); answers once its key's status says it is offline. */
export async function unlinkUntilOffline(t: TestGateway, instanceId: string, apiKey: string): Promise<void> {
  const unlinked = await t.admin('POST', `/sandbox/v1/instances/${instanceId}/unlink`);
  assert.equal(unlinked.status, 200, unlinked.text);
  await waitFor(async () => {
    const r = await t.api(apiKey, 'GET', '/api/status');
    return (r.body.data as { connected?: boolean } | undefined)?.connected === false;
  }, 'the instance offline');
}

export async function startTestGateway(
  opts: {
    label: string;
    simulated?: boolean;
    env?: Record<string, string>;
    log?: boolean;
    /** collect the gateway's log lines (JSON, level info and above) here */
    logLines?: string[];
    /** connect the gateway through another address (a TCP proxy in front of PostgreSQL) */
    viaPort?: number;
  } = { label: 'gw' },
): Promise<TestGateway> {
  const db = await createTestDb(opts.label);
  const gwDb = opts.viaPort && db.url ? { connectionString: withPort(db.url, opts.viaPort), connectionTimeoutMillis: 2_000 } : db.config;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `mgw-${opts.label}-`));
  const sim = opts.simulated ? simulatedClock(Date.UTC(2026, 0, 5, 10, 0, 0)) : null;
  const clock: Clock | undefined = sim ?? undefined;
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN, DEMO_INSTANCE: 'false', LOG_LEVEL: 'fatal', ...opts.env });
  const gw = await startGateway({
    config,
    database: gwDb,
    ...(clock ? { clock } : {}),
    log: opts.logLines
      ? createLogger({ level: 'info', stream: new Writable({ write: (c: Buffer, _e, cb) => (opts.logLines?.push(c.toString()), cb()) }) })
      : opts.log
        ? createLogger({ level: 'debug' })
        : silentLogger(),
  });
  const request = async (auth: string | null, method: string, route: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> => {
    const res = await fetch(`${gw.url}${route}`, {
      method,
      headers: {
        ...(auth ? { authorization: `Bearer ${auth}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let parsed: ApiResponse['body'];
    try {
      parsed = JSON.parse(text) as ApiResponse['body'];
    } catch {
      parsed = { success: false, error: text };
    }
    return { status: res.status, text, body: parsed, headers: res.headers };
  };
  const t: TestGateway = {
    gw,
    url: gw.url,
    db,
    clock: clock ?? { now: Date.now, setTimeout, clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout) },
    sim,
    dataDir,
    adminToken: ADMIN_TOKEN,
    api: (key, method, route, body, headers) => request(key, method, route, body, headers),
    admin: (method, route, body) => request(ADMIN_TOKEN, method, route, body),
    async accept(apiKey, body) {
      const r = await request(apiKey, 'POST', '/api/v2/send-message', body);
      if (r.status !== 202) throw new Error(`send-message answered ${r.status}, not 202: ${r.text}`);
      return String(r.body.data?.jobId);
    },
    async createInstance(name, o = {}) {
      const r = await request(ADMIN_TOKEN, 'POST', '/admin/v1/instances', { name, driver: 'sandbox', settings: o.settings ?? {} });
      if (r.status !== 201) throw new Error(`create instance failed: ${r.text}`);
      const data = r.body.data as { instance: { id: string }; apiKey: string };
      const instance = gw.actors.record(data.instance.id) as Instance;
      phoneSeq += 1;
      const phone = o.phone ?? `49151${String(process.pid % 10000).padStart(4, '0')}${String(phoneSeq).padStart(3, '0')}`;
      if (o.link !== false) {
        await waitFor(() => gw.actors.view(instance.id).status === 'waiting_qr', `${name} waiting_qr`);
        const l = await request(ADMIN_TOKEN, 'POST', `/sandbox/v1/instances/${instance.id}/link`, { phoneNumber: phone });
        if (l.status >= 300) throw new Error(`link failed: ${l.text}`);
        await waitFor(() => gw.actors.view(instance.id).connected, `${name} connected`);
      }
      return { instance, apiKey: data.apiKey, phone };
    },
    async advance(ms, stepMs = 1_000) {
      if (!sim) throw new Error('advance() needs simulated: true');
      let left = ms;
      while (left > 0) {
        const step = Math.min(stepMs, left);
        sim.increment(step);
        left -= step;
        await settle();
      }
    },
    async advanceUntil<T>(cond: () => T | Promise<T>, what: string, o: { stepMs?: number; maxMs?: number; realWaitMs?: number; storeIdle?: boolean } = {}): Promise<NonNullable<T>> {
      if (!sim) throw new Error('advanceUntil() needs simulated: true');
      const maxJump = o.stepMs ?? 60_000;
      const until = sim.now() + (o.maxMs ?? 3_600_000);
      for (;;) {
        await settle();
        let v = await cond();
        if (!v) {
          // real I/O started by the last timer (a dispatch, a webhook) gets a moment to finish
          await new Promise((r) => setTimeout(r, o.realWaitMs ?? 3));
          v = await cond();
        }
        if (v) return v as NonNullable<T>;
        if (sim.now() >= until) {
          // The simulated budget is spent, but real I/O (a query, a file, a delivery) may still be on its way
          // on a loaded machine: it gets REAL_GRACE_MS of real time before the wait counts as failed.
          const deadline = Date.now() + REAL_GRACE_MS;
          while (Date.now() < deadline) {
            await new Promise((r) => setTimeout(r, 10));
            const late = await cond();
            if (late) return late as NonNullable<T>;
          }
          throw new Error(`simulated time ran out waiting for ${what}`);
        }
        if (o.storeIdle) await storeIdle(gw.pool);
        // jump straight to the next timer, so that every timer fires at its own instant
        const next = nextTimerAt(sim);
        sim.set(Math.min(until, sim.now() + maxJump, next === null ? Number.POSITIVE_INFINITY : Math.max(next, sim.now() + 1)));
      }
    },
    async stop() {
      await gw.stop();
      await db.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return t;
}

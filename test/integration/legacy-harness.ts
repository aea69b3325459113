/**
 * Harness for the v1 route tests (legacy-*.test.ts): the real Koa application (error boundary, src/http/body.ts)
 * on a loopback port with only the v1 router mounted, a real QueueWorker per instance on a real PostgreSQL
 * (test/helpers/db.ts), the real dispatch (src/queue/dispatch.ts) and the real media validation, all on one
 * simulated clock. Stand-ins exist only for the network side and the instance actor (legacy-stand-ins.ts):
 * - `SendNetwork`, a MiniNetwork (routes-harness.ts) that also sends: it keeps the Driver contract's
 *   outcomes (an unregistered recipient is a DriverError that proves nothing was sent; a dropped call is one
 *   that does not);
 * - `V1Port`, the instance's port (src/actors/port.ts) with switches for `connected` and `paused`, whose queue
 *   asks the real QueueWorker answers; `queue.direct` (queue modes `disabled`, sent at once, and
 *   `memory-degraded`) goes through a small in-memory gate: the minimum pause and the hourly ceiling,
 *   answering `rate_limited`.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Context } from 'koa';
import { performCall, type CallOutcome, type PreparedCall } from '../../src/actors/call.js';
import type { InstanceAsk } from '../../src/actors/port.js';
import { createApp } from '../../src/http/app.js';
import { silentLogger } from '../../src/log.js';
import { DomainError } from '../../src/errors.js';
import { createInstance, type Instance } from '../../src/store/instances.js';
import { EXISTING_INSTANCE_DEFAULTS, type InstanceSettings } from '../../src/queue/settings.js';
import { QueueWorker } from '../../src/queue/worker.js';
import { dispatchJob } from '../../src/queue/dispatch.js';
import { startCall } from '../../src/queue/sql/startCall.js';
import type { Job } from '../../src/queue/jobs.js';
import { sendPart } from '../../src/queue/payload.js';
import type { DirectOutcome, DirectSend } from '../../src/queue/worker.js';
import type { Driver } from '../../src/drivers/contract.js';
import { createMediaServices, type MediaServices } from '../../src/media/services.js';
import { loadConfig } from '../../src/config.js';
import type { QueueMode } from '../../src/http/routes/queue-gate.js';
import { legacyRouter } from '../../src/http/routes/legacy.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { OWN_NUMBER, SendNetwork, StepClock, V1Port } from './legacy-stand-ins.js';

export { OWN_NUMBER, SendNetwork, StepClock, V1Port };

export interface V1Instance {
  name: string;
  id: string;
  handle: V1Port;
  worker: QueueWorker;
  net: SendNetwork;
  /** live: the worker and the routes read it on every use */
  settings: InstanceSettings;
  mode: QueueMode;
  events: { event: string; data: Record<string, unknown> }[];
  /** the in-memory gate's record of direct sends (memory-degraded) */
  directSends: number[];
  /** restart over: connected again, and the worker is told so (as the runtime does on `ready`) */
  reconnect(): void;
}

export interface Reply {
  status: number;
  text: string;
  body: { success: boolean; data?: Record<string, unknown>; error?: string; code?: string };
}

export interface V1Harness {
  url: string;
  clock: StepClock;
  db: TestDb;
  add(name: string, settings: Partial<InstanceSettings>, opts?: { mode?: QueueMode; maxPending?: number }): Promise<V1Instance>;
  post(inst: V1Instance, route: string, body: unknown): Promise<Reply>;
  /** let I/O run until PostgreSQL is idle (no simulated time passes) */
  settle(): Promise<void>;
  /** advance simulated time from timer to timer (at most `stepMs` at once), letting I/O settle after each */
  advance(ms: number, stepMs?: number): Promise<void>;
  /** advance as `advance` does until `p` settles; answers its value and the simulated time it took */
  drive<T>(p: Promise<T>, maxMs?: number, stepMs?: number): Promise<{ value: T; elapsedMs: number }>;
  /** real-I/O polling of a condition (no simulated time passes) */
  until(cond: () => boolean | Promise<boolean>, what: string): Promise<void>;
  jobs(inst: V1Instance): Promise<{ id: string; state: string; priority: number; scheduled_at: Date | null; dispatched_at: Date | null; expires_at: Date; origin_route: string; payload: Record<string, unknown> }[]>;
  stop(): Promise<void>;
}

export const WAIT_MS = 20_000;

export async function startV1Harness(label: string, env: Record<string, string> = {}): Promise<V1Harness> {
  const db = await createTestDb(label);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `mgw-${label}-`));
  const clock = new StepClock();
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'fatal', ...env });
  const log = silentLogger();
  const media: MediaServices = createMediaServices({ pool: db.pool, clock, config, log });
  const byName = new Map<string, V1Instance>();
  const byId = new Map<string, V1Instance>();

  /** the session's side of a dispatch: the call on the stand-in network while connected, else not sent */
  const perform = (port: V1Port, net: Driver) => (prepared: PreparedCall): Promise<CallOutcome> =>
    port.connected ? performCall(net, prepared, () => clock.now()) : Promise.resolve({ kind: 'not_sent', message: 'the session went away before the call' });
  const dispatch = (port: V1Port, net: Driver, job: Job) =>
    dispatchJob(job, {
      clock,
      perform: perform(port, net),
      callTimeoutMs: 30_000,
      resolveMedia: media.resolveForDispatch,
      startCall: (j) => startCall(db.pool, j.instanceId, j.id),
    });

  const directSend = async (inst: V1Instance, job: DirectSend): Promise<DirectOutcome> => {
    const now = clock.now();
    if (inst.mode === 'memory-degraded') {
      const retryAt = gateRetryAt(inst, now);
      if (retryAt !== null) return { kind: 'rate_limited', retryAt };
      inst.directSends.push(now);
    }
    return dispatch(inst.handle, inst.net, directJob(inst.id, job, now));
  };

  /** What the instance's planner answers, here from the instance's real QueueWorker. */
  const serve = (inst: () => V1Instance) => async (ask: InstanceAsk): Promise<unknown> => {
    const { worker, mode } = inst();
    switch (ask.type) {
      case 'queue.accept':
        return { ...(await worker.offer(ask.request)), limits: worker.limits(mode) };
      case 'queue.acceptMany':
        return worker.offerMany(ask.requests);
      case 'queue.awaitOutcome':
        return worker.waitForTerminal(ask.jobId, ask.timeoutMs);
      case 'queue.releaseCaller':
        return worker.releaseCaller(ask.jobId);
      case 'queue.cancel':
        return worker.cancel(ask.jobId, ask.reason);
      case 'queue.direct':
        return directSend(inst(), ask.send);
      default:
        throw new Error(`the v1 routes do not ask ${ask.type}`);
    }
  };

  const router = legacyRouter({
    portOf: (ctx: Context) => {
      const inst = byName.get(ctx.get('x-instance'));
      if (!inst) throw new DomainError('INSTANCE_UNREACHABLE', 'the instance is not running on this gateway');
      // what the API-key guard sets: the instance's live record
      ctx.state.instance = { ...inst.handle.record, settings: inst.settings };
      return inst.handle;
    },
    clock,
    pool: db.pool,
    config,
    validateMedia: media.validateAtAcceptance,
    log,
  });
  const app = createApp({ log, routers: [router] });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const settle = async () => {
    let quiet = 0;
    for (let i = 0; i < 1_000 && quiet < 3; i++) {
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 1));
      quiet = db.pool.totalCount === db.pool.idleCount && db.pool.waitingCount === 0 ? quiet + 1 : 0;
    }
  };

  /**
   * One step: to the next due timer when it is within `maxMs`, else `maxMs`. A timer already due fires with a
   * zero step, but only a few times in a row (`allowZero`): a worker re-arming an overdue slot while
   * disconnected must not stop time.
   */
  const step = async (maxMs: number, allowZero: () => boolean) => {
    const next = clock.nextDue();
    let ms = next === null ? maxMs : Math.min(maxMs, Math.max(0, next - clock.now()));
    if (ms === 0 && !allowZero()) ms = maxMs;
    clock.increment(ms);
    await settle();
  };

  const h: V1Harness = {
    url,
    clock,
    db,
    async add(name, settings, opts = {}) {
      const s: InstanceSettings = { ...EXISTING_INSTANCE_DEFAULTS, enabled: true, minDelayMs: 1_000, maxDelayMs: 1_000, ...settings };
      const { instance } = await createInstance(db.pool, { name, driver: 'sandbox', settings: s });
      const record: Instance = { ...instance, phoneNumber: OWN_NUMBER, settings: s };
      const net = new SendNetwork(clock);
      let self: V1Instance | null = null;
      const me = (): V1Instance => {
        if (!self) throw new Error('the instance is not ready');
        return self;
      };
      const handle = new V1Port(record, clock, () => me().mode, serve(me));
      const events: V1Instance['events'] = [];
      const worker = new QueueWorker({
        instanceId: instance.id,
        pool: db.pool,
        clock,
        log,
        settings: () => s,
        maxPending: opts.maxPending ?? config.QUEUE_MAX_PENDING,
        events: {
          emit: async (_q, event, data) => (events.push({ event, data }), true),
          emitMany: async (_q, items) => void events.push(...items),
          flushed: () => undefined,
        },
        dispatcher: {
          connected: () => handle.connected,
          send: (job) => dispatch(handle, net, job),
        },
        // the shortest pause every time: slots are exact
        random: (min) => min,
      });
      await worker.start();
      const inst: V1Instance = {
        name, id: instance.id, handle, worker, net, settings: s, mode: opts.mode ?? 'pg', events, directSends: [],
        reconnect() {
          handle.paused = false;
          handle.connected = true;
          worker.resume();
        },
      };
      self = inst;
      byName.set(name, inst);
      byId.set(instance.id, inst);
      return inst;
    },
    async post(inst, route, body) {
      const res = await fetch(url + route, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-instance': inst.name },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, text, body: JSON.parse(text) as Reply['body'] };
    },
    settle,
    async advance(ms, stepMs = 500) {
      const end = clock.now() + ms;
      let zeroSteps = 0;
      while (clock.now() < end) {
        const before = clock.now();
        await step(Math.min(stepMs, end - clock.now()), () => zeroSteps++ < 3);
        if (clock.now() > before) zeroSteps = 0;
      }
      await settle();
    },
    async drive<T>(p: Promise<T>, maxMs = 120_000, stepMs = 500) {
      let done = false;
      let value: T | undefined;
      let failure: unknown = null;
      p.then((v) => {
        done = true;
        value = v;
      }, (e: unknown) => {
        done = true;
        failure = e ?? new Error('rejected');
      });
      const start = clock.now();
      await settle();
      let zeroSteps = 0;
      while (!done) {
        if (clock.now() - start >= maxMs) throw new Error(`still pending after ${maxMs} ms of simulated time`);
        const before = clock.now();
        await step(stepMs, () => zeroSteps++ < 3);
        if (clock.now() > before) zeroSteps = 0;
      }
      if (failure !== null) throw failure;
      return { value: value as T, elapsedMs: clock.now() - start };
    },
    async until(cond, what) {
      for (let i = 0; i < 2_000; i++) {
        if (await cond()) return;
        await new Promise((r) => setTimeout(r, 2));
      }
      throw new Error(`timed out waiting for ${what}`);
    },
    async jobs(inst) {
      const { rows } = await db.pool.query(
        'SELECT id, state, priority, scheduled_at, dispatched_at, expires_at, origin_route, payload FROM jobs WHERE instance_id = $1 ORDER BY seq',
        [inst.id],
      );
      return rows;
    },
    async stop() {
      for (const inst of byId.values()) await inst.worker.stop();
      media.stop();
      await new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      });
      await db.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return h;
}

/** The stand-in in-memory gate: the minimum pause since the last send, and the hourly ceiling. */
function gateRetryAt(inst: V1Instance, now: number): number | null {
  const s = inst.settings;
  let at = now;
  const last = inst.directSends[inst.directSends.length - 1];
  if (last !== undefined) at = Math.max(at, last + s.minDelayMs);
  const hour = inst.directSends.filter((t) => t > now - 3_600_000);
  if (s.maxPerHour !== null && hour.length >= s.maxPerHour) at = Math.max(at, (hour[hour.length - s.maxPerHour] as number) + 3_600_001);
  return at > now ? at : null;
}

function directJob(instanceId: string, j: DirectSend, now: number): Job {
  return {
    ...sendPart(j), id: 'direct', seq: 0, instanceId, state: 'sending', originRoute: 'direct', chatId: j.chatId, phone: null,
    payloadHash: '', idempotencyKey: null, priority: 9, notBefore: null, queuedAt: now, scheduledAt: now,
    dispatchedAt: now, terminalAt: null, expiresAt: now, attempts: 1, deliveryConfidence: null, messageId: null,
    resultCode: null, errorMessage: null, unknownReason: null, previousJobId: null,
  };
}

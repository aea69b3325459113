/**
 * The connection lifecycle of one instance (one linked number): the single definition of its states.
 *
 * Pure statechart: no I/O, no wall clock. Effects come from what the runtime provides with
 * `instanceMachine.provide({ actors: { session }, actions: { notify, trace } })`; every timer is an XState
 * `after` (or delayed `raise`) so the actor's clock drives it (`createActor(machine, { clock })`).
 *
 * INPUT (`InstanceInput`): `instanceId` plus optional policy numbers (defaults in `DEFAULT_POLICY`):
 *   backoff `{baseMs, maxMs, factor, jitter}`, quarantine `{maxFailures, windowMs}`, `orderedRestartHardMs`
 *   (ORDERED_RESTART_HARD_MS), `expectedDowntimeMs`, `restartDelayMs`, `startTimeoutMs`, `stableMs`,
 *   `logoutTimeoutMs`, and `seed` for the jitter (default: derived from instanceId, so instances that fail
 *   together spread out; pass a random seed for a different spread per process).
 *
 * EVENTS the runtime sends (`OperatorEvent`): `ORDERED_RESTART {reason?}` (operator restart; the only way from
 * `quarantined` or `loggedOut` back to a session), `LOGOUT` (unlink the number; from any state but `stopped`),
 * `STOP` (final; the session is destroyed, the link kept), `REQUEST_PAIRING_CODE {phoneNumber}` (forwarded to
 * the session while initializing or waiting_qr; the code comes back as a `code` event).
 * EVENTS the session actor sends (`SessionEvent`, see src/actors/session.ts): the driver's lifecycle events
 * (`qr`, `code`, `authenticated`, `ready`, `auth_failure`, `disconnected`, `change_state`, `loading_screen`,
 * `browser_health`, `fatal`) each stamped `at` (unix ms), plus `SESSION_FAILED`, `LOGGED_OUT`, `LOGOUT_FAILED`,
 * `PAIRING_CODE_FAILED`. COMMANDS the machine sends to the session (child id `session`): `SessionCommand`.
 *
 * OBSERVE a snapshot with:
 *   - `instanceStatus(snapshot)`: the SPEC.md status value (from each state's `meta.status`).
 *   - tags: exactly one health tag per state, `online | offline | starting | degraded | quarantined`
 *     (`healthCounts(snapshots)` builds the /health counts), plus `paused` while an ordered restart holds
 *     `/api/v2/*` (answer `503 QUEUE_PAUSED`; v1 waits for `connected`).
 *   - `currentQr(snapshot)` for `/api/qr`; `summarize(snapshot)` for `/debug/actors` (no QR, no pairing code).
 *   - context: `phoneNumber`, `browser {alive, failStreak, lastOkAt}` for `/api/status`.
 * ACTIONS to provide: `notify(NotifyParams)`: webhook-worthy lifecycle events with DESIGN.md payloads (`qr` and
 * `code` carry secrets: webhook only, never a log line); a session failure is notified as `disconnected` with a
 * reason code (`FailureReason`). `trace(TraceParams)`: operational facts for the log (failure details, backoff,
 * quarantine, pause end). Both default to no-ops.
 *
 * WIRING (see src/actors/session.ts):
 *   const sessions = createSessionLogic({ driverFactory, driverOptions, clock, onNetworkEvent });
 *   const actor = createActor(
 *     instanceMachine.provide({ actors: { session: sessions.logic }, actions: { notify: ({ context }, p) => …, trace: … } }),
 *     { input: { instanceId, orderedRestartHardMs }, clock },
 *   );
 *
 * Status of internal states: `backoff` is `error` (restart in progress); `restarting` is `initializing`;
 * `quarantined`, `loggingOut`, `loggedOut` and `stopped` are `disconnected`.
 */
import { assign, enqueueActions, fromCallback, raise, sendTo, setup, type SnapshotFrom } from 'xstate';
import type { BrowserHealth, WAState } from '../src/drivers/contract.js';

export type InstanceStatus = 'initializing' | 'waiting_qr' | 'authenticated' | 'connected' | 'disconnected' | 'error';
export const HEALTH_TAGS = ['online', 'offline', 'starting', 'degraded', 'quarantined'] as const;
export type HealthTag = (typeof HEALTH_TAGS)[number];
export type InstanceTag = HealthTag | 'paused';

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
  factor: number;
  /** 0..1: the delay is spread uniformly over nominal × [1 - jitter, 1 + jitter] (capped at maxMs). */
  jitter: number;
}

export interface InstancePolicy {
  backoff: BackoffPolicy;
  quarantine: { maxFailures: number; windowMs: number };
  /** ORDERED_RESTART_HARD_MS: the pause of /api/v2/* ends at the latest after this long. */
  orderedRestartHardMs: number;
  /** What `instance_restarting` announces. */
  expectedDowntimeMs: number;
  /** Gap between stopping the old session and starting the new one on an ordered restart. */
  restartDelayMs: number;
  /** `initializing` or `authenticated` for this long without progress counts as a failure. */
  startTimeoutMs: number;
  /** Connected this long resets `browser.failStreak` (and so the backoff) to zero. */
  stableMs: number;
  /** Waiting for the session to confirm a logout; after it the instance is `loggedOut` anyway. */
  logoutTimeoutMs: number;
}

export const DEFAULT_POLICY: InstancePolicy = {
  backoff: { baseMs: 1_000, maxMs: 60_000, factor: 2, jitter: 0.2 },
  quarantine: { maxFailures: 5, windowMs: 10 * 60_000 },
  orderedRestartHardMs: 120_000,
  expectedDowntimeMs: 30_000,
  restartDelayMs: 1_000,
  startTimeoutMs: 180_000,
  stableMs: 60_000,
  logoutTimeoutMs: 30_000,
};

export interface InstanceInput extends Partial<Omit<InstancePolicy, 'backoff' | 'quarantine'>> {
  instanceId: string;
  backoff?: Partial<BackoffPolicy>;
  quarantine?: Partial<InstancePolicy['quarantine']>;
  seed?: number;
}

/** Disconnect reasons (whatsapp-web.js) that mean the link itself is gone: a new QR scan is needed. */
export const LINK_LOST_REASONS: readonly string[] = ['LOGOUT', 'UNPAIRED', 'UNPAIRED_IDLE'];

export interface InstanceContext {
  instanceId: string;
  policy: InstancePolicy;
  /** Digits of the linked account (wid without `@c.us`), kept after a disconnect; null until first ready. */
  phoneNumber: string | null;
  wid: string | null;
  /** As SPEC.md's Status `browser`: failStreak = session failures in a row (reset after `stableMs` connected). */
  browser: { alive: boolean; failStreak: number; lastOkAt: number };
  /** The driver's own count of failed browser probes (its `browser_health`). */
  probeFailStreak: number;
  /** Latest QR while not linked; secret: never in summaries or logs. */
  qr: { dataUrl: string | null; at: number } | null;
  /** Latest pairing code while not linked; secret: never in summaries or logs. */
  pairingCode: { code: string; at: number } | null;
  waState: WAState | null;
  loading: { percent: number; message: string } | null;
  lastError: { reason: FailureReason | 'AUTH_FAILURE' | 'LOGOUT_FAILED'; detail: string; at: number | null } | null;
  lastDisconnect: { reason: string; at: number } | null;
  /** Ids of failures still inside the quarantine window (each expires by a delayed FAILURE_EXPIRED). */
  recentFailures: number[];
  failureSeq: number;
  /** Delay of the current (or last) backoff. */
  backoffMs: number;
  /** PRNG state for the jitter: the machine stays deterministic for a given seed. */
  rng: number;
  lastRestart: { reason: string; count: number } | null;
}

export type SessionEvent =
  | { type: 'qr'; qr: string; dataUrl: string | null; at: number }
  | { type: 'code'; code: string; at: number }
  | { type: 'authenticated'; at: number }
  | { type: 'ready'; wid: string | null; at: number }
  | { type: 'auth_failure'; message: string; at: number }
  | { type: 'disconnected'; reason: string; at: number }
  | { type: 'change_state'; state: WAState; at: number }
  | { type: 'loading_screen'; percent: number; message: string; at: number }
  | { type: 'browser_health'; health: BrowserHealth; at: number }
  | { type: 'fatal'; reason: string; at: number }
  /** driver creation or `initialize()` failed */
  | { type: 'SESSION_FAILED'; message: string; at: number }
  | { type: 'LOGGED_OUT'; at: number }
  | { type: 'LOGOUT_FAILED'; message: string; at: number }
  | { type: 'PAIRING_CODE_FAILED'; message: string; at: number };

export type OperatorEvent =
  | { type: 'ORDERED_RESTART'; reason?: string }
  | { type: 'LOGOUT' }
  | { type: 'STOP' }
  | { type: 'REQUEST_PAIRING_CODE'; phoneNumber: string };

type InternalEvent = { type: 'FAILURE_EXPIRED'; failureId: number } | { type: 'RESTART_SETTLED' };

export type InstanceEvent = SessionEvent | OperatorEvent | InternalEvent;

/** What the machine sends to its `session` child. */
export type SessionCommand = { type: 'LOGOUT' } | { type: 'REQUEST_PAIRING_CODE'; phoneNumber: string };
export interface SessionInput {
  instanceId: string;
}

/** Webhook-worthy lifecycle events, payloads as DESIGN.md "Decisions". `qr` and `code` carry secrets. */
export type NotifyParams =
  | { event: 'qr'; data: { qr: string } }
  | { event: 'code'; data: { code: string } }
  | { event: 'ready'; data: { phoneNumber: string | null } }
  | { event: 'authenticated'; data: Record<string, never> }
  | { event: 'auth_failure'; data: { message: string } }
  | { event: 'disconnected'; data: { reason: string } }
  | { event: 'change_state'; data: { state: WAState } }
  | { event: 'loading_screen'; data: { percent: number; message: string } }
  | { event: 'instance_restarting'; data: { reason: string; expectedDowntimeMs: number } };

export type FailureReason = 'SESSION_CRASHED' | 'SESSION_FAILED' | 'BROWSER_DIED' | 'DISCONNECTED' | 'START_TIMEOUT';

/** Operational facts for the log (no secrets). */
export type TraceParams =
  | { kind: 'failure'; reason: FailureReason; detail: string; failStreak: number; recentFailures: number }
  | { kind: 'backoff'; attempt: number; delayMs: number }
  | { kind: 'quarantined'; recentFailures: number; windowMs: number }
  | { kind: 'pause_ended'; by: 'settled' | 'ceiling' }
  | { kind: 'logout_failed'; detail: string }
  | { kind: 'pairing_code_failed'; detail: string };

// ---- pure helpers -------------------------------------------------------------------------------------------

/** Nominal exponential delay for the n-th consecutive failure (n ≥ 1), before jitter. */
export function nominalBackoffMs(attempt: number, p: BackoffPolicy): number {
  return Math.min(p.maxMs, p.baseMs * p.factor ** Math.max(0, attempt - 1));
}

/** The jittered delay for `attempt` given a uniform `r` in [0, 1). */
export function backoffDelayMs(attempt: number, p: BackoffPolicy, r: number): number {
  const nominal = nominalBackoffMs(attempt, p);
  return Math.min(p.maxMs, Math.round(nominal * (1 - p.jitter + 2 * p.jitter * r)));
}

/** mulberry32: one step of a small seeded PRNG; returns [uniform in [0,1), next state]. */
function nextRandom(state: number): [number, number] {
  const next = (state + 0x6d2b79f5) >>> 0;
  let t = next;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return [((t ^ (t >>> 14)) >>> 0) / 4294967296, next];
}

function seedFrom(text: string): number {
  let h = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function resolvePolicy(input: InstanceInput): InstancePolicy {
  const pick = (k: Exclude<keyof InstancePolicy, 'backoff' | 'quarantine'>): number => input[k] ?? DEFAULT_POLICY[k];
  return {
    backoff: { ...DEFAULT_POLICY.backoff, ...input.backoff },
    quarantine: { ...DEFAULT_POLICY.quarantine, ...input.quarantine },
    orderedRestartHardMs: pick('orderedRestartHardMs'),
    expectedDowntimeMs: pick('expectedDowntimeMs'),
    restartDelayMs: pick('restartDelayMs'),
    startTimeoutMs: pick('startTimeoutMs'),
    stableMs: pick('stableMs'),
    logoutTimeoutMs: pick('logoutTimeoutMs'),
  };
}

/** Reason and detail of the event that made the session fail (the `failed` state's entry event). */
function failureOf(e: InstanceEvent): { reason: FailureReason; detail: string; at: number | null } {
  // Delayed (`after`) events are not in InstanceEvent's type but arrive here: they are the start timeout.
  switch (e.type) {
    case 'fatal':
      return { reason: 'SESSION_CRASHED', detail: e.reason, at: e.at };
    case 'SESSION_FAILED':
      return { reason: 'SESSION_FAILED', detail: e.message, at: e.at };
    case 'browser_health':
      return { reason: 'BROWSER_DIED', detail: `browser probe failed ${e.health.failStreak} time(s)`, at: e.at };
    case 'disconnected':
      return { reason: 'DISCONNECTED', detail: e.reason, at: e.at };
    default:
      return { reason: 'START_TIMEOUT', detail: 'no progress while starting', at: null };
  }
}

/** Context changes every session event implies: liveness, QR/code, account, state, progress. */
function absorb(context: InstanceContext, event: InstanceEvent): Partial<InstanceContext> {
  if (!('at' in event)) return {};
  const seen = { ...context.browser, alive: true, lastOkAt: Math.max(context.browser.lastOkAt, event.at) };
  switch (event.type) {
    case 'qr':
      return { browser: seen, qr: { dataUrl: event.dataUrl, at: event.at } };
    case 'code':
      // a pairing code replaces the QR: the network no longer accepts the shown code once pairing started
      return { browser: seen, qr: null, pairingCode: { code: event.code, at: event.at } };
    case 'authenticated':
      return { browser: seen, qr: null, pairingCode: null };
    case 'ready':
      return {
        browser: seen,
        qr: null,
        pairingCode: null,
        loading: null,
        wid: event.wid ?? context.wid,
        phoneNumber: event.wid ? (event.wid.split('@')[0] ?? null) : context.phoneNumber,
      };
    case 'change_state':
      return { browser: seen, waState: event.state };
    case 'loading_screen':
      return { browser: seen, loading: { percent: event.percent, message: event.message } };
    case 'disconnected':
      return { lastDisconnect: { reason: event.reason, at: event.at } };
    case 'auth_failure':
      return { lastError: { reason: 'AUTH_FAILURE', detail: event.message, at: event.at }, qr: null, pairingCode: null };
    case 'browser_health':
      return {
        browser: { ...context.browser, alive: event.health.alive, lastOkAt: Math.max(context.browser.lastOkAt, event.health.lastOkAt) },
        probeFailStreak: event.health.failStreak,
      };
    default:
      return {};
  }
}

// ---- the machine --------------------------------------------------------------------------------------------

const LC = '#instance.active.lifecycle';

const notifyDisconnected = {
  type: 'notify',
  params: ({ event }: { event: InstanceEvent }): NotifyParams => ({
    event: 'disconnected',
    data: { reason: event.type === 'disconnected' ? event.reason : 'unknown' },
  }),
} as const;

/** Placeholder until the runtime provides src/actors/session.ts; it never sends anything. */
const idleSession = fromCallback<SessionCommand, SessionInput>(() => undefined);

export const instanceMachine = setup({
  types: {
    context: {} as InstanceContext,
    events: {} as InstanceEvent,
    input: {} as InstanceInput,
    tags: {} as InstanceTag,
    meta: {} as { status?: InstanceStatus },
  },
  actors: { session: idleSession },
  actions: {
    notify: (_, _params: NotifyParams) => {},
    trace: (_, _params: TraceParams) => {},
    absorb: assign(({ context, event }) => absorb(context, event)),
    recordFailure: assign(({ context, event }) => {
      const { reason, detail, at } = failureOf(event);
      const id = context.failureSeq + 1;
      return {
        failureSeq: id,
        recentFailures: [...context.recentFailures, id],
        browser: { ...context.browser, alive: false, failStreak: context.browser.failStreak + 1 },
        lastError: { reason, detail, at },
      };
    }),
    expireFailure: assign(({ context, event }) =>
      event.type === 'FAILURE_EXPIRED' ? { recentFailures: context.recentFailures.filter((id) => id !== event.failureId) } : {},
    ),
    planBackoff: assign(({ context }) => {
      const [r, rng] = nextRandom(context.rng);
      return { rng, backoffMs: backoffDelayMs(context.browser.failStreak, context.policy.backoff, r) };
    }),
    resetFailStreak: assign(({ context }) => ({ browser: { ...context.browser, failStreak: 0 } })),
    releaseQuarantine: assign(({ context }) => ({ recentFailures: [], browser: { ...context.browser, failStreak: 0 } })),
    sessionGone: assign(({ context }) => ({ browser: { ...context.browser, alive: false }, loading: null })),
    noteRestart: assign(({ context, event }) => ({
      lastRestart: {
        reason: (event.type === 'ORDERED_RESTART' && event.reason) || 'operator',
        count: (context.lastRestart?.count ?? 0) + 1,
      },
    })),
    noteLogoutFailure: assign(({ event }) =>
      event.type === 'LOGOUT_FAILED' ? { lastError: { reason: 'LOGOUT_FAILED' as const, detail: event.message, at: event.at } } : {},
    ),
  },
  guards: {
    linkLost: ({ event }) => event.type === 'disconnected' && LINK_LOST_REASONS.includes(event.reason),
    browserDead: ({ event }) => event.type === 'browser_health' && !event.health.alive,
    tooManyFailures: ({ context }) => context.recentFailures.length >= context.policy.quarantine.maxFailures,
  },
  delays: {
    backoff: ({ context }) => context.backoffMs,
    quarantineWindow: ({ context }) => context.policy.quarantine.windowMs,
    startTimeout: ({ context }) => context.policy.startTimeoutMs,
    stable: ({ context }) => context.policy.stableMs,
    restartDelay: ({ context }) => context.policy.restartDelayMs,
    logoutTimeout: ({ context }) => context.policy.logoutTimeoutMs,
    orderedRestartHard: ({ context }) => context.policy.orderedRestartHardMs,
  },
}).createMachine({
  id: 'instance',
  description: 'The connection lifecycle of one instance (one linked number) and the v2 pause of an ordered restart.',
  context: ({ input }) => ({
    instanceId: input.instanceId,
    policy: resolvePolicy(input),
    phoneNumber: null,
    wid: null,
    browser: { alive: false, failStreak: 0, lastOkAt: 0 },
    probeFailStreak: 0,
    qr: null,
    pairingCode: null,
    waState: null,
    loading: null,
    lastError: null,
    lastDisconnect: null,
    recentFailures: [],
    failureSeq: 0,
    backoffMs: 0,
    rng: (input.seed ?? seedFrom(input.instanceId)) >>> 0,
    lastRestart: null,
  }),
  initial: 'active',
  states: {
    active: {
      description: 'Two regions: the connection lifecycle, and whether an ordered restart holds /api/v2/*.',
      type: 'parallel',
      on: {
        STOP: '#instance.stopped',
        FAILURE_EXPIRED: { actions: 'expireFailure' },
      },
      states: {
        lifecycle: {
          description: 'The session and its recovery.',
          initial: 'running',
          states: {
            running: {
              description: 'A session (driver) is alive: the child actor `session`.',
              invoke: { id: 'session', src: 'session', input: ({ context }) => ({ instanceId: context.instanceId }) },
              exit: 'sessionGone',
              initial: 'connection',
              on: {
                fatal: `${LC}.failed`,
                SESSION_FAILED: `${LC}.failed`,
                browser_health: [{ guard: 'browserDead', target: `${LC}.failed` }, { actions: 'absorb' }],
                change_state: {
                  actions: ['absorb', { type: 'notify', params: ({ event }) => ({ event: 'change_state', data: { state: event.state } }) }],
                },
                loading_screen: {
                  actions: [
                    'absorb',
                    {
                      type: 'notify',
                      params: ({ event }) => ({ event: 'loading_screen', data: { percent: event.percent, message: event.message } }),
                    },
                  ],
                },
                ORDERED_RESTART: `${LC}.restarting`,
                LOGOUT: '.loggingOut',
              },
              states: {
                connection: {
                  description: 'Progress of the running session towards connected; driver lifecycle events move it.',
                  initial: 'initializing',
                  on: {
                    qr: {
                      target: '.waiting_qr',
                      actions: ['absorb', { type: 'notify', params: ({ event }) => ({ event: 'qr', data: { qr: event.qr } }) }],
                    },
                    code: {
                      target: '.waiting_qr',
                      actions: ['absorb', { type: 'notify', params: ({ event }) => ({ event: 'code', data: { code: event.code } }) }],
                    },
                    authenticated: {
                      target: '.authenticated',
                      actions: ['absorb', { type: 'notify', params: { event: 'authenticated', data: {} } }],
                    },
                    ready: {
                      target: '.connected',
                      actions: ['absorb', { type: 'notify', params: ({ context }) => ({ event: 'ready', data: { phoneNumber: context.phoneNumber } }) }],
                    },
                    auth_failure: {
                      target: `${LC}.loggedOut`,
                      actions: ['absorb', { type: 'notify', params: ({ event }) => ({ event: 'auth_failure', data: { message: event.message } }) }],
                    },
                    disconnected: [
                      { guard: 'linkLost', target: `${LC}.loggedOut`, actions: ['absorb', notifyDisconnected] },
                      { target: `${LC}.failed`, actions: ['absorb', notifyDisconnected] },
                    ],
                    PAIRING_CODE_FAILED: {
                      actions: { type: 'trace', params: ({ event }) => ({ kind: 'pairing_code_failed', detail: event.message }) },
                    },
                  },
                  states: {
                    initializing: {
                      description: 'The session is starting (browser, stored link).',
                      meta: { status: 'initializing' },
                      tags: 'starting',
                      after: { startTimeout: `${LC}.failed` },
                      on: { REQUEST_PAIRING_CODE: { actions: sendTo('session', ({ event }) => event) } },
                    },
                    waiting_qr: {
                      description: 'Not linked: a QR (or pairing code) waits for the phone; no timeout, a human scans.',
                      meta: { status: 'waiting_qr' },
                      tags: 'starting',
                      on: { REQUEST_PAIRING_CODE: { actions: sendTo('session', ({ event }) => event) } },
                    },
                    authenticated: {
                      description: 'Signed in, loading chats; not ready to send yet.',
                      meta: { status: 'authenticated' },
                      tags: 'starting',
                      after: { startTimeout: `${LC}.failed` },
                    },
                    connected: {
                      description: 'Ready to send. Staying connected for `stable` resets the failure streak.',
                      meta: { status: 'connected' },
                      tags: 'online',
                      entry: raise({ type: 'RESTART_SETTLED' }),
                      after: { stable: { actions: 'resetFailStreak' } },
                    },
                  },
                },
                loggingOut: {
                  description: 'The session unlinks the number; session failures here just end in loggedOut.',
                  meta: { status: 'disconnected' },
                  tags: 'offline',
                  entry: sendTo('session', { type: 'LOGOUT' }),
                  on: {
                    LOGGED_OUT: `${LC}.loggedOut`,
                    LOGOUT_FAILED: {
                      target: `${LC}.loggedOut`,
                      actions: ['noteLogoutFailure', { type: 'trace', params: ({ event }) => ({ kind: 'logout_failed', detail: event.message }) }],
                    },
                    fatal: `${LC}.loggedOut`,
                    SESSION_FAILED: `${LC}.loggedOut`,
                    browser_health: [{ guard: 'browserDead', target: `${LC}.loggedOut` }, { actions: 'absorb' }],
                    ORDERED_RESTART: {},
                    LOGOUT: {},
                  },
                  after: { logoutTimeout: `${LC}.loggedOut` },
                },
              },
            },
            failed: {
              description: 'Transient: counts the failure, then quarantine or backoff.',
              meta: { status: 'error' },
              tags: 'degraded',
              entry: [
                'recordFailure',
                raise(({ context }) => ({ type: 'FAILURE_EXPIRED', failureId: context.failureSeq }), { delay: 'quarantineWindow' }),
                {
                  type: 'trace',
                  params: ({ context, event }) => {
                    const { reason, detail } = failureOf(event);
                    const recentFailures = context.recentFailures.length;
                    return { kind: 'failure', reason, detail, failStreak: context.browser.failStreak, recentFailures };
                  },
                },
                // A driver `disconnected` was notified with its own reason on the way in.
                enqueueActions(({ event, enqueue }) => {
                  if (event.type !== 'disconnected') {
                    enqueue({ type: 'notify', params: { event: 'disconnected', data: { reason: failureOf(event).reason } } });
                  }
                }),
              ],
              always: [{ guard: 'tooManyFailures', target: 'quarantined' }, { target: 'backoff' }],
            },
            backoff: {
              description: 'Error, restart in progress: waits an exponential, jittered delay, then starts a new session.',
              meta: { status: 'error' },
              tags: 'degraded',
              entry: [
                'planBackoff',
                { type: 'trace', params: ({ context }) => ({ kind: 'backoff', attempt: context.browser.failStreak, delayMs: context.backoffMs }) },
              ],
              after: { backoff: 'running' },
              on: { ORDERED_RESTART: 'restarting', LOGOUT: 'running.loggingOut' },
            },
            quarantined: {
              description: 'Too many failures in the window: no automatic restart; only the operator restart leaves.',
              meta: { status: 'disconnected' },
              tags: 'quarantined',
              entry: [
                raise({ type: 'RESTART_SETTLED' }),
                {
                  type: 'trace',
                  params: ({ context }) => ({
                    kind: 'quarantined',
                    recentFailures: context.recentFailures.length,
                    windowMs: context.policy.quarantine.windowMs,
                  }),
                },
              ],
              on: {
                ORDERED_RESTART: { target: 'restarting', actions: 'releaseQuarantine' },
                LOGOUT: 'running.loggingOut',
              },
            },
            restarting: {
              description: 'Ordered restart: the old session is stopped; a new one starts after `restartDelay`.',
              meta: { status: 'initializing' },
              tags: 'starting',
              entry: [
                'noteRestart',
                {
                  type: 'notify',
                  params: ({ context }) => ({
                    event: 'instance_restarting',
                    data: { reason: context.lastRestart?.reason ?? 'operator', expectedDowntimeMs: context.policy.expectedDowntimeMs },
                  }),
                },
              ],
              after: { restartDelay: 'running' },
              on: { LOGOUT: 'running.loggingOut' },
            },
            loggedOut: {
              description: 'No link (logged out, unlinked on the phone, auth failure): a restart shows a new QR.',
              meta: { status: 'disconnected' },
              tags: 'offline',
              entry: [raise({ type: 'RESTART_SETTLED' }), assign({ qr: null, pairingCode: null })],
              on: { ORDERED_RESTART: 'restarting' },
            },
          },
        },
        pause: {
          description: 'The v2 pause of an ordered restart.',
          initial: 'idle',
          states: {
            idle: { description: 'Not paused.', on: { ORDERED_RESTART: 'paused' } },
            paused: {
              description: '/api/v2/* answers 503 QUEUE_PAUSED until connected, loggedOut, quarantined or the ceiling.',
              tags: 'paused',
              on: {
                RESTART_SETTLED: { target: 'idle', actions: { type: 'trace', params: { kind: 'pause_ended', by: 'settled' } } },
              },
              after: {
                orderedRestartHard: { target: 'idle', actions: { type: 'trace', params: { kind: 'pause_ended', by: 'ceiling' } } },
              },
            },
          },
        },
      },
    },
    stopped: {
      description: 'Final: the session is destroyed (the link is kept).',
      type: 'final',
      meta: { status: 'disconnected' },
      tags: 'offline',
    },
  },
});

// ---- reading a snapshot -------------------------------------------------------------------------------------

export type InstanceSnapshot = SnapshotFrom<typeof instanceMachine>;

/** The SPEC.md status value of the current state. */
export function instanceStatus(snapshot: InstanceSnapshot): InstanceStatus {
  for (const meta of Object.values(snapshot.getMeta())) {
    if (meta?.status) return meta.status;
  }
  return 'disconnected';
}

/** The one health tag of the current state. */
export function healthOf(snapshot: InstanceSnapshot): HealthTag {
  return HEALTH_TAGS.find((t) => snapshot.hasTag(t)) ?? 'offline';
}

export type HealthCounts = { total: number } & Record<HealthTag, number>;

/** `instances` of the Health object: every snapshot falls in exactly one bucket besides `total`. */
export function healthCounts(snapshots: Iterable<InstanceSnapshot>): HealthCounts {
  const counts: HealthCounts = { total: 0, online: 0, offline: 0, starting: 0, degraded: 0, quarantined: 0 };
  for (const s of snapshots) {
    counts.total++;
    counts[healthOf(s)]++;
  }
  return counts;
}

/** True while an ordered restart holds /api/v2/* (answer 503 QUEUE_PAUSED). */
export const isPaused = (snapshot: InstanceSnapshot): boolean => snapshot.hasTag('paused');

/** The QR to show on /api/qr: only while waiting for a scan and once the session rendered one. */
export function currentQr(snapshot: InstanceSnapshot): { dataUrl: string; at: number } | null {
  const qr = snapshot.context.qr;
  return instanceStatus(snapshot) === 'waiting_qr' && qr?.dataUrl ? { dataUrl: qr.dataUrl, at: qr.at } : null;
}

/** A secret-free view for /debug/actors: presence and times of QR and pairing code, never their values. */
export function summarize(snapshot: InstanceSnapshot) {
  const c = snapshot.context;
  return {
    instanceId: c.instanceId,
    status: instanceStatus(snapshot),
    health: healthOf(snapshot),
    paused: isPaused(snapshot),
    phoneNumber: c.phoneNumber,
    browser: { ...c.browser },
    probeFailStreak: c.probeFailStreak,
    qr: { present: c.qr !== null, at: c.qr?.at ?? null },
    pairingCode: { present: c.pairingCode !== null, at: c.pairingCode?.at ?? null },
    waState: c.waState,
    loading: c.loading,
    lastError: c.lastError,
    lastDisconnect: c.lastDisconnect,
    recentFailures: c.recentFailures.length,
    backoffMs: snapshot.hasTag('degraded') ? c.backoffMs : null,
    lastRestart: c.lastRestart,
    policy: c.policy,
  };
}

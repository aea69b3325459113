/**
 * Types, policy and pure helpers of the instance machine (machines/instance.machine.ts): its input, context,
 * events, notify/trace payloads, backoff and jitter arithmetic. Not a machine itself.
 */
import { fromCallback } from 'xstate';
import type { BrowserHealth, DriverErrorCode, WAState } from '../src/drivers/contract.js';
import type { AskEnvelope, InstanceAsk, NetworkAsk } from '../src/actors/port.js';
import type { Job } from '../src/queue/job.js';
import type { QueueMode, QuietHours } from '../src/queue/settings.js';
import type { CallEnvelope } from '../src/actors/call.js';

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

/**
 * Disconnect reasons that mean another client now runs this session (whatsapp-web.js `CONFLICT`: WhatsApp Web
 * opened elsewhere for the number, or another node took the instance over). The link is intact, but an automatic
 * restart would take the session back from whoever holds it now, and they would take it back in turn.
 */
export const DISPLACED_REASONS: readonly string[] = ['CONFLICT'];

export interface InstanceContext {
  instanceId: string;
  policy: InstancePolicy;
  /** how the planner runs the queue now (its `QUEUE_MODE` reports) */
  queueMode: QueueMode;
  /** Digits of the linked account (wid without `@c.us`), kept after a disconnect; null until first ready. */
  phoneNumber: string | null;
  wid: string | null;
  /** As SPEC.md's Status `browser`: failStreak = session failures in a row (reset after `stableMs` connected). */
  browser: { alive: boolean; failStreak: number; lastOkAt: number };
  /** The driver's own count of failed browser probes (its `browser_health`). */
  probeFailStreak: number;
  /**
   * Latest QR while not linked: `raw`, the text to encode, as the driver gave it (whatsapp-web.js and the
   * sandbox alike). It is drawn as a PNG only when someone reads it (src/qr-image.ts). Secret: never in
   * summaries or logs.
   */
  qr: { raw: string; at: number } | null;
  /** Latest pairing code while not linked; secret: never in summaries or logs. */
  pairingCode: { code: string; at: number } | null;
  /**
   * The latest request for a pairing code that the driver refused or failed (its error's code when it gave one,
   * else null): the operator's request waiting for a code is answered with it instead of waiting out its deadline.
   * `askId`: the port's ask that requested it (null when none did): a failure answers that request only, never
   * another one waiting at the same time (its own call may still bring a code).
   */
  pairingCodeFailed: { code: DriverErrorCode | null; message: string; askId: string | null } | null;
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
  | { type: 'qr'; qr: string; at: number }
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
  /** `unreachable`: the start never reached the network (src/drivers/contract.ts networkUnreachable) */
  | { type: 'SESSION_FAILED'; message: string; at: number; unreachable?: boolean }
  | { type: 'LOGGED_OUT'; at: number }
  | { type: 'LOGOUT_FAILED'; message: string; at: number }
  | { type: 'PAIRING_CODE_FAILED'; message: string; code: DriverErrorCode | null; at: number; askId: string | null };

export type OperatorEvent =
  | { type: 'ORDERED_RESTART'; reason?: string }
  | { type: 'LOGOUT' }
  | { type: 'STOP' }
  | { type: 'REQUEST_PAIRING_CODE'; phoneNumber: string; askId?: string };

export type InternalEvent = { type: 'FAILURE_EXPIRED'; failureId: number } | { type: 'RESTART_SETTLED' };

/** The planner asks the dispatcher to send one claimed job. */
export interface DispatchEnvelope {
  type: 'DISPATCH';
  askId: string;
  replyTo: string;
  job: Job;
  /** the instance's quiet hours when the job was claimed: checked again once its media is ready (src/queue/dispatch.ts) */
  quietHours: QuietHours | null;
}

/** Events the instance actor's children send it. */
export type ChildEvent =
  | DispatchEnvelope
  | CallEnvelope
  | { type: 'QUEUE_MODE'; mode: QueueMode };

/** Events the instance actor passes on to its planner. */
export type PlannerNotice = { type: 'SENDABLE'; on: boolean } | { type: 'STORE'; degraded: boolean; since: number };

/** The port's asks, as the instance actor receives them. */
export type AskEvent = AskEnvelope<InstanceAsk>;

export type InstanceEvent = SessionEvent | OperatorEvent | InternalEvent | AskEvent | ChildEvent | PlannerNotice;

/** What the machine tells its `session` child to do with the session. */
export type SessionControl = { type: 'LOGOUT' } | { type: 'REQUEST_PAIRING_CODE'; phoneNumber: string; askId?: string };
/** Everything the `session` child receives: its controls, the port's network asks, the dispatcher's calls. */
export type SessionCommand = SessionControl | AskEnvelope<NetworkAsk> | CallEnvelope;
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
export function nextRandom(state: number): [number, number] {
  const next = (state + 0x6d2b79f5) >>> 0;
  let t = next;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return [((t ^ (t >>> 14)) >>> 0) / 4294967296, next];
}

export function seedFrom(text: string): number {
  let h = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export function resolvePolicy(input: InstanceInput): InstancePolicy {
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
export function failureOf(e: InstanceEvent): { reason: FailureReason; detail: string; at: number | null } {
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
export function absorb(context: InstanceContext, event: InstanceEvent): Partial<InstanceContext> {
  if (!('at' in event)) return {};
  const seen = { ...context.browser, alive: true, lastOkAt: Math.max(context.browser.lastOkAt, event.at) };
  switch (event.type) {
    case 'qr':
      return { browser: seen, qr: { raw: event.qr, at: event.at } };
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

export const LC = '#instance.active.lifecycle';

export const notifyDisconnected = {
  type: 'notify',
  params: ({ event }: { event: InstanceEvent }): NotifyParams => ({
    event: 'disconnected',
    data: { reason: event.type === 'disconnected' ? event.reason : 'unknown' },
  }),
} as const;

/**
 * The operator's logout takes the instance's link away: its receivers are told as of an unlink on the phone. Not
 * while it waits for a scan (no link to take); once, on the way into `loggingOut`, which ignores the driver's own
 * `disconnected` and whose session's start reports nothing (found from the outside: no event at all, and a logout
 * during a restart ended with the new session's `change_state CONNECTED`).
 */
export const notifyLoggedOut = { type: 'notify', params: { event: 'disconnected', data: { reason: 'LOGOUT' } } } as const;

/** Placeholder until the runtime provides src/actors/session.ts; it never sends anything. */
export const idleSession = fromCallback<SessionCommand, SessionInput>(() => undefined);


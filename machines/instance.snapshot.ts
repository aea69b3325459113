/**
 * Reading a snapshot of the instance machine (machines/instance.machine.ts): the SPEC.md status, the one
 * health tag per state, the QR to show, the view the instance answers a `view` ask with (`viewOf`), and the
 * secret-free summary for /debug/actors. Not a machine itself
 * (the diagrams script only reads `*.machine.ts`).
 */
import type { StateValue } from 'xstate';
import { HEALTH_TAGS, type HealthTag, type InstanceContext, type InstanceStatus, type InstanceTag } from './instance.types.js';
import type { InstanceView } from '../src/actors/port.js';

export type { InstanceView };

/**
 * What is read here of a snapshot of the instance machine (`SnapshotFrom<typeof instanceMachine>` has it).
 * Written out rather than derived from the machine so that this module does not import the machine (which
 * re-exports this one): no import circle.
 */
export interface InstanceSnapshot {
  readonly status: 'active' | 'done' | 'error' | 'stopped';
  readonly output: unknown;
  readonly error: unknown;
  readonly value: StateValue;
  readonly context: InstanceContext;
  getMeta(): Record<string, { status?: InstanceStatus } | undefined>;
  hasTag(tag: InstanceTag): boolean;
}

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

/** The QR to show on /api/qr (its text; the edge draws it): only while waiting for a scan. */
export function currentQr(snapshot: InstanceSnapshot): { raw: string; at: number } | null {
  const qr = snapshot.context.qr;
  return instanceStatus(snapshot) === 'waiting_qr' && qr ? qr : null;
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



/** The active leaf states of a (nested, parallel) state value, as dotted paths without the `active` root. */
export function leafStates(value: unknown, prefix = ''): string[] {
  if (typeof value === 'string') return [`${prefix}${value}`];
  if (!value || typeof value !== 'object') return [];
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) =>
    leafStates(v, prefix === '' && k === 'active' ? '' : `${prefix}${k}.`));
}

/** The view of an instance whose actor is not running (stopped, or not yet spawned). */
export function stoppedView(phoneNumber: string | null): InstanceView {
  return {
    status: 'disconnected', connected: false, phoneNumber, browser: { alive: false, failStreak: 0, lastOkAt: 0 },
    qrText: null, detail: 'stopped', paused: false, quarantined: false, lastError: null, queueMode: 'disabled',
  };
}

export function viewOf(s: InstanceSnapshot): InstanceView {
  const status = instanceStatus(s);
  const { browser, lastError } = s.context;
  return {
    status,
    connected: status === 'connected',
    phoneNumber: s.context.phoneNumber,
    browser: { alive: browser.alive, failStreak: browser.failStreak, lastOkAt: browser.lastOkAt },
    qrText: currentQr(s)?.raw ?? null,
    detail: leafStates(s.value).join(', '),
    paused: isPaused(s),
    quarantined: s.hasTag('quarantined'),
    lastError: lastError ? `${lastError.reason}: ${lastError.detail}` : null,
    queueMode: s.context.queueMode,
  };
}

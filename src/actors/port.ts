/**
 * The one way into an instance: its port. A route (or the operator service) holds the `InstancePort` of the
 * instance its credential names and `ask`s it: an event with a reply-to, awaited under the route's gateway
 * deadline (`DEADLINES`, SPEC.md "Limits"); a deadline passed is `504 INSTANCE_TIMEOUT`, an instance this node
 * does not run is `502 INSTANCE_UNREACHABLE` (nothing was accepted).
 *
 * Asks and replies are plain, serialisable data (no closures, no class instances): the local port carries them
 * as actor events (src/actors/local-port.ts); a port to another node can carry them over a network unchanged.
 * A refusal travels as `{ ok: false, error: { code, message, data } }` and becomes the DomainError it was.
 */
import { DriverError, type Driver } from '../drivers/contract.js';
import { driverErrorToDomain } from '../drivers/domain-errors.js';
import { DomainError, instanceOffline, internalError, queuePaused, queueStoreUnavailable, type ErrorCode } from '../errors.js';
import { isConnectionError, isPoolBusy, isStatementTimeout, StoreFault, storeFaultOf, StoreTimedOut, StoreUnreachable } from '../store/health.js';
import { CommitOutcomeUnknown } from '../store/pool.js';
import type { Job, QueueCounts } from '../queue/job.js';
import type { AcceptOutcome, AcceptRequest, DirectOutcome, DirectSend } from '../queue/types.js';
import type { LimitsObject } from '../queue/windows.js';
import type { Instance } from '../store/instances.js';
import type { BrowserHealth } from '../drivers/contract.js';
import type { QueueMode } from '../queue/settings.js';

/** Gateway deadlines of SPEC.md "Limits" (ms). */
export const DEADLINES = { send: 60_000, read: 30_000, interaction: 30_000, queueStatus: 10_000, upload: 120_000, operator: 10_000 } as const;

/** The driver operations a route may ask for (sending goes through the queue, lifecycle through the machine). */
export const NETWORK_OPS = [
  'react', 'editMessage', 'deleteMessage', 'sendSeen', 'sendStateTyping', 'sendStateRecording', 'clearState',
  'getChats', 'getChatById', 'fetchMessages', 'getMessageById', 'getContactById', 'getProfilePicUrl', 'getNumberId',
  'downloadMedia', 'getGroup', 'addParticipants', 'removeParticipants', 'promoteParticipants', 'demoteParticipants',
  'getInviteCode', 'revokeInvite', 'leaveGroup', 'setSubject', 'setDescription',
] as const satisfies readonly (keyof Driver)[];
export type NetworkOp = (typeof NETWORK_OPS)[number];
type DriverCall<K extends NetworkOp> = Driver[K] extends (...args: infer A) => Promise<infer R> ? { args: A; result: R } : never;

/**
 * A network operation: `args` are the driver's arguments, `label` names it in errors (`chat.seen failed`),
 * `notFound` is what the driver's NOT_FOUND means for the route that asks (e.g. 404 MESSAGE_NOT_FOUND).
 */
export type NetworkAsk = {
  [K in NetworkOp]: { type: 'network'; op: K; args: DriverCall<K>['args']; label?: string; notFound?: ReplyError };
}[NetworkOp];

export interface QueueSummary {
  mode: QueueMode;
  limits: LimitsObject;
  /** counts kept by the queue as it changes them (no query) */
  counts: QueueCounts;
  waiting: number;
  nextAt: number | null;
  epoch: number;
}

/**
 * What a send prepared on another node assumed of the instance (`queue.accept`'s `gate`): the number it sends
 * from (the route refused it as a recipient). The owner checks it as it accepts, in the same turn, with the
 * gate of the send's API: v2's (`v2GateRefusal`, refused as such), or with `v1` what a v1 send through the queue
 * needs (connected or restarting, the persistent queue on), whose refusals v1 words itself: answered stale, so
 * that the route goes the whole way with the owner's view. One ask instead of a view and then the acceptance.
 */
export interface SendGate {
  phoneNumber: string | null;
  v1?: boolean;
}

/** A gated acceptance whose assumption no longer holds: nothing was accepted; the owner's view to prepare it again. */
export interface GateStaleReply {
  kind: 'stale';
  view: InstanceView;
}

export type QueueAsk =
  | { type: 'queue.accept'; request: AcceptRequest; gate?: SendGate }
  /**
   * an idempotent v2 send the instance's gate refused (offline, or an ordered restart): its replay when its key
   * names a job already, else null (src/http/routes/queue-gate.ts `gatedAccept`)
   */
  | { type: 'queue.replay'; request: AcceptRequest }
  /** several sends as one batch, in their order (a send-bulk): one outcome each */
  | { type: 'queue.acceptMany'; requests: AcceptRequest[] }
  | { type: 'queue.cancel'; jobId: string; reason?: string }
  | { type: 'queue.replan'; reason: string }
  | { type: 'queue.summary' }
  | { type: 'queue.awaitOutcome'; jobId: string; timeoutMs: number }
  | { type: 'queue.releaseCaller'; jobId: string }
  /** the process whose synchronous v1 callers waited for jobs of this queue is gone (src/cluster/lost-callers.ts) */
  | { type: 'queue.callerGone'; callerBoot: string }
  | { type: 'queue.direct'; send: DirectSend };

export type OperatorAsk =
  | { type: 'view' }
  | { type: 'restart'; reason: string }
  | { type: 'logout' }
  | { type: 'pairingCode'; phoneNumber: string }
  /** the QR (and pairing code) to link with, from the instance's snapshot: secrets, for the operator only */
  | { type: 'qr' }
  /** the record changed (operator API); `replan` when a limit moved */
  | { type: 'settings'; instance: Instance; replan: boolean }
  /** stop taking work, finish an in-flight dispatch and persist it (before a stop or a hand-over) */
  | { type: 'drain' };

export type { QueueMode };
export type InstanceAsk = NetworkAsk | QueueAsk | OperatorAsk;

/** The asks an instance's planner serves (machines/instance.asks.ts `routeAsk` sends it every ask it does not answer or raise). */
export type PlannerAsk = QueueAsk | Extract<OperatorAsk, { type: 'settings' | 'drain' }>;
export const isPlannerAsk = (ask: InstanceAsk): ask is PlannerAsk => ask.type.startsWith('queue.') || ask.type === 'settings' || ask.type === 'drain';

/** What each ask is answered with. */
export type ReplyOf<A extends InstanceAsk> = A extends { type: 'network'; op: infer K extends NetworkOp }
  ? DriverCall<K>['result']
  : A extends { type: 'queue.accept'; gate: SendGate } ? (AcceptOutcome & { limits: LimitsObject }) | GateStaleReply
  : A extends { type: 'queue.accept' } ? AcceptOutcome & { limits: LimitsObject }
  : A extends { type: 'queue.replay' } ? (AcceptOutcome & { limits: LimitsObject }) | null
  : A extends { type: 'queue.acceptMany' } ? AcceptOutcome[]
  : A extends { type: 'queue.cancel' } ? Job
  : A extends { type: 'queue.replan' } ? { affected: number; epoch: number }
  : A extends { type: 'queue.summary' } ? QueueSummary
  : A extends { type: 'queue.awaitOutcome' } ? Job | null
  : A extends { type: 'queue.callerGone' } ? number
  : A extends { type: 'queue.direct' } ? DirectOutcome
  : A extends { type: 'view' } ? InstanceView
  : A extends { type: 'qr' } ? LinkView
  : A extends { type: 'pairingCode' } ? PairingCode
  : null;

/** What an instance tells about itself (the `view` ask; machines/instance.snapshot.ts `viewOf`). */
export interface InstanceView {
  status: 'initializing' | 'waiting_qr' | 'authenticated' | 'connected' | 'disconnected' | 'error';
  connected: boolean;
  phoneNumber: string | null;
  browser: BrowserHealth;
  /**
   * the latest QR's text while waiting for a link, else null: a secret, drawn as a PNG data URL only where it is
   * answered (src/qr-image.ts `qrImage`)
   */
  qrText: string | null;
  /** internal state for operators: e.g. 'backoff', 'quarantined', 'restarting' */
  detail: string;
  /** ordered restart in progress: /api/v2/* answers 503 QUEUE_PAUSED */
  paused: boolean;
  quarantined: boolean;
  lastError: string | null;
  /** how the queue runs right now */
  queueMode: QueueMode;
}

/**
 * What every v2 send is refused with before anything else (SPEC.md: an ordered restart, the queue's mode, the
 * connection), in that order; null when it may be accepted. The pause first: during an ordered restart every
 * /api/v2/* route answers 503 QUEUE_PAUSED, the sends too whatever the queue's mode (a send with the queue
 * disabled was 503 QUEUE_STORE_UNAVAILABLE while the instance's other v2 routes answered QUEUE_PAUSED).
 */
export function v2GateRefusal(view: InstanceView): DomainError | null {
  if (view.paused) return queuePaused();
  if (view.queueMode !== 'pg') return queueStoreUnavailable(view.queueMode);
  if (!view.connected) return instanceOffline({ status: view.status, detail: view.detail, lastError: view.lastError });
  return null;
}

/** Whether a v1 send may go through the queue as the view says (else the v1 route answers from the view). */
export const v1Queues = (view: InstanceView): boolean => (view.connected || view.paused) && view.queueMode === 'pg';

/**
 * How to link the instance (the `qr` ask): the QR while the instance waits for a scan, else nulls; the latest
 * pairing code (with its time) while not linked. Secrets: answered to the operator, never logged.
 */
export interface LinkView {
  status: InstanceView['status'];
  /** the QR's text as the driver gave it (the route draws it: src/qr-image.ts `qrImage`) */
  raw: string | null;
  pairingCode: PairingCode | null;
}

/** A pairing code and when the session received it (the `pairingCode` ask answers one newer than the ask). */
export interface PairingCode {
  code: string;
  at: number;
}

/** An ask of an instance its owner stopped for a delete (src/cluster/hand-overs.ts): nothing was done. */
export const BEING_DELETED = 'the instance is being deleted; nothing was accepted';

/** A refusal as data. */
export interface ReplyError {
  code: ErrorCode;
  message: string;
  data?: Record<string, unknown>;
  extra?: Record<string, unknown>;
  /**
   * the store failed under the ask: rethrown as the store's own error, so the answer says what it says today;
   * `deleting`: the owner stopped the instance for its delete (src/cluster/hand-overs.ts), no other owner comes
   */
  cause?: 'store_unreachable' | 'store_timeout' | 'store_fault' | 'commit_unknown' | 'deleting';
}

export type AskReply = { ok: true; value: unknown } | { ok: false; error: ReplyError };

export interface InstancePort {
  readonly instanceId: string;
  /** Ask and await the reply; throws the DomainError of a refusal, INSTANCE_TIMEOUT after `deadlineMs`. */
  ask<A extends InstanceAsk>(ask: A, deadlineMs: number): Promise<ReplyOf<A>>;
  /**
   * Where asking the view first costs a round trip (an instance on another node whose owner gates a send
   * itself): the last view seen of the instance, to prepare a send (v2 or v1) with and hand it over in one gated
   * ask (`queue.accept` with a `gate`). Undefined: ask the view first.
   */
  lastView?(): InstanceView | undefined;
  /**
   * Where the view is read in this process (the instance actor's snapshot, src/actors/local-port.ts): the view
   * at once, what `ask({type: 'view'})` answers, without a promise; throws INSTANCE_UNREACHABLE as that ask
   * rejects. Absent: ask.
   */
  viewNow?(): InstanceView;
}

/** The event an actor receives for an ask: the ask, its id and where the reply goes (a system id). */
export interface AskEnvelope<A = InstanceAsk> {
  type: 'ASK';
  askId: string;
  replyTo: string;
  ask: A;
}

/** The event that carries a reply to `replyTo`. */
export interface ReplyEvent {
  type: 'REPLY';
  askId: string;
  reply: AskReply;
}

export const okReply = (value: unknown): AskReply => ({ ok: true, value: value ?? null });

export function errorReply(err: DomainError): AskReply {
  const extra = Object.keys(err.extra).length > 0 ? { extra: err.extra } : {};
  return { ok: false, error: { code: err.code, message: err.message, data: err.data, ...extra } };
}

/**
 * Anything an actor failed with, as a reply: a DomainError as it is, the store's failures with their cause,
 * anything else (logged by `report`) as 500 INTERNAL_ERROR. `storeDegraded` is whether the store's health probe
 * finds PostgreSQL unreachable now: a pool whose every connection stayed busy past its deadline while the probe
 * (on its own connection) finds PostgreSQL answering is busy, not unreachable, as src/http/translate.ts answers it.
 */
export function failureReply(err: unknown, report: (err: unknown) => void, storeDegraded?: () => boolean): AskReply {
  if (err instanceof DomainError) return errorReply(err);
  if (err instanceof CommitOutcomeUnknown) return { ok: false, error: { code: 'INSTANCE_TIMEOUT', message: err.message, cause: 'commit_unknown' } };
  // the network's error, never the store's, whatever its text says (src/http/translate.ts)
  if (err instanceof DriverError) return errorReply(driverErrorToDomain(err, 'network call', {}));
  if (isPoolBusy(err) && storeDegraded?.() === false) {
    return { ok: false, error: { code: 'QUEUE_STORE_UNAVAILABLE', message: 'every connection to PostgreSQL was busy', cause: 'store_timeout' } };
  }
  if (isConnectionError(err)) return { ok: false, error: { code: 'QUEUE_STORE_UNAVAILABLE', message: messageOf(err), cause: 'store_unreachable' } };
  // PostgreSQL cancelled a statement (57014): nothing was written; answered 503 store_timeout where the answer is written
  if (isStatementTimeout(err)) return { ok: false, error: { code: 'QUEUE_STORE_UNAVAILABLE', message: 'PostgreSQL cancelled the statement', cause: 'store_timeout' } };
  const fault = storeFaultOf(err);
  if (fault !== null) {
    report(err); // the operator must hear of a full disk: logged where reported, with PostgreSQL's own message
    return { ok: false, error: { code: 'QUEUE_STORE_UNAVAILABLE', message: fault, cause: 'store_fault' } };
  }
  report(err);
  return errorReply(internalError());
}

/** The error a refusal stands for, to throw where the answer is written (src/http/translate.ts maps it). */
export function replyErrorToThrow(e: ReplyError): Error {
  if (e.cause === 'commit_unknown') return new CommitOutcomeUnknown(new Error(e.message));
  if (e.cause === 'store_unreachable') return new StoreUnreachable(e.message);
  if (e.cause === 'store_timeout') return new StoreTimedOut(e.message);
  if (e.cause === 'store_fault') return new StoreFault(e.message);
  return new DomainError(e.code, e.message, e.data ?? {}, e.extra ?? {});
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

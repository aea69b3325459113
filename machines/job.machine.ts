/**
 * The job lifecycle: the ONLY definition of job states and transitions (SPEC.md "Job states", "Job transitions").
 *
 * There is no actor per job. PostgreSQL holds each job's state; the runtime asks `applyJobEvent(state, event)`
 * what the next state is and which `message.*` event the transition emits, then persists it with a conditional
 * `UPDATE jobs SET state = <next> WHERE id = $1 AND state = <from>` (zero rows = someone else moved it first).
 * `applyJobEvent` is computed with XState's pure `transition()`, so the statechart below is what decides,
 * and the diagrams generated from it are the truth.
 *
 * Effects are declared, never executed here: `emitQueueEvent({event})` names the webhook event a transition
 * produces and `recordConfidence({confidence})` the `deliveryConfidence` it stores. Their implementations are
 * empty; the runtime reads them from the action list.
 */
import { initialTransition, setup, transition } from 'xstate';

export const JOB_STATES = ['queued', 'scheduled', 'sending', 'sent', 'failed', 'unknown', 'cancelled', 'expired'] as const;
export type JobState = (typeof JOB_STATES)[number];

export const QUEUE_EVENT_NAMES = ['message.queued', 'message.sent', 'message.failed', 'message.unknown', 'message.cancelled', 'message.expired'] as const;
export type QueueEventName = (typeof QUEUE_EVENT_NAMES)[number];

export const DELIVERY_CONFIDENCES = ['confirmed', 'assumed', 'unknown'] as const;
export type DeliveryConfidence = (typeof DELIVERY_CONFIDENCES)[number];

/**
 * Policy the states declare (read back below as the state lists the runtime uses):
 * - `counted`: counts against the hourly and daily windows (SPEC.md "Limits": sent, sending or unknown);
 * - `requeueable`: `POST /api/v2/messages/<jobId>/requeue` accepts it (the old job stays, a new one is made).
 */
type JobTag = 'counted' | 'requeueable';

/**
 * Events the runtime feeds in. They carry no data: the columns (scheduledAt, messageId, resultCode, ...) are
 * written by the runtime alongside the state, the machine only decides whether the move is allowed. Every
 * event here is sent by src/queue (test/unit/job-machine.test.ts names the sender of each).
 */
export const JOB_EVENT_TYPES = [
  /** Acceptance gave the new job its first slot (the job is inserted in the state this leads to). */
  'PLANNED',
  /** A re-plan (limit change, `POST /queue/replan`, backlog, a failed dispatch re-check) assigned a (new) slot. */
  'REPLANNED',
  /** A re-plan found no slot before `expiresAt`: wait unplanned until a limit change frees one or the TTL ends. */
  'UNSCHEDULED',
  /** The dispatcher's re-check passed: committed as `sending` before the network is called. */
  'DISPATCH',
  /** The network returned a message id. */
  'RESULT_CONFIRMED',
  /** Sent, but no id came back (forward always ends here). */
  'RESULT_ASSUMED',
  /** Provably not sent. */
  'RESULT_FAILED',
  /** Outcome unverifiable (for example the call timed out). */
  'RESULT_UNKNOWN',
  /** The call never reached the network (the session went away between the claim and the call): waits again. */
  'RETURNED',
  /** Found in `sending` at start-up or after its owner node died: never resent. */
  'RECOVERED_SENDING',
  /** The same, but still `preparing` (its media was being read or fetched): the network was never called. */
  'RECOVERED_UNSENT',
  /** `DELETE /api/v2/messages/<jobId>` before sending started. */
  'CANCEL',
  /** TTL elapsed before a slot came free, or its synchronous v1 caller died with an earlier process. */
  'EXPIRE',
] as const;
export type JobEventType = (typeof JOB_EVENT_TYPES)[number];
export interface JobEvent {
  readonly type: JobEventType;
}


const emit = (event: QueueEventName) => ({ type: 'emitQueueEvent', params: { event } }) as const;
const confidence = (c: DeliveryConfidence) => ({ type: 'recordConfidence', params: { confidence: c } }) as const;

const cancelAndExpire = {
  CANCEL: { target: '#job.cancelled', actions: emit('message.cancelled') },
  EXPIRE: { target: '#job.expired', actions: emit('message.expired') },
} as const;

export const jobMachine = setup({
  types: {
    events: {} as JobEvent,
    tags: {} as JobTag,
  },
  actions: {
    // Declarations only: the runtime performs these effects after the conditional UPDATE succeeded.
    emitQueueEvent: (_args, _params: { event: QueueEventName }) => {},
    recordConfidence: (_args, _params: { confidence: DeliveryConfidence }) => {},
  },
}).createMachine({
  id: 'job',
  description: 'One send job. Persisted in PostgreSQL; transitions are conditional updates.',
  initial: 'queued',
  // Runs once, on acceptance: every accepted send emits message.queued, slot or not (there is no message.scheduled).
  entry: emit('message.queued'),
  states: {
    queued: {
      description: 'Persisted, no slot assigned.',
      on: {
        PLANNED: { target: 'scheduled' },
        REPLANNED: { target: 'scheduled' },
        ...cancelAndExpire,
      },
    },
    scheduled: {
      description: 'Slot assigned, waiting for scheduledAt.',
      on: {
        REPLANNED: { target: 'scheduled', reenter: true },
        UNSCHEDULED: { target: 'queued' },
        DISPATCH: { target: 'sending' },
        ...cancelAndExpire,
      },
    },
    sending: {
      description: 'Committed before the network call. Cannot be cancelled; never sent twice.',
      tags: ['counted'],
      on: {
        RESULT_CONFIRMED: { target: 'sent', actions: [confidence('confirmed'), emit('message.sent')] },
        RESULT_ASSUMED: { target: 'sent', actions: [confidence('assumed'), emit('message.sent')] },
        RESULT_FAILED: { target: 'failed', actions: emit('message.failed') },
        RESULT_UNKNOWN: { target: 'unknown', actions: [confidence('unknown'), emit('message.unknown')] },
        RECOVERED_SENDING: { target: 'unknown', actions: [confidence('unknown'), emit('message.unknown')] },
        RECOVERED_UNSENT: { target: 'failed', actions: emit('message.failed') },
        RETURNED: { target: 'scheduled' },
      },
    },
    sent: { type: 'final', tags: ['counted'], description: 'Delivered; see deliveryConfidence.' },
    failed: { type: 'final', tags: ['requeueable'], description: 'Provably not sent.' },
    unknown: { type: 'final', tags: ['counted'], description: 'Dispatched, outcome unverifiable. Needs a human; never retried.' },
    cancelled: { type: 'final', tags: ['requeueable'], description: 'Cancelled before dispatch.' },
    expired: { type: 'final', tags: ['requeueable'], description: 'TTL elapsed before a slot came free.' },
  },
});

export interface JobStep {
  readonly next: JobState;
  /** The webhook event this transition emits, or null. */
  readonly emits: QueueEventName | null;
  /** The deliveryConfidence to store with the new state, or null to leave it unset. */
  readonly deliveryConfidence: DeliveryConfidence | null;
}

export function isJobState(value: unknown): value is JobState {
  return typeof value === 'string' && (JOB_STATES as readonly string[]).includes(value);
}

const isQueueEventName = (v: unknown): v is QueueEventName => typeof v === 'string' && (QUEUE_EVENT_NAMES as readonly string[]).includes(v);
const isConfidence = (v: unknown): v is DeliveryConfidence => typeof v === 'string' && (DELIVERY_CONFIDENCES as readonly string[]).includes(v);

type JobSnapshot = ReturnType<typeof jobMachine.resolveState>;

// Snapshots are immutable, so one per state is enough; re-plans apply thousands of events.
const snapshots = new Map<JobState, JobSnapshot>(JOB_STATES.map((s) => [s, jobMachine.resolveState({ value: s })]));

function readActions(actions: ReadonlyArray<{ type: string; params: unknown }>): Omit<JobStep, 'next'> {
  let emits: QueueEventName | null = null;
  let deliveryConfidence: DeliveryConfidence | null = null;
  for (const a of actions) {
    const p = a.params;
    if (typeof p !== 'object' || p === null) continue;
    if (a.type === 'emitQueueEvent' && 'event' in p && isQueueEventName(p.event)) emits = p.event;
    if (a.type === 'recordConfidence' && 'confidence' in p && isConfidence(p.confidence)) deliveryConfidence = p.confidence;
  }
  return { emits, deliveryConfidence };
}

/**
 * The next state of a job in `state` receiving `event`, and what the move emits; null when the machine does not
 * allow the event there (the runtime refuses: cancel of a `sending` job, dispatch of a cancelled one, ...).
 */
export function applyJobEvent(state: JobState, event: JobEvent): JobStep | null {
  // The machine has no context and no guards, so (state, event type) decides everything: memoize, because a
  // re-plan of 5,000 jobs would otherwise spend ~35 µs per job in the interpreter.
  const key = `${state}|${event.type}`;
  const hit = memo.get(key);
  if (hit !== undefined) return hit;
  const step = computeStep(state, event);
  memo.set(key, step);
  return step;
}

const memo = new Map<string, JobStep | null>();

function computeStep(state: JobState, event: JobEvent): JobStep | null {
  const from = snapshots.get(state);
  if (!from || from.status !== 'active' || !from.can(event)) return null;
  const [to, actions] = transition(jobMachine, from, event);
  const next = to.value;
  if (!isJobState(next)) throw new Error(`job machine produced a non-job state: ${String(next)}`);
  return Object.freeze({ next, ...readActions(actions) });
}

/** What acceptance does: the state a new job is inserted in and the event it emits (`message.queued`). */
export function acceptJob(): JobStep {
  const [snapshot, actions] = initialTransition(jobMachine);
  const next = snapshot.value;
  if (!isJobState(next)) throw new Error(`job machine starts in a non-job state: ${String(next)}`);
  return { next, ...readActions(actions) };
}

/** The `from` states in which `type` is allowed: the `WHERE state IN (...)` of a conditional update. */
export function statesAccepting(type: JobEventType): JobState[] {
  return JOB_STATES.filter((s) => applyJobEvent(s, { type }) !== null);
}

/**
 * One event applied to many jobs in one statement (a re-plan's slots, recovery at start): the states it is
 * allowed in and the step, which must be the same from each of them, or the set-based UPDATE could not be
 * written. Throws when the machine no longer allows that (a test runs every bulk event).
 */
export function bulkJobEvent(type: JobEventType): { from: JobState[]; step: JobStep } {
  const from = statesAccepting(type);
  const steps = from.map((s) => applyJobEvent(s, { type }));
  const step = steps[0];
  if (!step || steps.some((x) => x?.next !== step.next || x.emits !== step.emits || x.deliveryConfidence !== step.deliveryConfidence)) {
    throw new Error(`job event ${type} does not lead to one step from every state that allows it`);
  }
  return { from, step };
}

// ---- state lists, read from the statechart (nothing below is written by hand)

const tagged = (tag: JobTag) => JOB_STATES.filter((s) => snapshots.get(s)?.hasTag(tag) === true);

/** Final states: nothing moves a job out of them. */
export const TERMINAL_JOB_STATES: readonly JobState[] = JOB_STATES.filter((s) => snapshots.get(s)?.status === 'done');
/** Not final: what counts towards QUEUE_MAX_PENDING (waiting or being sent). */
export const PENDING_JOB_STATES: readonly JobState[] = JOB_STATES.filter((s) => !TERMINAL_JOB_STATES.includes(s));
/** Waiting for a slot or for its slot: what a re-plan moves, so what the planner mirrors. */
export const WAITING_JOB_STATES: readonly JobState[] = statesAccepting('REPLANNED');
/** Claimed for dispatch, the call maybe not made: what a call that never reached the network goes back from (RETURNED). */
export const CLAIMED_JOB_STATES: readonly JobState[] = statesAccepting('RETURNED');
/** `DELETE /api/v2/messages/<jobId>` accepts these. */
export const CANCELLABLE_JOB_STATES: readonly JobState[] = statesAccepting('CANCEL');
/** States that count against the hourly and daily windows (SPEC.md "Limits", rule 2). */
export const COUNTING_JOB_STATES: readonly JobState[] = tagged('counted');
/** `POST /api/v2/messages/<jobId>/requeue` accepts these; the old job stays as it is, a new job is created. */
export const REQUEUEABLE_JOB_STATES: readonly JobState[] = tagged('requeueable');
/** The outcomes GET /api/status and the queue summary count (totals and the last 24 h). */
export const OUTCOME_JOB_STATES = ['sent', 'failed', 'unknown'] as const satisfies readonly JobState[];
export type OutcomeState = (typeof OUTCOME_JOB_STATES)[number];

export function isTerminal(state: JobState): boolean {
  return TERMINAL_JOB_STATES.includes(state);
}

export function isWaiting(state: JobState): boolean {
  return WAITING_JOB_STATES.includes(state);
}

export function canRequeue(state: JobState): boolean {
  return REQUEUEABLE_JOB_STATES.includes(state);
}

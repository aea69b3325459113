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

export const TERMINAL_JOB_STATES = ['sent', 'failed', 'unknown', 'cancelled', 'expired'] as const satisfies readonly JobState[];
export type TerminalJobState = (typeof TERMINAL_JOB_STATES)[number];

/** Waiting for a slot or for its slot: what the planner plans and what counts towards QUEUE_MAX_PENDING. */
export const WAITING_JOB_STATES = ['queued', 'scheduled'] as const satisfies readonly JobState[];
/** States that count against the hourly and daily windows (SPEC.md "Limits", rule 2). */
export const COUNTING_JOB_STATES = ['sending', 'sent', 'unknown'] as const satisfies readonly JobState[];
/** `POST /api/v2/messages/<jobId>/requeue` accepts these; the old job stays as it is, a new job is created. */
export const REQUEUEABLE_JOB_STATES = ['failed', 'expired', 'cancelled'] as const satisfies readonly JobState[];

export type QueueEventName =
  | 'message.queued'
  | 'message.sent'
  | 'message.failed'
  | 'message.unknown'
  | 'message.cancelled'
  | 'message.expired';

export type DeliveryConfidence = 'confirmed' | 'assumed' | 'unknown';

/**
 * Events the runtime feeds in. They carry no data: the columns (scheduledAt, messageId, resultCode, ...) are
 * written by the runtime alongside the state, the machine only decides whether the move is allowed.
 */
export type JobEvent =
  /** The planner assigned the first slot. */
  | { type: 'PLANNED' }
  /** A re-plan (limit change, `POST /queue/replan`, backlog) assigned a (new) slot. */
  | { type: 'REPLANNED' }
  /** A re-plan found no slot before `expiresAt`: wait unplanned until a limit change frees one or the TTL ends. */
  | { type: 'UNSCHEDULED' }
  /** The dispatcher's re-check at `scheduledAt` failed: back in the queue with a new `scheduledAt`. */
  | { type: 'RESCHEDULED' }
  /** The dispatcher's re-check passed: committed as `sending` before the network is called. */
  | { type: 'DISPATCH' }
  /** The network returned a message id. */
  | { type: 'RESULT_CONFIRMED' }
  /** Sent, but no id came back (forward always ends here). */
  | { type: 'RESULT_ASSUMED' }
  /** Provably not sent. */
  | { type: 'RESULT_FAILED' }
  /** Outcome unverifiable (for example the call timed out). */
  | { type: 'RESULT_UNKNOWN' }
  /** The call never reached the network (the session went away between the claim and the call): waits again. */
  | { type: 'RETURNED' }
  /** Found in `sending` at start-up or after its owner node died: never resent. */
  | { type: 'RECOVERED_SENDING' }
  /** `DELETE /api/v2/messages/<jobId>` before sending started. */
  | { type: 'CANCEL' }
  /** TTL elapsed before a slot came free. */
  | { type: 'EXPIRE' };

export type JobEventType = JobEvent['type'];

const emit = (event: QueueEventName) => ({ type: 'emitQueueEvent', params: { event } }) as const;
const confidence = (c: DeliveryConfidence) => ({ type: 'recordConfidence', params: { confidence: c } }) as const;

const cancelAndExpire = {
  CANCEL: { target: '#job.cancelled', actions: emit('message.cancelled') },
  EXPIRE: { target: '#job.expired', actions: emit('message.expired') },
} as const;

export const jobMachine = setup({
  types: {
    events: {} as JobEvent,
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
        RESCHEDULED: { target: 'scheduled', reenter: true },
        UNSCHEDULED: { target: 'queued' },
        DISPATCH: { target: 'sending' },
        ...cancelAndExpire,
      },
    },
    sending: {
      description: 'Committed before the network call. Cannot be cancelled; never sent twice.',
      on: {
        RESULT_CONFIRMED: { target: 'sent', actions: [confidence('confirmed'), emit('message.sent')] },
        RESULT_ASSUMED: { target: 'sent', actions: [confidence('assumed'), emit('message.sent')] },
        RESULT_FAILED: { target: 'failed', actions: emit('message.failed') },
        RESULT_UNKNOWN: { target: 'unknown', actions: [confidence('unknown'), emit('message.unknown')] },
        RECOVERED_SENDING: { target: 'unknown', actions: [confidence('unknown'), emit('message.unknown')] },
        RETURNED: { target: 'scheduled' },
      },
    },
    sent: { type: 'final', description: 'Delivered; see deliveryConfidence.' },
    failed: { type: 'final', description: 'Provably not sent.' },
    unknown: { type: 'final', description: 'Dispatched, outcome unverifiable. Needs a human; never retried.' },
    cancelled: { type: 'final', description: 'Cancelled before dispatch.' },
    expired: { type: 'final', description: 'TTL elapsed before a slot came free.' },
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

export function isTerminal(state: JobState): state is TerminalJobState {
  return (TERMINAL_JOB_STATES as readonly string[]).includes(state);
}

export function canRequeue(state: JobState): boolean {
  return (REQUEUEABLE_JOB_STATES as readonly string[]).includes(state);
}

type JobSnapshot = ReturnType<typeof jobMachine.resolveState>;

// Snapshots are immutable, so one per state is enough; re-plans apply thousands of events.
const snapshots = new Map<JobState, JobSnapshot>(JOB_STATES.map((s) => [s, jobMachine.resolveState({ value: s })]));

function readActions(actions: ReadonlyArray<{ type: string; params: unknown }>): Omit<JobStep, 'next'> {
  let emits: QueueEventName | null = null;
  let deliveryConfidence: DeliveryConfidence | null = null;
  for (const a of actions) {
    const p = a.params;
    if (typeof p !== 'object' || p === null) continue;
    if (a.type === 'emitQueueEvent' && 'event' in p) emits = p.event as QueueEventName;
    if (a.type === 'recordConfidence' && 'confidence' in p) deliveryConfidence = p.confidence as DeliveryConfidence;
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
  return JOB_STATES.filter((s) => applyJobEvent(s, { type } as JobEvent) !== null);
}

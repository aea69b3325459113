import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { getNextTransitions } from 'xstate';
import {
  JOB_STATES,
  TERMINAL_JOB_STATES,
  acceptJob,
  applyJobEvent,
  canRequeue,
  isTerminal,
  jobMachine,
  statesAccepting,
  type JobEvent,
  type JobEventType,
  type JobState,
  type JobStep,
} from '../../machines/job.machine.js';

const EVENTS: JobEventType[] = [
  'PLANNED',
  'REPLANNED',
  'UNSCHEDULED',
  'RESCHEDULED',
  'DISPATCH',
  'RESULT_CONFIRMED',
  'RESULT_ASSUMED',
  'RESULT_FAILED',
  'RESULT_UNKNOWN',
  'RECOVERED_SENDING',
  'RETURNED',
  'CANCEL',
  'EXPIRE',
];

const step = (next: JobState, emits: JobStep['emits'] = null, deliveryConfidence: JobStep['deliveryConfidence'] = null) => ({
  next,
  emits,
  deliveryConfidence,
});

/** Every allowed (state, event) pair; anything not listed must be refused. */
const ALLOWED: Partial<Record<JobState, Partial<Record<JobEventType, JobStep>>>> = {
  queued: {
    PLANNED: step('scheduled'),
    REPLANNED: step('scheduled'),
    CANCEL: step('cancelled', 'message.cancelled'),
    EXPIRE: step('expired', 'message.expired'),
  },
  scheduled: {
    REPLANNED: step('scheduled'),
    RESCHEDULED: step('scheduled'),
    UNSCHEDULED: step('queued'),
    DISPATCH: step('sending'),
    CANCEL: step('cancelled', 'message.cancelled'),
    EXPIRE: step('expired', 'message.expired'),
  },
  sending: {
    RESULT_CONFIRMED: step('sent', 'message.sent', 'confirmed'),
    RESULT_ASSUMED: step('sent', 'message.sent', 'assumed'),
    RESULT_FAILED: step('failed', 'message.failed'),
    RESULT_UNKNOWN: step('unknown', 'message.unknown', 'unknown'),
    RECOVERED_SENDING: step('unknown', 'message.unknown', 'unknown'),
    // the call never reached the network (no session to take it): the job waits again, no event
    RETURNED: step('scheduled'),
  },
};

const ev = (type: JobEventType) => ({ type }) as JobEvent;

describe('job machine: SPEC.md "Job transitions", row by row', () => {
  test('(no job) → queued on acceptance, emitting message.queued', () => {
    assert.deepEqual(acceptJob(), step('queued', 'message.queued'));
  });

  test('queued → scheduled when the planner assigns a slot; no event (there is no message.scheduled)', () => {
    assert.deepEqual(applyJobEvent('queued', ev('PLANNED')), step('scheduled'));
  });

  test('scheduled → sending when the dispatcher re-check passes', () => {
    assert.deepEqual(applyJobEvent('scheduled', ev('DISPATCH')), step('sending'));
  });

  test('scheduled → back in the queue with a new slot when a re-check item fails; not sent', () => {
    assert.deepEqual(applyJobEvent('scheduled', ev('RESCHEDULED')), step('scheduled'));
    assert.equal(applyJobEvent('queued', ev('RESCHEDULED')), null, 'only a scheduled job is re-checked');
  });

  test('sending → sent/confirmed when the network returned an id', () => {
    assert.deepEqual(applyJobEvent('sending', ev('RESULT_CONFIRMED')), step('sent', 'message.sent', 'confirmed'));
  });

  test('sending → sent/assumed when sent without an id', () => {
    assert.deepEqual(applyJobEvent('sending', ev('RESULT_ASSUMED')), step('sent', 'message.sent', 'assumed'));
  });

  test('sending → failed when provably not sent', () => {
    assert.deepEqual(applyJobEvent('sending', ev('RESULT_FAILED')), step('failed', 'message.failed'));
  });

  test('sending → unknown when the outcome is unverifiable, and when found in sending at start-up', () => {
    assert.deepEqual(applyJobEvent('sending', ev('RESULT_UNKNOWN')), step('unknown', 'message.unknown', 'unknown'));
    assert.deepEqual(applyJobEvent('sending', ev('RECOVERED_SENDING')), step('unknown', 'message.unknown', 'unknown'));
    assert.deepEqual(statesAccepting('RECOVERED_SENDING'), ['sending']);
  });

  test('queued, scheduled → cancelled by DELETE before sending started; refused once sending', () => {
    assert.deepEqual(applyJobEvent('queued', ev('CANCEL')), step('cancelled', 'message.cancelled'));
    assert.deepEqual(applyJobEvent('scheduled', ev('CANCEL')), step('cancelled', 'message.cancelled'));
    assert.equal(applyJobEvent('sending', ev('CANCEL')), null);
    for (const s of TERMINAL_JOB_STATES) assert.equal(applyJobEvent(s, ev('CANCEL')), null, s);
  });

  test('queued, scheduled → expired when the TTL elapsed; a sending job does not expire', () => {
    assert.deepEqual(applyJobEvent('queued', ev('EXPIRE')), step('expired', 'message.expired'));
    assert.deepEqual(applyJobEvent('scheduled', ev('EXPIRE')), step('expired', 'message.expired'));
    assert.equal(applyJobEvent('sending', ev('EXPIRE')), null);
  });

  test('failed, expired, cancelled can be requeued (as a new job); the others cannot', () => {
    const requeueable = JOB_STATES.filter(canRequeue);
    assert.deepEqual(requeueable, ['failed', 'cancelled', 'expired']);
    // Requeue is not a transition of the old job: it stays terminal and accepts nothing.
    for (const s of requeueable) for (const e of EVENTS) assert.equal(applyJobEvent(s, ev(e)), null, `${s} ${e}`);
  });
});

describe('job machine: nothing else is allowed', () => {
  test('the full state × event matrix matches the table', () => {
    for (const s of JOB_STATES) {
      for (const e of EVENTS) {
        assert.deepEqual(applyJobEvent(s, ev(e)), ALLOWED[s]?.[e] ?? null, `${s} + ${e}`);
      }
    }
  });

  test('terminal states are final in the statechart and in isTerminal', () => {
    for (const s of JOB_STATES) {
      const final = jobMachine.resolveState({ value: s }).status === 'done';
      assert.equal(final, (TERMINAL_JOB_STATES as readonly string[]).includes(s), s);
      assert.equal(isTerminal(s), final, s);
    }
  });

  test('statesAccepting gives the WHERE state IN (...) of each conditional update', () => {
    assert.deepEqual(statesAccepting('CANCEL'), ['queued', 'scheduled']);
    assert.deepEqual(statesAccepting('EXPIRE'), ['queued', 'scheduled']);
    assert.deepEqual(statesAccepting('DISPATCH'), ['scheduled']);
    assert.deepEqual(statesAccepting('REPLANNED'), ['queued', 'scheduled']);
    assert.deepEqual(statesAccepting('RESULT_FAILED'), ['sending']);
  });

  test('emitted events are declared as named actions in the statechart', () => {
    const sending = jobMachine.resolveState({ value: 'sending' });
    const actionTypes = getNextTransitions(sending).flatMap((t) =>
      t.actions.map((a) => (typeof a === 'object' && a !== null && 'type' in a ? String(a.type) : String(a))),
    );
    assert.ok(actionTypes.includes('emitQueueEvent'));
    assert.ok(actionTypes.includes('recordConfidence'));
  });

  test('returned steps are frozen, so the memo cannot be corrupted by a caller', () => {
    const s = applyJobEvent('queued', ev('CANCEL'));
    assert.ok(s && Object.isFrozen(s));
  });
});

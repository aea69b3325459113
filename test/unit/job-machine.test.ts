import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { getNextTransitions } from 'xstate';
import {
  CANCELLABLE_JOB_STATES,
  COUNTING_JOB_STATES,
  JOB_EVENT_TYPES,
  JOB_STATES,
  PENDING_JOB_STATES,
  REQUEUEABLE_JOB_STATES,
  TERMINAL_JOB_STATES,
  WAITING_JOB_STATES,
  acceptJob,
  applyJobEvent,
  bulkJobEvent,
  canRequeue,
  isTerminal,
  isWaiting,
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
  'DISPATCH',
  'RESULT_CONFIRMED',
  'RESULT_ASSUMED',
  'RESULT_FAILED',
  'RESULT_UNKNOWN',
  'RECOVERED_SENDING',
  'RECOVERED_UNSENT',
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
    // found in sending while its media was still being prepared: the network was never called
    RECOVERED_UNSENT: step('failed', 'message.failed'),
    // the call never reached the network (no session to take it): the job waits again, no event
    RETURNED: step('scheduled'),
  },
};

const ev = (type: JobEventType): JobEvent => ({ type });

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

  test('scheduled → back in the queue with a new slot when a re-check item fails (a re-plan); not sent', () => {
    assert.deepEqual(applyJobEvent('scheduled', ev('REPLANNED')), step('scheduled'));
    // a re-plan that finds no slot before the expiry: waiting without one
    assert.deepEqual(applyJobEvent('scheduled', ev('UNSCHEDULED')), step('queued'));
    assert.equal(applyJobEvent('queued', ev('UNSCHEDULED')), null, 'a job without a slot has none to lose');
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

  test('sending → failed when found in sending at start-up still preparing its media (never called)', () => {
    assert.deepEqual(applyJobEvent('sending', ev('RECOVERED_UNSENT')), step('failed', 'message.failed'));
    assert.deepEqual(statesAccepting('RECOVERED_UNSENT'), ['sending']);
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

describe('job machine: the state lists the runtime uses are read from it', () => {
  test('each list is what SPEC.md says', () => {
    assert.deepEqual([...TERMINAL_JOB_STATES], ['sent', 'failed', 'unknown', 'cancelled', 'expired']);
    assert.deepEqual([...PENDING_JOB_STATES], ['queued', 'scheduled', 'sending']);
    assert.deepEqual([...WAITING_JOB_STATES], ['queued', 'scheduled']);
    assert.deepEqual([...CANCELLABLE_JOB_STATES], ['queued', 'scheduled']);
    // SPEC.md "Messages in sent, sending or unknown count against the hourly and daily limits."
    assert.deepEqual([...COUNTING_JOB_STATES], ['sending', 'sent', 'unknown']);
    assert.deepEqual([...REQUEUEABLE_JOB_STATES], ['failed', 'cancelled', 'expired']);
    for (const s of JOB_STATES) assert.equal(isWaiting(s), s === 'queued' || s === 'scheduled', s);
  });

  test('a requeueable state is final and never counted (the old job provably did not go out)', () => {
    for (const s of REQUEUEABLE_JOB_STATES) {
      assert.ok(isTerminal(s), s);
      assert.ok(!COUNTING_JOB_STATES.includes(s), s);
    }
  });
});

describe('job machine: every event is a conditional UPDATE the queue sends', () => {
  test('the test names every event of the machine', () => {
    assert.deepEqual([...EVENTS].sort(), [...JOB_EVENT_TYPES].sort());
  });

  test('each event leads to one step from every state it is allowed in (one UPDATE … WHERE state IN (…))', () => {
    for (const e of JOB_EVENT_TYPES) {
      const { from, step: s } = bulkJobEvent(e);
      assert.deepEqual(from, statesAccepting(e), e);
      assert.ok(from.length > 0, `${e} is allowed somewhere`);
      for (const f of from) assert.deepEqual(applyJobEvent(f, ev(e)), s, `${f} + ${e}`);
    }
  });

  test('every event is sent by src/queue (an event nobody sends is removed from the machine)', () => {
    const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/queue');
    const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    const source = files.map((f) => readFileSync(path.join(root, f), 'utf8')).join('\n');
    for (const e of JOB_EVENT_TYPES) assert.match(source, new RegExp(`'${e}'`), `no code in src/queue sends ${e}`);
  });

  test('nothing in src/queue writes a state by hand: every SET state comes from the machine', () => {
    const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/queue');
    const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    for (const f of files) {
      const text = readFileSync(path.join(root, f), 'utf8');
      assert.doesNotMatch(text, /SET\s+state\s*=\s*'[a-z]+'/i, `${f} writes a state literal in SQL`);
      assert.doesNotMatch(text, /state\s*===?\s*'[a-z]+'\s*\|\|/, `${f} lists states by hand in code`);
      assert.doesNotMatch(text, /state IN \('/, `${f} lists states by hand in SQL`);
    }
  });
});

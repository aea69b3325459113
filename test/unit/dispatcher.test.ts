/**
 * The dispatcher actor (src/actors/dispatcher.ts) under a parent that plays the session: a job is handed to the
 * network at most once while the actor runs, except when its call provably never reached the network (no
 * session, or the driver refused before sending: NOT_CONNECTED, SESSION_CLOSED): the planner puts such a job
 * back, and its next dispatch must reach the network — not be answered `unknown` as a repeat.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assign, createActor, setup, type AnyActorRef } from 'xstate';
import { simulatedClock } from '../../src/clock.js';
import { createDispatcherLogic } from '../../src/actors/dispatcher.js';
import { answer, createReplies, REPLIES_ID } from '../../src/actors/local-port.js';
import { okReply } from '../../src/actors/port.js';
import type { CallEnvelope, CallOutcome } from '../../src/actors/call.js';
import type { Job } from '../../src/queue/job.js';
import type { DispatchOutcome } from '../../src/queue/types.js';

function textJob(id: string): Job {
  return {
    id, seq: 1, instanceId: 'i-1', state: 'sending', originRoute: 'v2', chatId: '4915112345678@c.us', phone: '4915112345678',
    payloadHash: 'h', idempotencyKey: null, priority: 5, notBefore: null, queuedAt: 0, scheduledAt: 0, dispatchedAt: 0,
    terminalAt: null, expiresAt: Date.UTC(2100, 0, 1), attempts: 1, deliveryConfidence: null, messageId: null, resultCode: null,
    errorMessage: null, unknownReason: null, previousJobId: null, kind: 'text', payload: { body: 'hello' },
  } as Job;
}

/** A media job (its media given inline), as the planner hands a claimed one over. */
function mediaJob(id: string): Job {
  return { ...textJob(id), kind: 'media', payload: { chatId: '4915112345678@c.us', mediaBase64: 'aGVsbG8=', mimetype: 'text/plain' } } as Job;
}

const MEDIA = { mimetype: 'text/plain', data: 'aGVsbG8=', filename: null };

/**
 * A dispatcher under a parent answering each CALL with the next scripted outcome; `calls` counts them.
 * `starts` answers each recording of a media job's call start in turn (src/queue/sql/startCall.ts; true when
 * the script ran out), `started` counts them.
 */
function harness(script: CallOutcome[], starts: (boolean | Error)[] = []) {
  const clock = simulatedClock();
  const replies = createReplies(clock);
  let calls = 0;
  let started = 0;
  const startCall = () => {
    started += 1;
    const next = starts.shift() ?? true;
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
  };
  const dispatcher = createDispatcherLogic({ clock, callTimeoutMs: 30_000, resolveMedia: () => Promise.resolve(MEDIA), startCall, replies });
  const parent = setup({
    types: { context: {} as { dispatcher: AnyActorRef | null } },
    actors: { replies: replies.logic, dispatcher },
  }).createMachine({
    context: { dispatcher: null },
    entry: assign({ dispatcher: ({ spawn }) => spawn('dispatcher', { id: 'dispatcher', input: { instanceId: 'i-1' } }) }),
    invoke: { src: 'replies', systemId: REPLIES_ID },
    on: {
      CALL: {
        actions: ({ event, system }) => {
          calls += 1;
          const outcome = script.shift() ?? { kind: 'driver_error', code: 'UNKNOWN', message: 'script ended', provablyNotSent: false };
          queueMicrotask(() => answer(system, event as CallEnvelope, okReply(outcome)));
        },
      },
    },
  });
  const actor = createActor(parent).start();
  const dispatch = async (job: Job): Promise<DispatchOutcome> => {
    const r = await replies.request((address) => (actor.getSnapshot().context.dispatcher?.send({ type: 'DISPATCH', ...address, job, quietHours: null }), true), 60_000, () => new Error('late'));
    assert.equal(r.ok, true);
    return (r as { ok: true; value: DispatchOutcome }).value;
  };
  return { dispatch, calls: () => calls, started: () => started, stop: () => actor.stop() };
}

const confirmed: CallOutcome = { kind: 'confirmed', messageId: 'true_4915112345678@c.us_3EB0A' };

for (const [name, refusal] of [
  ['no session (not_sent)', { kind: 'not_sent', message: 'the session went away before the call' }],
  ['the driver not connected', { kind: 'driver_error', code: 'NOT_CONNECTED', message: 'the driver is not initialized', provablyNotSent: true }],
  ['the session closed before sending', { kind: 'driver_error', code: 'SESSION_CLOSED', message: 'closed before the send', provablyNotSent: true }],
] as [string, CallOutcome][]) {
  test(`a job whose call never reached the network (${name}) reaches it when dispatched again`, async () => {
    const h = harness([refusal, confirmed]);
    try {
      const first = await h.dispatch(textJob('wq_again'));
      assert.equal(first.kind, 'failed', 'provably not sent: the planner puts it back');
      const second = await h.dispatch(textJob('wq_again'));
      assert.notEqual(second.kind, 'unknown', JSON.stringify(second));
      assert.equal(h.calls(), 2, 'the second dispatch made the call');
    } finally {
      h.stop();
    }
  });
}

test('a job handed to the network is never called again while the dispatcher runs: a repeat is unknown', async () => {
  const h = harness([{ kind: 'driver_error', code: 'SESSION_CLOSED', message: 'closed during the send', provablyNotSent: false }, confirmed]);
  try {
    const first = await h.dispatch(textJob('wq_once'));
    assert.equal(first.kind, 'unknown');
    const again = await h.dispatch(textJob('wq_once'));
    assert.deepEqual(again, { kind: 'unknown', unknownReason: 'the job was already handed to the network once; not sent again' });
    assert.equal(h.calls(), 1, 'no second call');
  } finally {
    h.stop();
  }
});

test('a media job is called only once its start was recorded; a start not recorded is not called and may go again', async () => {
  const h = harness([confirmed], [false, new Error('the store went away'), true]);
  try {
    for (const why of ['the row moved (another node took it)', 'the store could not record it']) {
      const refused = await h.dispatch(mediaJob('wq_media'));
      assert.deepEqual(refused, { kind: 'failed', resultCode: 'CALL_NOT_STARTED', errorMessage: 'the start of the call could not be recorded; nothing was sent' }, why);
      assert.equal(h.calls(), 0, `${why}: no call`);
    }
    const sent = await h.dispatch(mediaJob('wq_media'));
    assert.equal(sent.kind, 'confirmed', JSON.stringify(sent));
    assert.equal(h.calls(), 1);
    assert.equal(h.started(), 3);
  } finally {
    h.stop();
  }
});

test('a text job is called without a recorded start (nothing to prepare)', async () => {
  const h = harness([confirmed], [false]);
  try {
    assert.equal((await h.dispatch(textJob('wq_text'))).kind, 'confirmed');
    assert.equal(h.started(), 0);
  } finally {
    h.stop();
  }
});

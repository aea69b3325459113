/**
 * The instance machine's link flow, logout, stop and what the runtime reads from it (status, health tags, QR,
 * secret-free summary). The session is a fake child the test drives: its events reach the machine through the
 * real `sendBack`, and the commands the machine sends to it are recorded.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createActor, fromCallback } from 'xstate';
import {
  HEALTH_TAGS,
  currentQr,
  healthCounts,
  instanceMachine,
  instanceStatus,
  isPaused,
  summarize,
  type InstanceInput,
  type NotifyParams,
  type SessionCommand,
  type SessionEvent,
  type SessionInput,
  type TraceParams,
} from '../../machines/instance.machine.js';
import { simulatedClock } from '../../src/clock.js';

interface FakeSession {
  input: SessionInput;
  commands: SessionCommand[];
  stopped: boolean;
  send(event: SessionEvent): void;
}

function harness(input: Partial<InstanceInput> = {}) {
  const clock = simulatedClock();
  const sessions: FakeSession[] = [];
  const notified: NotifyParams[] = [];
  const traces: TraceParams[] = [];
  const machine = instanceMachine.provide({
    actors: {
      session: fromCallback<SessionCommand, SessionInput>(({ input: sessionInput, sendBack, receive }) => {
        const s: FakeSession = { input: sessionInput, commands: [], stopped: false, send: (e) => sendBack(e) };
        sessions.push(s);
        receive((c) => s.commands.push(c));
        return () => {
          s.stopped = true;
        };
      }),
    },
    actions: {
      notify: (_, p) => void notified.push(p),
      trace: (_, p) => void traces.push(p),
    },
  });
  const actor = createActor(machine, { input: { instanceId: 'inst-1', ...input }, clock });
  actor.start();
  const session = () => {
    const s = sessions.at(-1);
    if (!s) throw new Error('no session started');
    return s;
  };
  return { actor, clock, sessions, session, notified, traces, now: () => clock.now(), status: () => instanceStatus(actor.getSnapshot()) };
}

const QR = '2@secretQrPayload,abc==';
const WID = '4915112345678@c.us';

describe('instance machine: link flow', () => {
  test('initializing → waiting_qr → authenticated → connected, with the lifecycle events notified', () => {
    const h = harness();
    assert.equal(h.status(), 'initializing');
    assert.equal(h.sessions.length, 1);
    assert.deepEqual(h.session().input, { instanceId: 'inst-1' });
    assert.ok(h.actor.getSnapshot().hasTag('starting'));

    h.session().send({ type: 'loading_screen', percent: 40, message: 'loading', at: h.now() });
    h.session().send({ type: 'qr', qr: QR, at: h.now() });
    assert.equal(h.status(), 'waiting_qr');
    assert.deepEqual(currentQr(h.actor.getSnapshot()), { raw: QR, at: h.now() });

    h.clock.increment(5_000);
    h.session().send({ type: 'authenticated', at: h.now() });
    assert.equal(h.status(), 'authenticated');
    assert.equal(currentQr(h.actor.getSnapshot()), null);

    h.session().send({ type: 'change_state', state: 'CONNECTED', at: h.now() });
    h.session().send({ type: 'ready', wid: WID, at: h.now() });
    const s = h.actor.getSnapshot();
    assert.equal(h.status(), 'connected');
    assert.ok(s.hasTag('online'));
    assert.equal(s.context.phoneNumber, '4915112345678');
    assert.deepEqual(s.context.browser, { alive: true, failStreak: 0, lastOkAt: h.now() });
    assert.deepEqual(h.notified, [
      { event: 'loading_screen', data: { percent: 40, message: 'loading' } },
      { event: 'qr', data: { qr: QR } },
      { event: 'authenticated', data: {} },
      { event: 'change_state', data: { state: 'CONNECTED' } },
      { event: 'ready', data: { phoneNumber: '4915112345678' } },
    ]);
    h.actor.stop();
  });

  test('a stored link goes straight from initializing to connected', () => {
    const h = harness();
    h.session().send({ type: 'ready', wid: WID, at: h.now() });
    assert.equal(h.status(), 'connected');
    h.actor.stop();
  });

  test('a pairing code request reaches the session; the code is notified but never summarized', () => {
    const h = harness();
    h.session().send({ type: 'qr', qr: QR, at: h.now() });
    h.actor.send({ type: 'REQUEST_PAIRING_CODE', phoneNumber: '4915112345678' });
    assert.deepEqual(h.session().commands, [{ type: 'REQUEST_PAIRING_CODE', phoneNumber: '4915112345678' }]);
    h.session().send({ type: 'code', code: 'WXYZ-1234', at: h.now() });
    assert.equal(h.status(), 'waiting_qr');
    assert.deepEqual(h.notified.at(-1), { event: 'code', data: { code: 'WXYZ-1234' } });

    const summary = summarize(h.actor.getSnapshot());
    // the pairing code replaces the QR (the network stops accepting the shown QR once pairing started)
    assert.deepEqual(summary.qr, { present: false, at: null });
    assert.equal(currentQr(h.actor.getSnapshot()), null);
    assert.deepEqual(summary.pairingCode, { present: true, at: h.now() });
    const text = JSON.stringify(summary);
    for (const secret of [QR, 'WXYZ-1234', 'secretQr']) assert.ok(!text.includes(secret), secret);
    h.actor.stop();
  });

  test('a QR while connected means the link is gone: back to waiting_qr', () => {
    const h = harness();
    h.session().send({ type: 'ready', wid: WID, at: h.now() });
    h.session().send({ type: 'qr', qr: QR, at: h.now() });
    assert.equal(h.status(), 'waiting_qr');
    h.actor.stop();
  });
});

describe('instance machine: logout and lost link', () => {
  test('LOGOUT asks the session, ends loggedOut (disconnected); a restart shows a new QR', () => {
    const h = harness();
    h.session().send({ type: 'ready', wid: WID, at: h.now() });
    h.actor.send({ type: 'LOGOUT' });
    assert.equal(h.status(), 'disconnected');
    assert.deepEqual(h.session().commands, [{ type: 'LOGOUT' }]);
    assert.equal(h.session().stopped, false, 'the session stays until it confirms');

    h.session().send({ type: 'LOGGED_OUT', at: h.now() });
    assert.deepEqual(h.actor.getSnapshot().value, { active: { lifecycle: 'loggedOut', pause: 'idle' } });
    assert.ok(h.actor.getSnapshot().hasTag('offline'));
    assert.equal(h.session().stopped, true);

    h.clock.increment(60 * 60_000);
    assert.equal(h.sessions.length, 1, 'no automatic restart after a logout');

    h.actor.send({ type: 'ORDERED_RESTART', reason: 'relink' });
    h.clock.increment(1_000);
    assert.equal(h.status(), 'initializing');
    assert.equal(h.sessions.length, 2);
    h.session().send({ type: 'qr', qr: QR, at: h.now() });
    assert.equal(h.status(), 'waiting_qr');
    h.actor.stop();
  });

  test('the operator\'s LOGOUT of a connected instance tells its receivers once (disconnected LOGOUT); of one never connected, nothing', () => {
    const h = harness();
    h.session().send({ type: 'ready', wid: WID, at: h.now() });
    const before = h.notified.length;
    h.actor.send({ type: 'LOGOUT' });
    // the driver's own disconnected on its way out adds nothing
    h.session().send({ type: 'disconnected', reason: 'LOGOUT', at: h.now() });
    h.session().send({ type: 'LOGGED_OUT', at: h.now() });
    assert.deepEqual(h.notified.slice(before), [{ event: 'disconnected', data: { reason: 'LOGOUT' } }]);
    h.actor.stop();

    const q = harness();
    q.session().send({ type: 'qr', qr: QR, at: q.now() });
    const waiting = q.notified.length;
    q.actor.send({ type: 'LOGOUT' });
    q.session().send({ type: 'LOGGED_OUT', at: q.now() });
    assert.deepEqual(q.notified.slice(waiting), []);
    q.actor.stop();
  });

  test('a LOGOUT during an ordered restart tells the receivers once, and the session started to log out reports nothing of its start (found from the outside: change_state CONNECTED)', () => {
    const h = harness();
    h.session().send({ type: 'ready', wid: WID, at: h.now() });
    h.actor.send({ type: 'ORDERED_RESTART', reason: 'operator' });
    const before = h.notified.length;
    h.actor.send({ type: 'LOGOUT' });
    h.session().send({ type: 'loading_screen', percent: 100, message: 'WhatsApp', at: h.now() });
    h.session().send({ type: 'change_state', state: 'CONNECTED', at: h.now() });
    h.session().send({ type: 'LOGGED_OUT', at: h.now() });
    assert.deepEqual(h.notified.slice(before), [{ event: 'disconnected', data: { reason: 'LOGOUT' } }]);
    assert.ok(h.actor.getSnapshot().matches({ active: { lifecycle: 'loggedOut' } }));
    h.actor.stop();
  });

  test('a session that never confirms the logout still ends loggedOut after the timeout', () => {
    const h = harness({ logoutTimeoutMs: 30_000 });
    h.session().send({ type: 'ready', wid: WID, at: h.now() });
    h.actor.send({ type: 'LOGOUT' });
    h.clock.increment(29_999);
    assert.deepEqual(h.actor.getSnapshot().value, { active: { lifecycle: { running: 'loggingOut' }, pause: 'idle' } });
    h.clock.increment(1);
    assert.deepEqual(h.actor.getSnapshot().value, { active: { lifecycle: 'loggedOut', pause: 'idle' } });
    h.actor.stop();
  });

  test('unlinked on the phone (disconnected LOGOUT) → loggedOut, notified, not counted as a failure', () => {
    const h = harness();
    h.session().send({ type: 'ready', wid: WID, at: h.now() });
    h.session().send({ type: 'disconnected', reason: 'LOGOUT', at: h.now() });
    const s = h.actor.getSnapshot();
    assert.equal(h.status(), 'disconnected');
    assert.ok(s.matches({ active: { lifecycle: 'loggedOut' } }));
    assert.equal(s.context.browser.failStreak, 0);
    assert.deepEqual(s.context.lastDisconnect, { reason: 'LOGOUT', at: h.now() });
    assert.deepEqual(h.notified.at(-1), { event: 'disconnected', data: { reason: 'LOGOUT' } });
    h.actor.stop();
  });

  test('taken over elsewhere (disconnected CONFLICT) → displaced: the link kept, no automatic restart, the operator restart leaves', () => {
    const h = harness();
    h.session().send({ type: 'ready', wid: WID, at: h.now() });
    h.session().send({ type: 'disconnected', reason: 'CONFLICT', at: h.now() });
    let s = h.actor.getSnapshot();
    assert.equal(h.status(), 'disconnected');
    assert.ok(s.matches({ active: { lifecycle: 'displaced' } }));
    assert.ok(s.hasTag('offline'));
    assert.equal(s.context.phoneNumber, '4915112345678', 'the link is kept');
    assert.equal(s.context.browser.failStreak, 0, 'not counted as a failure');
    assert.equal(h.session().stopped, true);
    assert.deepEqual(h.notified.at(-1), { event: 'disconnected', data: { reason: 'CONFLICT' } });

    // a restart would take the session back from whoever holds it now: none comes by itself
    h.clock.increment(60 * 60_000);
    assert.equal(h.sessions.length, 1);

    h.actor.send({ type: 'ORDERED_RESTART', reason: 'take back' });
    h.clock.increment(1_000);
    s = h.actor.getSnapshot();
    assert.equal(h.sessions.length, 2);
    h.session().send({ type: 'ready', wid: WID, at: h.now() });
    assert.equal(h.status(), 'connected');
    h.actor.stop();
  });

  test('other disconnects still restart by themselves after the backoff', () => {
    const h = harness({ backoff: { baseMs: 1_000, jitter: 0 } });
    h.session().send({ type: 'ready', wid: WID, at: h.now() });
    h.session().send({ type: 'disconnected', reason: 'NAVIGATION', at: h.now() });
    assert.equal(h.status(), 'error');
    h.clock.increment(60_000);
    assert.equal(h.sessions.length, 2);
    h.actor.stop();
  });

  test('auth_failure → loggedOut with the message notified', () => {
    const h = harness();
    h.session().send({ type: 'auth_failure', message: 'session restore failed', at: h.now() });
    assert.ok(h.actor.getSnapshot().matches({ active: { lifecycle: 'loggedOut' } }));
    assert.deepEqual(h.notified.at(-1), { event: 'auth_failure', data: { message: 'session restore failed' } });
    h.actor.stop();
  });
});

describe('instance machine: stop', () => {
  test('STOP is final: session stopped, status disconnected, later events ignored', () => {
    const h = harness();
    h.session().send({ type: 'ready', wid: WID, at: h.now() });
    const first = h.session();
    h.actor.send({ type: 'STOP' });
    const s = h.actor.getSnapshot();
    assert.equal(s.status, 'done');
    assert.equal(s.value, 'stopped');
    assert.equal(h.status(), 'disconnected');
    assert.equal(first.stopped, true);
    h.actor.send({ type: 'ORDERED_RESTART' });
    h.clock.increment(10 * 60_000);
    assert.equal(h.sessions.length, 1);
  });
});

describe('instance machine: what the runtime reads', () => {
  test('every state has a status and exactly one health tag', () => {
    const leaves = (node: (typeof instanceMachine)['root']): (typeof instanceMachine)['root'][] =>
      Object.values(node.states).length === 0 ? [node] : Object.values(node.states).flatMap(leaves);
    const lifecycleLeaves = [
      ...leaves(instanceMachine.root.states.active!.states.lifecycle!),
      instanceMachine.root.states.stopped!,
    ];
    assert.equal(lifecycleLeaves.length, 13);
    // what a snapshot in the leaf reads: the tags and the status of the leaf and its ancestors
    const lineage = (node: (typeof instanceMachine)['root']) => {
      const out: (typeof instanceMachine)['root'][] = [];
      for (let n: typeof node | undefined = node; n; n = n.parent) out.push(n);
      return out;
    };
    for (const node of lifecycleLeaves) {
      const tags = lineage(node).flatMap((n) => n.tags);
      const health = tags.filter((t) => (HEALTH_TAGS as readonly string[]).includes(t));
      assert.equal(health.length, 1, `${node.id}: ${tags.join(',')}`);
      const statuses = lineage(node).filter((n) => typeof n.meta?.status === 'string');
      assert.equal(statuses.length, 1, `${node.id} has one status`);
    }
  });

  test('healthCounts puts each instance in one bucket', () => {
    const a = harness();
    const b = harness({ instanceId: 'inst-2' });
    const c = harness({ instanceId: 'inst-3' });
    a.session().send({ type: 'ready', wid: WID, at: a.now() });
    c.actor.send({ type: 'LOGOUT' });
    c.session().send({ type: 'LOGGED_OUT', at: c.now() });
    const counts = healthCounts([a, b, c].map((h) => h.actor.getSnapshot()));
    assert.deepEqual(counts, { total: 3, online: 1, offline: 1, starting: 1, degraded: 0, quarantined: 0 });
    assert.equal(isPaused(a.actor.getSnapshot()), false);
    for (const h of [a, b, c]) h.actor.stop();
  });
});

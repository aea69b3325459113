/**
 * The instance machine's recovery, on simulated time: crash → backoff → connected again (failStreak counted),
 * exponential jittered backoff, quarantine after repeated failures in the window, the ordered restart's v2 pause
 * and its hard ceiling. The session is a fake child the test drives through the real `sendBack`.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createActor, fromCallback } from 'xstate';
import {
  DEFAULT_POLICY,
  backoffDelayMs,
  healthCounts,
  instanceMachine,
  instanceStatus,
  isPaused,
  nominalBackoffMs,
  type InstanceInput,
  type NotifyParams,
  type SessionCommand,
  type SessionEvent,
  type SessionInput,
  type TraceParams,
} from '../../machines/instance.machine.js';
import { simulatedClock } from '../../src/clock.js';

interface FakeSession {
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
      session: fromCallback<SessionCommand, SessionInput>(({ sendBack }) => {
        const s: FakeSession = { stopped: false, send: (e) => sendBack(e) };
        sessions.push(s);
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
  const snap = () => actor.getSnapshot();
  const connect = () => session().send({ type: 'ready', wid: '4915112345678@c.us', at: clock.now() });
  const crash = () => session().send({ type: 'fatal', reason: 'browser closed', at: clock.now() });
  return { actor, clock, sessions, session, snap, connect, crash, notified, traces, status: () => instanceStatus(snap()) };
}

describe('instance machine: crash and backoff', () => {
  test('crash → error (backoff) → new session → connected again, failStreak counted until stable', () => {
    const h = harness();
    h.connect();
    h.crash();
    assert.equal(h.status(), 'error');
    assert.ok(h.snap().matches({ active: { lifecycle: 'backoff' } }));
    assert.ok(h.snap().hasTag('degraded'));
    assert.equal(h.sessions[0]?.stopped, true);
    assert.deepEqual(h.snap().context.browser, { alive: false, failStreak: 1, lastOkAt: h.clock.now() });
    assert.deepEqual(h.snap().context.lastError, { reason: 'SESSION_CRASHED', detail: 'browser closed', at: h.clock.now() });
    assert.deepEqual(h.notified.at(-1), { event: 'disconnected', data: { reason: 'SESSION_CRASHED' } });

    const delay = h.snap().context.backoffMs;
    h.clock.increment(delay - 1);
    assert.equal(h.sessions.length, 1, 'still waiting');
    h.clock.increment(1);
    assert.equal(h.sessions.length, 2);
    assert.equal(h.status(), 'initializing');

    h.sessions[0]?.send({ type: 'ready', wid: 'x@c.us', at: h.clock.now() });
    assert.equal(h.status(), 'initializing', 'the dead session cannot move the machine');

    h.connect();
    assert.equal(h.status(), 'connected');
    assert.equal(h.snap().context.browser.failStreak, 1, 'counted after recovery');
    h.clock.increment(DEFAULT_POLICY.stableMs);
    assert.equal(h.snap().context.browser.failStreak, 0, 'reset after a stable connection');
    h.actor.stop();
  });

  test('connected with no failure streak waits on no timer; with a streak, on the one that resets it', () => {
    const h = harness();
    const pending = () => (h.clock as unknown as { timeouts: Map<unknown, unknown> }).timeouts.size;
    h.connect();
    assert.ok(h.snap().matches({ active: { lifecycle: { running: { connection: { connected: 'steady' } } } } }));
    assert.equal(pending(), 0, 'ten thousand connected instances leave no timer each');
    h.crash();
    h.clock.increment(h.snap().context.backoffMs);
    h.connect();
    assert.ok(h.snap().matches({ active: { lifecycle: { running: { connection: { connected: 'settling' } } } } }));
    h.clock.increment(DEFAULT_POLICY.stableMs);
    assert.ok(h.snap().matches({ active: { lifecycle: { running: { connection: { connected: 'steady' } } } } }));
    assert.equal(h.snap().context.browser.failStreak, 0);
    h.actor.stop();
  });

  test('browser death reported by the driver, and a start that hangs, are failures too', () => {
    const h = harness({ startTimeoutMs: 90_000 });
    h.session().send({ type: 'browser_health', health: { alive: false, failStreak: 3, lastOkAt: 1 }, at: h.clock.now() });
    assert.equal(h.snap().context.lastError?.reason, 'BROWSER_DIED');
    h.clock.increment(h.snap().context.backoffMs);
    assert.equal(h.status(), 'initializing');
    h.clock.increment(89_999);
    assert.equal(h.status(), 'initializing');
    h.clock.increment(1);
    assert.equal(h.status(), 'error');
    assert.equal(h.snap().context.lastError?.reason, 'START_TIMEOUT');
    assert.equal(h.snap().context.browser.failStreak, 2);
    h.actor.stop();
  });

  test('a healthy browser probe only updates the context', () => {
    const h = harness();
    h.connect();
    h.session().send({ type: 'browser_health', health: { alive: true, failStreak: 1, lastOkAt: h.clock.now() + 5 }, at: h.clock.now() });
    assert.equal(h.status(), 'connected');
    assert.equal(h.snap().context.browser.lastOkAt, h.clock.now() + 5);
    assert.equal(h.snap().context.probeFailStreak, 1);
    h.actor.stop();
  });

  test('backoff delays grow exponentially and are jittered within bounds', () => {
    const policy = DEFAULT_POLICY.backoff;
    assert.equal(backoffDelayMs(1, policy, 0), 800);
    assert.equal(backoffDelayMs(1, policy, 0.5), 1_000);
    assert.equal(backoffDelayMs(3, policy, 0.999999), 4_800);
    assert.equal(backoffDelayMs(20, policy, 0.9), policy.maxMs, 'capped');

    const observed = (instanceId: string) => {
      const h = harness({ instanceId, quarantine: { maxFailures: 100 } });
      const delays: number[] = [];
      for (let attempt = 1; attempt <= 6; attempt++) {
        h.crash();
        const d = h.snap().context.backoffMs;
        const nominal = nominalBackoffMs(attempt, policy);
        assert.ok(d >= nominal * (1 - policy.jitter) && d <= Math.min(policy.maxMs, nominal * (1 + policy.jitter)), `${attempt}: ${d}`);
        delays.push(d);
        h.clock.increment(d);
      }
      h.actor.stop();
      return delays;
    };
    const a = observed('inst-a');
    const b = observed('inst-b');
    for (let i = 1; i < a.length; i++) assert.ok(a[i]! > a[i - 1]!, `grows: ${a.join(', ')}`);
    assert.notDeepEqual(a, b, 'two instances failing together spread out');
    assert.deepEqual(observed('inst-a'), a, 'deterministic for a seed');
  });
});

describe('instance machine: quarantine', () => {
  test('5 failures in 10 minutes quarantine the instance; time does not release it, the operator restart does', () => {
    const h = harness();
    for (let i = 1; i <= 5; i++) {
      h.crash();
      if (i < 5) h.clock.increment(h.snap().context.backoffMs);
    }
    const s = h.snap();
    assert.ok(s.matches({ active: { lifecycle: 'quarantined' } }));
    assert.equal(h.status(), 'disconnected');
    assert.equal(healthCounts([s]).quarantined, 1);
    assert.deepEqual(h.traces.at(-1), { kind: 'quarantined', recentFailures: 5, windowMs: 600_000 });

    h.clock.increment(24 * 60 * 60_000);
    assert.ok(h.snap().matches({ active: { lifecycle: 'quarantined' } }));
    assert.equal(h.sessions.length, 5, 'no automatic restart');

    h.actor.send({ type: 'ORDERED_RESTART', reason: 'operator' });
    h.clock.increment(DEFAULT_POLICY.restartDelayMs);
    assert.equal(h.sessions.length, 6);
    assert.equal(h.snap().context.browser.failStreak, 0);
    assert.equal(h.snap().context.recentFailures.length, 0);
    h.connect();
    assert.equal(h.status(), 'connected');
    h.actor.stop();
  });

  test('starts that never reach the network back off up to the ceiling without quarantine, and connect when it is back', () => {
    // found from the outside: a 15 s outage of the separate sandbox process quarantined every instance
    const h = harness();
    h.connect();
    h.crash(); // the network went away under the connected session: a failure like any other
    const unreachable = () => h.session().send({ type: 'SESSION_FAILED', message: 'the sandbox network is unreachable', at: h.clock.now(), unreachable: true });
    for (let i = 0; i < 12; i++) {
      h.clock.increment(h.snap().context.backoffMs);
      unreachable();
      assert.ok(h.snap().matches({ active: { lifecycle: 'backoff' } }), `still backing off after ${i + 2} failures`);
    }
    assert.equal(h.snap().context.recentFailures.length, 1, 'only the crash counts towards quarantine');
    assert.ok(h.snap().context.backoffMs <= DEFAULT_POLICY.backoff.maxMs && h.snap().context.backoffMs >= DEFAULT_POLICY.backoff.maxMs * 0.8, 'at the ceiling');
    assert.equal(h.snap().context.lastError?.reason, 'SESSION_FAILED');
    h.clock.increment(h.snap().context.backoffMs);
    h.connect();
    assert.equal(h.status(), 'connected', 'back by itself, no operator restart');
    // starts that fail otherwise still quarantine
    for (let i = 1; i <= 5; i++) {
      h.session().send({ type: 'SESSION_FAILED', message: 'chromium did not start', at: h.clock.now() });
      if (i < 5) h.clock.increment(h.snap().context.backoffMs);
    }
    assert.ok(h.snap().matches({ active: { lifecycle: 'quarantined' } }));
    h.actor.stop();
  });

  test('failures spread wider than the window do not quarantine', () => {
    const h = harness({ quarantine: { maxFailures: 2, windowMs: 60_000 } });
    h.connect();
    h.crash();
    h.clock.increment(h.snap().context.backoffMs);
    h.connect();
    h.clock.increment(60_000);
    h.crash();
    assert.ok(h.snap().matches({ active: { lifecycle: 'backoff' } }), 'the first failure expired');
    h.clock.increment(h.snap().context.backoffMs);
    h.crash();
    assert.ok(h.snap().matches({ active: { lifecycle: 'quarantined' } }), 'two within the window');
    h.actor.stop();
  });
});

describe('instance machine: ordered restart', () => {
  test('pauses v2, announces the restart, restarts the session and resumes when connected', () => {
    const h = harness();
    h.connect();
    h.actor.send({ type: 'ORDERED_RESTART', reason: 'update' });
    assert.deepEqual(h.notified.at(-1), { event: 'instance_restarting', data: { reason: 'update', expectedDowntimeMs: 30_000 } });
    assert.ok(isPaused(h.snap()));
    assert.equal(h.status(), 'initializing');
    assert.equal(h.sessions[0]?.stopped, true);

    h.clock.increment(DEFAULT_POLICY.restartDelayMs);
    assert.equal(h.sessions.length, 2);
    assert.ok(isPaused(h.snap()), 'still paused while the new session starts');
    h.session().send({ type: 'authenticated', at: h.clock.now() });
    assert.ok(isPaused(h.snap()));

    h.connect();
    assert.equal(h.status(), 'connected');
    assert.equal(isPaused(h.snap()), false);
    assert.deepEqual(h.traces.at(-1), { kind: 'pause_ended', by: 'settled' });
    assert.equal(h.snap().context.lastRestart?.reason, 'update');
    h.actor.stop();
  });

  test('the hard ceiling ends the pause when the session does not come back', () => {
    const h = harness({ orderedRestartHardMs: 120_000 });
    h.connect();
    h.actor.send({ type: 'ORDERED_RESTART' });
    h.clock.increment(DEFAULT_POLICY.restartDelayMs);
    h.session().send({ type: 'qr', qr: 'q', at: h.clock.now() });
    h.clock.increment(120_000 - DEFAULT_POLICY.restartDelayMs - 1);
    assert.ok(isPaused(h.snap()));
    h.clock.increment(1);
    assert.equal(isPaused(h.snap()), false);
    assert.equal(h.status(), 'waiting_qr');
    assert.deepEqual(h.traces.at(-1), { kind: 'pause_ended', by: 'ceiling' });
    h.actor.stop();
  });

  test('a restart that fails into quarantine ends the pause (v2 then sees the instance offline)', () => {
    const h = harness({ quarantine: { maxFailures: 1 } });
    h.connect();
    h.actor.send({ type: 'ORDERED_RESTART' });
    h.clock.increment(DEFAULT_POLICY.restartDelayMs);
    h.session().send({ type: 'SESSION_FAILED', message: 'chromium not found', at: h.clock.now() });
    assert.ok(h.snap().matches({ active: { lifecycle: 'quarantined' } }));
    assert.equal(isPaused(h.snap()), false);
    h.actor.stop();
  });

  test('two instances fail independently', () => {
    const a = harness({ instanceId: 'a' });
    const b = harness({ instanceId: 'b' });
    a.connect();
    b.connect();
    a.crash();
    assert.equal(a.status(), 'error');
    assert.equal(b.status(), 'connected');
    assert.deepEqual(healthCounts([a.snap(), b.snap()]), { total: 2, online: 1, offline: 0, starting: 0, degraded: 1, quarantined: 0 });
    a.actor.stop();
    b.actor.stop();
  });
});

/**
 * The synchronous wait of v1 send-message (SPEC.md "Behaviour of the v1 send routes" 2 to 4, "Ordered
 * restart"): with ceilings a job not due within the wait answers 504 and goes out at its slot exactly once;
 * without ceilings the 504 is unreachable and a message the caller was told did not go out never goes out.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startV1Harness, type V1Harness, type V1Instance, type Reply, WAIT_MS } from './legacy-harness.js';

const HOUR = 3_600_000;
const to = (phone: string, message: string) => ({ phone, message });
const A = '4915112345678';

describe('v1 waits', () => {
  let h: V1Harness;
  before(async () => {
    h = await startV1Harness('legacy_waits');
  });
  after(async () => {
    await h.stop();
  });

  const send = (inst: V1Instance, message: string) => h.post(inst, '/api/send-message', to(A, message));
  const jobOf = async (inst: V1Instance, message: string) => {
    const rows = (await h.jobs(inst)).filter((j) => j.payload.body === message);
    assert.equal(rows.length, 1, `exactly one job for "${message}"`);
    return rows[0] as NonNullable<(typeof rows)[number]>;
  };

  describe('with ceilings (maxPerHour set)', () => {
    test('a job not due within the wait answers 504, then goes out at scheduledAt, once', async () => {
      const inst = await h.add('hourly', { maxPerHour: 1 });
      const first = await h.drive(send(inst, 'first'));
      assert.equal(first.value.status, 200);
      const firstAt = (await jobOf(inst, 'first')).dispatched_at?.getTime() ?? 0;

      const { value: r, elapsedMs } = await h.drive(send(inst, 'second'));
      assert.equal(r.status, 504);
      assert.ok(elapsedMs >= WAIT_MS && elapsedMs <= WAIT_MS + 500, `answered after ${elapsedMs} ms`);
      const data = r.body.data as { jobId: string; scheduledAt: string; etaSeconds: number };
      const slot = Date.parse(data.scheduledAt);
      // planner rule 3: the hourly ceiling moves the slot to the oldest send of the hour + 1 h + 1 ms
      assert.equal(slot, firstAt + HOUR + 1);
      assert.equal(data.etaSeconds, Math.ceil((slot - h.clock.now()) / 1000));
      assert.equal((await jobOf(inst, 'second')).state, 'scheduled');

      // not a millisecond early …
      h.clock.increment(slot - h.clock.now() - 1);
      await h.settle();
      assert.deepEqual(inst.net.bodies(), ['first']);
      // … and exactly at its slot
      h.clock.increment(1);
      await h.settle();
      await h.until(() => inst.net.sent.length === 2, 'the second send');
      assert.deepEqual(inst.net.bodies(), ['first', 'second']);
      assert.equal(inst.net.sent[1]?.at, slot);

      // never again
      await h.advance(3 * HOUR, 60_000);
      assert.deepEqual(inst.net.bodies(), ['first', 'second']);
      const job = await jobOf(inst, 'second');
      assert.equal(job.id, data.jobId);
      assert.equal(job.state, 'sent');
      assert.equal(job.dispatched_at?.getTime(), slot);
      assert.equal(inst.events.filter((e) => e.event === 'message.sent' && e.data.jobId === data.jobId).length, 1);
    });

    test('a call still hanging when the wait ends: 504 says it is being sent, not that it goes out at a slot already past', async () => {
      const inst = await h.add('hanging-ceil', { maxPerHour: 100 });
      const release = inst.net.holdNext();
      const { value: r } = await h.drive(send(inst, 'hanging'));
      assert.equal(r.status, 504);
      assert.equal(r.body.code, 'QUEUE_WAIT_TIMEOUT');
      assert.equal(r.body.error, 'the message was being sent when the synchronous wait ended and the network has not answered yet: poll the job for its outcome, do not resend');
      const data = r.body.data as { jobId: string; etaSeconds: number };
      assert.equal(data.etaSeconds, 0);
      const job = await jobOf(inst, 'hanging');
      assert.deepEqual([job.id, job.state], [data.jobId, 'sending']);
      // the poll then finds its outcome; it was sent once
      release();
      await h.settle();
      await h.until(async () => (await jobOf(inst, 'hanging')).state === 'sent', 'the hanging call answered');
      assert.deepEqual(inst.net.bodies(), ['hanging']);
    });

    test('maxPer24h alone is a ceiling too', async () => {
      const inst = await h.add('daily', { maxPer24h: 1 });
      assert.equal((await h.drive(send(inst, 'one'))).value.status, 200);
      // a minute later the next daily slot lies inside the default 24 h validity
      await h.advance(60_000);
      const { value: r } = await h.drive(send(inst, 'two'));
      assert.equal(r.status, 504);
      assert.equal(r.body.code, 'QUEUE_WAIT_TIMEOUT');
      // right after, it does not: nothing is queued and the answer says so
      const late = await h.post(inst, '/api/send-message', to(A, 'three'));
      assert.equal(late.status, 500);
      assert.equal(late.text, JSON.stringify({ success: false, error: 'not sent: the send limits leave no slot before the message would expire; nothing was sent' }));
      assert.equal((await h.jobs(inst)).length, 2);
    });

    test('an ordered restart outlasting the wait answers 504; the message goes out once connected', async () => {
      const inst = await h.add('restart-ceil', { maxPerHour: 40 });
      inst.handle.connected = false;
      inst.handle.paused = true;
      const { value: r } = await h.drive(send(inst, 'after restart'));
      assert.equal(r.status, 504);
      assert.deepEqual(inst.net.bodies(), []);
      inst.reconnect();
      await h.advance(5_000);
      assert.deepEqual(inst.net.bodies(), ['after restart']);
      assert.equal((await jobOf(inst, 'after restart')).id, (r.body.data as { jobId: string }).jobId);
    });
  });

  describe('without ceilings the 504 is unreachable', () => {
    test('a burst is sent one after the other, all 200 within the wait', async () => {
      const inst = await h.add('burst', {});
      const { value } = await h.drive(Promise.all([1, 2, 3, 4, 5].map((i) => send(inst, `burst ${i}`))));
      assert.deepEqual(value.map((r) => r.status), [200, 200, 200, 200, 200]);
      assert.deepEqual(inst.net.bodies(), [1, 2, 3, 4, 5].map((i) => `burst ${i}`));
    });

    test('more than fits into the wait: the rest is refused at once and never sent', async () => {
      const inst = await h.add('flood', {});
      const { value } = await h.drive(Promise.all(Array.from({ length: 25 }, (_, i) => send(inst, `flood ${i}`))));
      const statuses = value.map((r) => r.status);
      assert.ok(!statuses.includes(504));
      // the wait holds slots 0 s … 19 s at a 1 s pause; the rest is refused before a job exists, or expires
      const delivered = statuses.filter((s) => s === 200).length;
      assert.ok(delivered >= 19, `${delivered} delivered`);
      for (const r of value.filter((x) => x.status !== 200)) {
        assert.equal(r.status, 500);
        assert.equal(r.text, JSON.stringify({ success: false, error: 'not sent within the synchronous wait of 20 s: other messages are ahead in the send queue; nothing was sent' }));
      }
      await h.advance(HOUR, 60_000);
      assert.equal(inst.net.sent.length, delivered);
      const states = (await h.jobs(inst)).map((j) => j.state);
      assert.equal(states.filter((s) => s === 'sent').length, delivered);
      assert.ok(states.every((s) => s === 'sent' || s === 'expired'), states.join());
    });

    test('a pause between two messages longer than the wait: refused at once, and the answer names the pause, not a queue', async () => {
      const inst = await h.add('long-pause', { minDelayMs: 25_000, maxDelayMs: 30_000 });
      const { value: first } = await h.drive(send(inst, 'first'));
      assert.equal(first.status, 200);
      const r = await h.post(inst, '/api/send-message', to(A, 'second'));
      assert.equal(r.status, 500);
      assert.equal(r.text, JSON.stringify({ success: false, error: 'not sent within the synchronous wait of 20 s: the send before it and the pause between two messages (25000-30000 ms) end after the wait; nothing was sent' }));
      assert.equal((await h.jobs(inst)).length, 1, 'nothing queued');
      await h.advance(HOUR, 60_000);
      assert.deepEqual(inst.net.bodies(), ['first']);
    });

    test('quiet hours: refused at once, nothing queued, nothing sent later', async () => {
      const now = new Date(h.clock.now());
      const hh = (d: number) => String((now.getUTCHours() + d) % 24).padStart(2, '0');
      const inst = await h.add('quiet', { quietHours: { start: `${hh(0)}:00`, end: `${hh(2)}:00`, tz: 'UTC' } });
      const r = await h.post(inst, '/api/send-message', to(A, 'at night'));
      const end = new Date(now);
      end.setUTCHours(now.getUTCHours() + 2, 0, 0, 0);
      assert.equal(r.status, 500);
      assert.equal(r.text, JSON.stringify({ success: false, error: `not sent: quiet hours until ${end.toISOString()}; nothing was sent` }));
      assert.equal((await h.jobs(inst)).length, 0);
      await h.advance(3 * HOUR, 60_000);
      assert.deepEqual(inst.net.bodies(), []);
    });

    test('an ordered restart is waited for: connected again within the wait → 200', async () => {
      const inst = await h.add('restart-short', {});
      inst.handle.connected = false;
      inst.handle.paused = true;
      const pending = send(inst, 'waits');
      await h.until(async () => (await h.jobs(inst)).length === 1, 'the job');
      await h.advance(8_000);
      assert.deepEqual(inst.net.bodies(), []);
      inst.reconnect();
      const { value: r } = await h.drive(pending);
      assert.equal(r.status, 200);
      assert.deepEqual(inst.net.bodies(), ['waits']);
    });

    test('an ordered restart outlasting the wait → 503; the job expired and never goes out', async () => {
      const inst = await h.add('restart-long', {});
      inst.handle.connected = false;
      inst.handle.paused = true;
      const { value: r, elapsedMs } = await h.drive(send(inst, 'too late'));
      assert.ok(elapsedMs < WAIT_MS + 500, `answered within the wait (${elapsedMs} ms)`);
      assert.equal(r.status, 503);
      assert.equal(r.text, JSON.stringify({ success: false, error: 'instance not connected: restart in progress; nothing was sent' }));
      assert.equal((await jobOf(inst, 'too late')).state, 'expired');
      inst.reconnect();
      await h.advance(HOUR, 60_000);
      assert.deepEqual(inst.net.bodies(), []);
    });

    test('a worker held by another dispatch: the waiting job expires before the wait ends, the one in flight answered as unknown', async () => {
      const inst = await h.add('held', {});
      const release = inst.net.holdNext();
      const slow = send(inst, 'slow');
      await h.until(async () => (await h.jobs(inst)).length === 1, 'the slow job');
      const blocked = send(inst, 'blocked');
      await h.until(async () => (await h.jobs(inst)).length === 2, 'the blocked job');
      const { value } = await h.drive(Promise.all([slow, blocked]));
      const [s, b] = value as [Reply, Reply];
      assert.equal(s.status, 500);
      assert.equal(s.text, JSON.stringify({ success: false, error: 'the outcome is unknown (the message was being sent when the synchronous wait ended); the message may have been delivered: do not resend' }));
      assert.equal(b.status, 500);
      assert.equal(b.text, JSON.stringify({ success: false, error: 'not sent within the synchronous wait of 20 s: other messages are ahead in the send queue; nothing was sent' }));
      // its validity ends a second before the wait (legacy-queued.ts): it expires then, beside the call that holds
      // the lane (src/queue/dispatch-loop.ts `expireBeside`), before the wait's end would cancel it
      assert.equal((await jobOf(inst, 'blocked')).state, 'expired');
      release();
      await h.settle();
      await h.advance(HOUR, 60_000);
      assert.deepEqual(inst.net.bodies(), ['slow']);
      assert.equal((await jobOf(inst, 'slow')).state, 'sent');
    });
  });
});

/**
 * send-bulk (SPEC.md "send-bulk rules") and v1 in each of the three queue modes (SPEC.md "Queue modes":
 * `pg`, `memory-degraded`, `disabled`).
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startV1Harness, type V1Harness, type V1Instance, WAIT_MS } from './legacy-harness.js';

const HOUR = 3_600_000;
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
type Entry = { phone: string | null; status: string; jobId?: string; error?: string };
const entriesOf = (data: Record<string, unknown> | undefined) => (data?.messages ?? []) as Entry[];

describe('send-bulk', () => {
  let h: V1Harness;
  before(async () => {
    h = await startV1Harness('legacy_bulk');
  });
  after(async () => {
    await h.stop();
  });

  test('mixed valid and invalid entries: each judged alone, queued = messages.length, sent in order', async () => {
    const inst = await h.add('mixed', {});
    const messages = [
      { phone: '+4915111111111', message: 'one' },
      { phone: '12', message: 'bad number' },
      { phone: '4915122222222' },
      { chatId: '4915133333333@c.us', message: 'three' },
      { chatId: '120363000000000001@g.us', message: 'a group' },
      42,
      { phone: '015144444444', message: 'four' },
      { chatId: '123456789012345@lid', message: 'five' },
    ];
    const r = await h.post(inst, '/api/send-bulk', { messages });
    assert.equal(r.status, 200);
    assert.equal(r.body.success, true);
    assert.equal(r.body.data?.queued, messages.length);
    const entries = entriesOf(r.body.data);
    assert.deepEqual(entries.map((e) => [e.phone, e.status, e.error ?? null]), [
      ['4915111111111', 'queued', null],
      ['12', 'rejected', 'invalid phone number: use the international format with or without +, or a German national number starting with 0'],
      ['4915122222222', 'rejected', 'message is required'],
      ['4915133333333', 'queued', null],
      ['120363000000000001@g.us', 'rejected', 'chatId must end in @c.us or @lid'],
      [null, 'rejected', 'entry must be an object {phone or chatId, message}'],
      ['4915144444444', 'queued', null],
      ['123456789012345@lid', 'queued', null],
    ]);
    const jobs = await h.jobs(inst);
    assert.deepEqual(jobs.map((j) => j.id), entries.filter((e) => e.status === 'queued').map((e) => e.jobId));
    assert.ok(jobs.every((j) => j.priority === 5 && j.origin_route === '/api/send-bulk'));

    await h.advance(10_000);
    assert.deepEqual(inst.net.bodies(), ['one', 'three', 'four', 'five']);
    assert.deepEqual(inst.net.sent.map((s) => s.chatId), ['4915111111111@c.us', '4915133333333@c.us', '4915144444444@c.us', '123456789012345@lid']);
  });

  test('an entry with a NUL or half of a surrogate pair is rejected alone; the others are queued', async () => {
    // found from the outside: the body reader refused the whole batch (400 VALIDATION_FAILED, field
    // messages.1.message) and nothing was queued, against rule 3
    const inst = await h.add('nul', {});
    const messages = [
      { phone: '4915112345678', message: 'b1' },
      { phone: '4915112345678', message: 'a\u0000b' },
      { phone: '4915112345678', message: 'x\ud800' },
      { chatId: '4915112345679@c.us', message: 'ok', ['k\u0000']: 1 },
      { phone: '4915112345679', message: 'b2' },
    ];
    const r = await h.post(inst, '/api/send-bulk', { messages });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data?.queued, messages.length);
    assert.deepEqual(entriesOf(r.body.data).map((e) => [e.phone, e.status, e.error ?? null]), [
      ['4915112345678', 'queued', null],
      ['4915112345678', 'rejected', 'message must not contain NUL characters'],
      ['4915112345678', 'rejected', 'message must be well-formed Unicode (it holds half of a surrogate pair)'],
      ['4915112345679@c.us', 'rejected', 'field names must not contain NUL characters'],
      ['4915112345679', 'queued', null],
    ]);
    assert.deepEqual((await h.jobs(inst)).map((j) => j.payload.body), ['b1', 'b2']);

    // outside the entries (the escape as a client writes it, too) the body is refused as before, and so is a
    // key that reaches a prototype inside an entry; nothing is queued
    for (const [body, field] of [
      [JSON.stringify({ messages: [{ phone: '4915112345678', message: 'b3' }], note: 'a\u0000b' }), 'note'],
      [`{"messages":[{"phone":"4915112345678","message":"b3"}],"note":"\\ud800"}`, 'note'],
      [`{"messages":["a\\u0000b"]}`, 'messages.0'],
      [`{"messages":[{"phone":"4915112345678","message":"a\\u0000","__proto__":{}}]}`, 'messages.0.__proto__'],
    ] as const) {
      const refused = await h.post(inst, '/api/send-bulk', body);
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.success, false, refused.text);
      assert.equal(refused.body.data?.field, field, refused.text);
    }
    assert.equal((await h.jobs(inst)).length, 2);
  });

  test('entries of more than one ask (4 MB of messages) go to the queue in parts, in order, each answered', async () => {
    const inst = await h.add('parts', {});
    const big = (c: string) => c.repeat(1_500_000);
    // 1.5 MB each: asks of two, two and one; a rejected entry in between takes no place in any ask
    const messages = [
      { phone: '4915111111111', message: big('a') },
      { phone: '4915122222222', message: big('b') },
      { phone: '12', message: 'bad number' },
      { phone: '4915133333333', message: big('c') },
      { phone: '4915144444444', message: big('d') },
      { phone: '4915155555555', message: big('e') },
    ];
    const r = await h.post(inst, '/api/send-bulk', { messages });
    assert.equal(r.status, 200);
    const entries = entriesOf(r.body.data);
    assert.deepEqual(entries.map((e) => [e.phone, e.status]), [
      ['4915111111111', 'queued'],
      ['4915122222222', 'queued'],
      ['12', 'rejected'],
      ['4915133333333', 'queued'],
      ['4915144444444', 'queued'],
      ['4915155555555', 'queued'],
    ]);
    const jobs = await h.jobs(inst);
    assert.deepEqual(jobs.map((j) => j.id), entries.filter((e) => e.status === 'queued').map((e) => e.jobId));
    assert.deepEqual(jobs.map((j) => (j.payload.body as string)[0]), ['a', 'b', 'c', 'd', 'e']);
  });

  test('a v1 send-message (priority 9) goes out before the rest of a batch (priority 5)', async () => {
    const inst = await h.add('priority', {});
    const messages = Array.from({ length: 5 }, (_, i) => ({ phone: '4915111111111', message: `bulk ${i}` }));
    assert.equal((await h.post(inst, '/api/send-bulk', { messages })).status, 200);
    const { value: r } = await h.drive(h.post(inst, '/api/send-message', { phone: '4915122222222', message: 'urgent' }));
    assert.equal(r.status, 200);
    await h.advance(10_000);
    const order = inst.net.bodies();
    assert.equal(order.length, 6);
    assert.ok(order.indexOf('urgent') <= 1, order.join());
  });

  test('an ordered restart: entries are accepted (no 503) and go out once connected', async () => {
    const inst = await h.add('bulk-restart', {});
    inst.handle.connected = false;
    inst.handle.paused = true;
    const r = await h.post(inst, '/api/send-bulk', { messages: [{ phone: '4915111111111', message: 'held' }] });
    assert.equal(r.status, 200);
    assert.equal(entriesOf(r.body.data)[0]?.status, 'queued');
    await h.advance(5_000);
    assert.deepEqual(inst.net.bodies(), []);
    inst.reconnect();
    await h.advance(5_000);
    assert.deepEqual(inst.net.bodies(), ['held']);
  });
});

describe('send-bulk beyond QUEUE_MAX_PENDING', () => {
  let h: V1Harness;
  before(async () => {
    h = await startV1Harness('legacy_bulk_full', { QUEUE_MAX_PENDING: '3' });
  });
  after(async () => {
    await h.stop();
  });

  test('entries beyond the pending ceiling are rejected one by one; the others are queued', async () => {
    const inst = await h.add('full', { maxPerHour: 1 });
    const one = await h.post(inst, '/api/send-bulk', { messages: [{ phone: '4915111111111', message: 'already waiting' }] });
    assert.equal(entriesOf(one.body.data)[0]?.status, 'queued');
    const messages = Array.from({ length: 4 }, (_, i) => ({ phone: '4915111111111', message: `m${i}` }));
    const r = await h.post(inst, '/api/send-bulk', { messages });
    assert.equal(r.status, 200);
    assert.equal(r.body.data?.queued, 4);
    // two fit beside the waiting one; the queue refuses the third and the fourth (it has no room for them)
    assert.deepEqual(entriesOf(r.body.data).map((e) => [e.status, e.error ?? null]), [
      ['queued', null],
      ['queued', null],
      ['rejected', 'more than 3 pending jobs for this instance'],
      ['rejected', 'more than 3 pending jobs for this instance'],
    ]);
    assert.equal((await h.jobs(inst)).length, 3);
  });
});

describe('v1 in each queue mode', () => {
  let h: V1Harness;
  before(async () => {
    h = await startV1Harness('legacy_modes');
  });
  after(async () => {
    await h.stop();
  });

  // the same limits everywhere: 2 per hour, at least 3 s apart
  const limits = { maxPerHour: 2, minDelayMs: 3_000, maxDelayMs: 3_000 };
  const send = (inst: V1Instance, message: string) => h.post(inst, '/api/send-message', { phone: '4915111111111', message });
  const bulkOf = (inst: V1Instance) => h.post(inst, '/api/send-bulk', { messages: [{ phone: '4915111111111', message: 'b' }, { phone: 'x', message: 'b' }] });

  test('pg: through the queue; the pause is waited for, the ceiling answers 504', async () => {
    const inst = await h.add('mode-pg', limits, { mode: 'pg' });
    const a = await h.drive(send(inst, 'a'));
    const b = await h.drive(send(inst, 'b'));
    const c = await h.drive(send(inst, 'c'));
    assert.deepEqual([a.value.status, b.value.status, c.value.status], [200, 200, 504]);
    assert.equal(b.elapsedMs, 3_000);
    assert.equal(c.elapsedMs, WAIT_MS);
    assert.equal((await h.jobs(inst)).length, 3);
  });

  test('memory-degraded: sent at once through the in-memory gate; a refusal inside the wait is waited out, beyond it 500', async () => {
    const inst = await h.add('mode-mem', limits, { mode: 'memory-degraded' });
    const a = await h.drive(send(inst, 'a'));
    assert.equal(a.value.status, 200);
    assert.equal(a.elapsedMs, 0);
    const b = await h.drive(send(inst, 'b'));
    assert.equal(b.value.status, 200);
    assert.equal(b.elapsedMs, 3_000);
    const c = await h.drive(send(inst, 'c'));
    assert.equal(c.elapsedMs, 0);
    const retryAt = new Date((inst.directSends[0] as number) + HOUR + 1).toISOString();
    assert.equal(c.value.status, 500);
    assert.equal(c.value.text, JSON.stringify({ success: false, error: `not sent: the send limits allow the next message at ${retryAt}; nothing was sent` }));
    assert.deepEqual(inst.net.bodies(), ['a', 'b']);
    assert.equal(a.value.text, JSON.stringify({ success: true, data: { messageId: inst.net.sent[0]?.id, phone: '4915111111111', status: 'sent' } }));
    assert.equal((await h.jobs(inst)).length, 0, 'nothing persisted');
    const bulk = await bulkOf(inst);
    assert.equal(bulk.text, JSON.stringify({
      success: true,
      data: {
        queued: 2,
        messages: [
          { phone: '4915111111111', status: 'rejected', error: 'the persistent queue is off for this instance (queue mode memory-degraded): nothing was queued; send this message with /api/send-message' },
          { phone: 'x', status: 'rejected', error: 'invalid phone number: use the international format with or without +, or a German national number starting with 0' },
        ],
      },
    }));
  });

  test('disabled: sent at once, no limits; media too; bulk entries rejected', async () => {
    const inst = await h.add('mode-off', { ...limits, enabled: false }, { mode: 'disabled' });
    for (const m of ['a', 'b', 'c', 'd']) {
      const r = await h.drive(send(inst, m));
      assert.equal(r.value.status, 200);
      assert.equal(r.elapsedMs, 0);
    }
    const media = await h.drive(h.post(inst, '/api/send-media', { phone: '4915111111111', mediaBase64: PNG, mimetype: 'image/png', caption: 'pic' }));
    assert.equal(media.value.text, JSON.stringify({ success: true, data: { messageId: inst.net.sent[4]?.id, phone: '4915111111111', status: 'sent', type: 'media' } }));
    assert.deepEqual(inst.net.bodies(), ['a', 'b', 'c', 'd', '[media] pic']);
    assert.equal((await h.jobs(inst)).length, 0);
    const bulk = await bulkOf(inst);
    assert.equal(bulk.status, 200);
    assert.deepEqual(entriesOf(bulk.body.data).map((e) => e.error), [
      'the persistent queue is off for this instance (queue mode disabled): nothing was queued; send this message with /api/send-message',
      'invalid phone number: use the international format with or without +, or a German national number starting with 0',
    ]);
  });

  test('disabled: an ordered restart is waited for within the wait, then 503', async () => {
    const inst = await h.add('mode-off-restart', { enabled: false }, { mode: 'disabled' });
    inst.handle.connected = false;
    inst.handle.paused = true;
    const pending = send(inst, 'after restart');
    await h.advance(5_000);
    inst.reconnect();
    const ok = await h.drive(pending);
    assert.equal(ok.value.status, 200);
    assert.deepEqual(inst.net.bodies(), ['after restart']);

    inst.handle.connected = false;
    inst.handle.paused = true;
    const late = await h.drive(send(inst, 'never'));
    assert.equal(late.elapsedMs, WAIT_MS);
    assert.equal(late.value.text, JSON.stringify({ success: false, error: 'instance not connected: restart in progress; nothing was sent' }));
    assert.equal(late.value.status, 503);
    inst.reconnect();
    await h.advance(60_000);
    assert.deepEqual(inst.net.bodies(), ['after restart']);
  });
});

/**
 * Golden bytes of every v1 answer shape (SPEC.md "v1 routes (synchronous, frozen)"): each expected body is
 * JSON.stringify of a literal written in the SPEC.md key order, with only ids and instants taken from the
 * network, the database or the clock, and compared with the raw response text. A renamed, added, dropped or
 * reordered key fails here.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startV1Harness, type V1Harness, type V1Instance, OWN_NUMBER, WAIT_MS } from './legacy-harness.js';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const golden = (o: unknown) => JSON.stringify(o);
const v1Error = (error: string) => golden({ success: false, error });

describe('v1 answers, byte for byte', () => {
  let h: V1Harness;
  let main: V1Instance;

  before(async () => {
    h = await startV1Harness('legacy_golden');
    // an existing instance with the queue switched on: no ceilings, 1 s pause
    main = await h.add('main', {});
  });
  after(async () => {
    await h.stop();
  });

  const lastSent = () => {
    const s = main.net.sent[main.net.sent.length - 1];
    assert.ok(s, 'something was sent');
    return s;
  };

  test('200 send-message: phone with +, national 0, @c.us and @lid', async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ phone: '+4915112345678', message: 'plus' }, '4915112345678', '4915112345678@c.us'],
      [{ phone: '015112345678', message: 'national' }, '4915112345678', '4915112345678@c.us'],
      [{ phone: 4915112345670, message: 'a JSON number' }, '4915112345670', '4915112345670@c.us'],
      [{ chatId: '4915112345671@c.us', message: 'c.us' }, '4915112345671', '4915112345671@c.us'],
      [{ chatId: '123456789012345@lid', message: 'lid' }, '123456789012345@lid', '123456789012345@lid'],
      // chatId wins when both are given
      [{ phone: '4915100000000', chatId: '4915112345672@c.us', message: 'both' }, '4915112345672', '4915112345672@c.us'],
    ];
    for (const [body, phone, chatId] of cases) {
      const { value: r } = await h.drive(h.post(main, '/api/send-message', body));
      const sent = lastSent();
      assert.equal(sent.chatId, chatId);
      assert.deepEqual(sent.content, { kind: 'text', body: body.message });
      assert.equal(r.status, 200);
      assert.equal(r.text, golden({ success: true, data: { messageId: sent.id, phone, status: 'sent' } }));
    }
  });

  test('200 send-media: type media after status; message is the caption alias', async () => {
    const { value: r } = await h.drive(h.post(main, '/api/send-media', { phone: '4915112345678', mediaBase64: PNG, mimetype: 'image/png', message: 'look' }));
    const sent = lastSent();
    assert.equal(sent.content.kind, 'media');
    assert.equal(sent.content.kind === 'media' ? sent.content.caption : null, 'look');
    assert.equal(r.status, 200);
    assert.equal(r.text, golden({ success: true, data: { messageId: sent.id, phone: '4915112345678', status: 'sent', type: 'media' } }));
  });

  test('v2-only fields in a v1 body change nothing: priority 9, no idempotency key', async () => {
    const { value: r } = await h.drive(h.post(main, '/api/send-message', { phone: '4915112345678', message: 'v2 fields', priority: 1, idempotencyKey: 'abcdefgh-1', ttlSeconds: 60 }));
    assert.equal(r.status, 200);
    const { rows } = await h.db.pool.query('SELECT priority, idempotency_key, origin_route FROM jobs WHERE payload->>\'body\' = $1', ['v2 fields']);
    assert.deepEqual(rows, [{ priority: 9, idempotency_key: null, origin_route: '/api/send-message' }]);
  });

  test('400 for a missing field: {success:false, error} and no code', async () => {
    const cases: [string, unknown, string][] = [
      ['/api/send-message', { message: 'no recipient' }, 'phone or chatId is required'],
      ['/api/send-message', { phone: '', chatId: null, message: 'empty recipient' }, 'phone or chatId is required'],
      ['/api/send-message', { phone: '4915112345678' }, 'message is required'],
      ['/api/send-message', { phone: '4915112345678', message: '' }, 'message is required'],
      ['/api/send-message', [], 'phone or chatId is required'],
      ['/api/send-media', { phone: '4915112345678', caption: 'no media' }, 'mediaUrl or mediaBase64 is required'],
      ['/api/send-media', { phone: '4915112345678', mediaBase64: PNG }, 'mimetype is required with mediaBase64'],
      ['/api/send-bulk', {}, 'messages is required: a non-empty array of {phone or chatId, message}'],
      ['/api/send-bulk', { messages: [] }, 'messages is required: a non-empty array of {phone or chatId, message}'],
    ];
    for (const [route, body, error] of cases) {
      const r = await h.post(main, route, body);
      assert.equal(r.status, 400, `${route} ${JSON.stringify(body)}`);
      assert.equal(r.text, v1Error(error));
    }
  });

  test('500 for a validation failure, before anything is queued', async () => {
    const before = (await h.jobs(main)).length;
    const cases: [string, unknown, string][] = [
      ['/api/send-message', { phone: 'abc', message: 'x' }, 'invalid phone number: use the international format with or without +, or a German national number starting with 0'],
      ['/api/send-message', { chatId: '120363000000000001@g.us', message: 'x' }, 'chatId must end in @c.us or @lid'],
      ['/api/send-message', { phone: OWN_NUMBER, message: 'x' }, 'cannot send to the instance\'s own number'],
      ['/api/send-message', { phone: '4915112345678', message: 42 }, 'message must be a string'],
      ['/api/send-media', { phone: '4915112345678', mediaUrl: 'https://example.org/a.png', mediaBase64: PNG, mimetype: 'image/png' }, 'give either mediaUrl or mediaBase64, not both'],
      ['/api/send-media', { phone: '4915112345678', mediaUrl: 'ftp://example.org/a.png' }, 'mediaUrl must be an http or https URL'],
    ];
    for (const [route, body, error] of cases) {
      const r = await h.post(main, route, body);
      assert.equal(r.status, 500, `${route} ${JSON.stringify(body)}`);
      assert.equal(r.text, v1Error(error));
    }
    // the SSRF check of the media module, its text passed through
    const ssrf = await h.post(main, '/api/send-media', { phone: '4915112345678', mediaUrl: 'http://127.0.0.1/a.png' });
    assert.equal(ssrf.status, 500);
    assert.equal(typeof ssrf.body.error, 'string');
    assert.equal(ssrf.text, v1Error(ssrf.body.error as string));
    assert.equal((await h.jobs(main)).length, before);
  });

  test('500 not delivered: the network refused (failed) or gave no verifiable answer (unknown)', async () => {
    main.net.unregistered.add('4915188888888@c.us');
    const { value: failed } = await h.drive(h.post(main, '/api/send-message', { phone: '4915188888888', message: 'nobody' }));
    assert.equal(failed.status, 500);
    assert.equal(failed.text, v1Error('recipient not registered on the network'));

    main.net.dropNext = 1;
    const { value: unknown } = await h.drive(h.post(main, '/api/send-message', { phone: '4915112345678', message: 'dropped' }));
    assert.equal(unknown.status, 500);
    assert.equal(unknown.text, v1Error('the outcome is unknown (CALL_FAILED: connection lost during the send); the message may have been delivered: do not resend'));
  });

  test('503 not connected (outside an ordered restart): answered at once, nothing queued', async () => {
    const before = (await h.jobs(main)).length;
    main.handle.connected = false;
    try {
      for (const [route, body] of [
        ['/api/send-message', { phone: '4915112345678', message: 'offline' }],
        ['/api/send-media', { phone: '4915112345678', mediaBase64: PNG, mimetype: 'image/png' }],
        ['/api/send-bulk', { messages: [{ phone: '4915112345678', message: 'offline' }] }],
      ] as const) {
        const r = await h.post(main, route, body);
        assert.equal(r.status, 503);
        assert.equal(r.text, v1Error('instance not connected'));
      }
    } finally {
      main.handle.connected = true;
    }
    assert.equal((await h.jobs(main)).length, before);
  });

  test('202 with legacyQueueMode async: send-message and send-media', async () => {
    const asyncInst = await h.add('async', { legacyQueueMode: 'async' });
    const r = await h.post(asyncInst, '/api/send-message', { phone: '+4915112345678', message: 'later' });
    const m = await h.post(asyncInst, '/api/send-media', { chatId: '123456789012345@lid', mediaBase64: PNG, mimetype: 'image/png' });
    const [j1, j2] = await h.jobs(asyncInst);
    assert.ok(j1 && j2 && j1.scheduled_at && j2.scheduled_at);
    const now = h.clock.now();
    const eta = (d: Date) => Math.max(0, Math.ceil((d.getTime() - now) / 1000));
    assert.equal(r.status, 202);
    assert.equal(r.text, golden({
      success: true,
      data: { messageId: null, phone: '4915112345678', status: 'queued', jobId: j1.id, scheduledAt: j1.scheduled_at.toISOString(), etaSeconds: eta(j1.scheduled_at) },
    }));
    assert.equal(m.status, 202);
    assert.equal(m.text, golden({
      success: true,
      data: { messageId: null, phone: '123456789012345@lid', status: 'queued', type: 'media', jobId: j2.id, scheduledAt: j2.scheduled_at.toISOString(), etaSeconds: eta(j2.scheduled_at) },
    }));
    // and they go out by themselves
    await h.advance(5_000);
    assert.equal(asyncInst.net.sent.length, 2);
  });

  test('504 QUEUE_WAIT_TIMEOUT with ceilings: {success, error, code, data:{jobId, scheduledAt, etaSeconds}}', async () => {
    const ceil = await h.add('ceil', { maxPerHour: 1 });
    const { value: first } = await h.drive(h.post(ceil, '/api/send-message', { phone: '4915112345678', message: 'first' }));
    assert.equal(first.status, 200);
    const { value: r, elapsedMs } = await h.drive(h.post(ceil, '/api/send-message', { phone: '4915112345678', message: 'second' }));
    const waiting = (await h.jobs(ceil)).find((j) => j.state === 'scheduled');
    assert.ok(waiting?.scheduled_at);
    assert.ok(elapsedMs >= WAIT_MS && elapsedMs <= WAIT_MS + 1_000, `answered after ${elapsedMs} ms`);
    assert.equal(r.status, 504);
    assert.equal(r.text, golden({
      success: false,
      error: 'the message is still queued after the synchronous wait; it goes out at scheduledAt: poll the job, do not resend',
      code: 'QUEUE_WAIT_TIMEOUT',
      data: { jobId: waiting.id, scheduledAt: waiting.scheduled_at.toISOString(), etaSeconds: Math.ceil((waiting.scheduled_at.getTime() - h.clock.now()) / 1000) },
    }));
  });

  test('200 send-bulk: {success, data:{queued, messages:[entry]}}', async () => {
    const bulk = await h.add('bulk', {});
    const r = await h.post(bulk, '/api/send-bulk', {
      messages: [
        { phone: '+4915112345678', message: 'one' },
        { phone: 'abc', message: 'two' },
        { chatId: '123456789012345@lid', message: 'three' },
      ],
    });
    const [j1, j3] = await h.jobs(bulk);
    assert.ok(j1?.scheduled_at && j3?.scheduled_at);
    const now = h.clock.now();
    const eta = (d: Date) => Math.max(0, Math.ceil((d.getTime() - now) / 1000));
    assert.equal(r.status, 200);
    assert.equal(r.text, golden({
      success: true,
      data: {
        queued: 3,
        messages: [
          { phone: '4915112345678', status: 'queued', jobId: j1.id, scheduledAt: j1.scheduled_at.toISOString(), etaSeconds: eta(j1.scheduled_at) },
          { phone: 'abc', status: 'rejected', error: 'invalid phone number: use the international format with or without +, or a German national number starting with 0' },
          { phone: '123456789012345@lid', status: 'queued', jobId: j3.id, scheduledAt: j3.scheduled_at.toISOString(), etaSeconds: eta(j3.scheduled_at) },
        ],
      },
    }));
  });
});

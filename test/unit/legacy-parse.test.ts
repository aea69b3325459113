/** v1 body rules (SPEC.md "v1 routes"): phone forms, the chatId kinds, missing (400) against invalid (500). */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { V1Error } from '../../src/http/errors.js';
import { parseBulkEntry, parseV1Send } from '../../src/http/routes/legacy-parse.js';
import { limitsActive, notSentInTime, syncTtlSeconds } from '../../src/http/routes/legacy-queued.js';
import { stoppedView } from '../../machines/instance.snapshot.js';
import { EXISTING_INSTANCE_DEFAULTS } from '../../src/queue/settings.js';

const OWN = '4915199999999';

function failure(f: () => unknown): { status: number; error: string } {
  try {
    f();
  } catch (err) {
    assert.ok(err instanceof V1Error, `a V1Error, got ${String(err)}`);
    assert.deepEqual(Object.keys(err.body), ['success', 'error']);
    return { status: err.status, error: String(err.body.error) };
  }
  assert.fail('expected a failure');
}

describe('v1 recipients', () => {
  const cases: [Record<string, unknown>, string, string][] = [
    [{ phone: '4915112345678' }, '4915112345678', '4915112345678@c.us'],
    [{ phone: '+4915112345678' }, '4915112345678', '4915112345678@c.us'],
    [{ phone: '+49 151 1234-5678' }, '4915112345678', '4915112345678@c.us'],
    [{ phone: '015112345678' }, '4915112345678', '4915112345678@c.us'],
    [{ phone: '0044201234567' }, '44201234567', '44201234567@c.us'],
    // the trunk digit in parentheses after a country code is not dialled from abroad: kept, it made 490151…
    [{ phone: '+49 (0)151 1234-5678' }, '4915112345678', '4915112345678@c.us'],
    [{ phone: '+49(0)15112345678' }, '4915112345678', '4915112345678@c.us'],
    [{ phone: '0044 (0) 20 1234567' }, '44201234567', '44201234567@c.us'],
    [{ phone: '49 (0)151 12345678' }, '4915112345678', '4915112345678@c.us'],
    [{ phone: '(0)151 12345678' }, '4915112345678', '4915112345678@c.us'],
    // only the lone (0) is the trunk digit: Italy dials its 0 from abroad too (+39 06 …), so (06) stays
    [{ phone: '+39 (06) 1234 5678' }, '390612345678', '390612345678@c.us'],
    [{ phone: 4915112345678 }, '4915112345678', '4915112345678@c.us'],
    [{ chatId: '4915112345678@c.us' }, '4915112345678', '4915112345678@c.us'],
    [{ chatId: '123456789012345@lid' }, '123456789012345@lid', '123456789012345@lid'],
    [{ chatId: '123456789012345@lid', phone: '4915100000000' }, '123456789012345@lid', '123456789012345@lid'],
  ];
  for (const [to, phone, chatId] of cases) {
    test(`${JSON.stringify(to)} → phone ${phone}, chat ${chatId}`, () => {
      const s = parseV1Send('text', { ...to, message: 'hi' }, OWN);
      assert.equal(s.phone, phone);
      assert.equal(s.parsed.chatId, chatId);
      assert.deepEqual(s.parsed.payload, { body: 'hi', chatId });
    });
  }

  test('missing is 400, invalid is 500', () => {
    assert.deepEqual(failure(() => parseV1Send('text', { message: 'x' }, OWN)), { status: 400, error: 'phone or chatId is required' });
    assert.deepEqual(failure(() => parseV1Send('text', { phone: null, chatId: '', message: 'x' }, OWN)), { status: 400, error: 'phone or chatId is required' });
    assert.deepEqual(failure(() => parseV1Send('text', null, OWN)), { status: 400, error: 'phone or chatId is required' });
    assert.equal(failure(() => parseV1Send('text', { phone: '12', message: 'x' }, OWN)).status, 500);
    assert.equal(failure(() => parseV1Send('text', { phone: true, message: 'x' }, OWN)).status, 500);
    assert.equal(failure(() => parseV1Send('text', { chatId: '1203630000001@g.us', message: 'x' }, OWN)).status, 500);
    assert.equal(failure(() => parseV1Send('text', { phone: OWN, message: 'x' }, OWN)).status, 500);
    assert.equal(failure(() => parseV1Send('text', { chatId: `${OWN}@c.us`, message: 'x' }, OWN)).status, 500);
  });
});

describe('v1 media', () => {
  test('message is the caption alias; caption wins; v2-only fields are dropped', () => {
    const a = parseV1Send('media', { phone: '4915112345678', mediaUrl: 'https://example.org/a.png', message: 'alias' }, OWN);
    assert.deepEqual(a.parsed.payload, { mediaUrl: 'https://example.org/a.png', caption: 'alias', chatId: '4915112345678@c.us' });
    const b = parseV1Send('media', { phone: '4915112345678', mediaUrl: 'https://example.org/a.png', caption: 'caption', message: 'alias', mediaId: 'md_x', options: { isViewOnce: true } }, OWN);
    assert.deepEqual(b.parsed.payload, { mediaUrl: 'https://example.org/a.png', caption: 'caption', chatId: '4915112345678@c.us' });
    assert.equal(b.parsed.priority, 5, 'the route sets 9 itself');
    assert.equal(b.parsed.idempotencyKey, null);
  });

  test('a missing source or mimetype is 400; two sources are 500', () => {
    assert.deepEqual(failure(() => parseV1Send('media', { phone: '4915112345678' }, OWN)), { status: 400, error: 'mediaUrl or mediaBase64 is required' });
    assert.deepEqual(failure(() => parseV1Send('media', { phone: '4915112345678', mediaBase64: 'AAAA' }, OWN)), { status: 400, error: 'mimetype is required with mediaBase64' });
    assert.equal(failure(() => parseV1Send('media', { phone: '4915112345678', mediaBase64: 'AAAA', mimetype: 'image/png', mediaUrl: 'https://example.org/a' }, OWN)).status, 500);
    assert.equal(failure(() => parseV1Send('media', { phone: '4915112345678', mediaBase64: 'data:image/png;base64,AAAA', mimetype: 'image/png' }, OWN)).status, 500);
  });
});

describe('send-bulk entries', () => {
  test('a bad entry is a rejection naming the recipient as written', () => {
    assert.deepEqual(parseBulkEntry({ phone: 'nope', message: 'x' }, OWN), { ok: false, phone: 'nope', error: 'invalid phone number: use the international format with or without +, or a German national number starting with 0' });
    assert.deepEqual(parseBulkEntry({ chatId: 'x@g.us', message: 'x' }, OWN), { ok: false, phone: 'x@g.us', error: 'chatId must end in @c.us or @lid' });
    assert.deepEqual(parseBulkEntry('text', OWN), { ok: false, phone: null, error: 'entry must be an object {phone or chatId, message}' });
    assert.deepEqual(parseBulkEntry({ phone: 4915112345678 }, OWN), { ok: false, phone: '4915112345678', error: 'message is required' });
    const good = parseBulkEntry({ phone: '015112345678', message: 'x' }, OWN);
    assert.ok(good.ok && good.send.phone === '4915112345678');
  });
});

describe('wait policy', () => {
  test('limits are active when a ceiling is set', () => {
    assert.equal(limitsActive({ maxPerHour: null, maxPer24h: null }), false);
    assert.equal(limitsActive({ maxPerHour: 40, maxPer24h: null }), true);
    assert.equal(limitsActive({ maxPerHour: null, maxPer24h: 500 }), true);
  });

  test('a synchronous job without ceilings expires a second before the wait ends', () => {
    assert.equal(syncTtlSeconds(20_000), 19);
    assert.equal(syncTtlSeconds(25_000), 24);
    assert.equal(syncTtlSeconds(1_500), 1);
    assert.equal(syncTtlSeconds(0), 1);
  });

  test('why a message was not sent in time: a queue ahead of it, or only the send before it and the pause', () => {
    const view = { ...stoppedView('4915100000001'), status: 'connected' as const, connected: true, queueMode: 'pg' as const };
    const settings = { ...EXISTING_INSTANCE_DEFAULTS, minDelayMs: 1_500, maxDelayMs: 3_000, quietHours: null };
    const error = (ahead: number | null, s = settings) => {
      const o = notSentInTime(view, s, 0, 20_000, ahead);
      assert.equal(o.kind, 'not_sent');
      return o.kind === 'not_sent' ? o.error : '';
    };
    const queue = 'not sent within the synchronous wait of 20 s: other messages are ahead in the send queue; nothing was sent';
    const pause = (p: string) => `not sent within the synchronous wait of 20 s: the send before it and the pause between two messages (${p}) end after the wait; nothing was sent`;
    assert.equal(error(3), queue);
    assert.equal(error(null), queue, 'not known, and the pause alone fits into the wait');
    assert.equal(error(0), pause('1500-3000 ms'));
    assert.equal(error(null, { ...settings, minDelayMs: 20_000, maxDelayMs: 20_000 }), pause('20000 ms'));
  });
});

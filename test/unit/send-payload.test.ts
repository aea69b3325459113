/**
 * A send is one union by kind from the route schema to the stored payload to dispatch (src/queue/payload.ts):
 * what every route's parser produces is a valid send of its kind, a stored payload is checked against its
 * kind when read back, and a mismatch names the kind but never the payload.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SEND_KINDS, StoredPayloadInvalid, checkSend } from '../../src/queue/payload.js';
import { parseGroupCreate, parseSend } from '../../src/http/routes/send-schemas.js';
import { checkSourceType } from '../../src/http/routes/send-payloads.js';
import { DomainError } from '../../src/errors.js';

const to = { phone: '4915112345678' };
const BODIES = {
  text: { ...to, message: 'hi', options: { linkPreview: false } },
  media: { ...to, mediaUrl: 'https://example.org/a.png', caption: 'c' },
  voice: { ...to, mediaBase64: 'T2dnUw==', mimetype: 'audio/ogg' },
  document: { ...to, mediaUrl: 'https://example.org/a.pdf', filename: 'a.pdf' },
  sticker: { ...to, mediaUrl: 'https://example.org/a.webp', mimetype: 'image/webp', stickerName: 'n' },
  video: { ...to, mediaUrl: 'https://example.org/a.mp4', asGif: true },
  location: { ...to, latitude: 52.5, longitude: 13.4, name: 'Berlin' },
  contact: { ...to, contactIds: ['4915199999999@c.us'] },
  poll: { ...to, name: 'lunch?', options: ['yes', 'no'] },
  forward: { toChatId: '4915112345678@c.us' },
} as const;

describe('send payloads', () => {
  test('every route parser output is a valid send of its kind, and survives a jsonb round trip', () => {
    for (const [kind, body] of Object.entries(BODIES)) {
      const k = SEND_KINDS.find((x) => x === kind);
      assert.ok(k && k !== 'group_create');
      const parsed = parseSend(k, body, undefined, null, { msgId: 'true_4915100000000@c.us_ABC' });
      assert.equal(parsed.kind, kind);
      const stored: unknown = JSON.parse(JSON.stringify(parsed.payload));
      assert.deepEqual(checkSend(parsed.kind, stored), { kind: parsed.kind, payload: parsed.payload }, kind);
    }
    const group = parseGroupCreate({ title: 'g', participants: ['4915199999999@c.us'] }, undefined, null);
    assert.deepEqual(checkSend('group_create', JSON.parse(JSON.stringify(group.payload))).payload, group.payload);
  });

  test('a stored payload that is not its kind is refused, naming the kind and not the content', () => {
    assert.throws(() => checkSend('text', { chatId: '1@c.us', body: 42 }), (e: unknown) => e instanceof StoredPayloadInvalid && /text/.test(e.message) && !/42/.test(e.message));
    assert.throws(() => checkSend('poll', { chatId: '1@c.us', body: 'secret text' }), (e: unknown) => e instanceof StoredPayloadInvalid && !/secret/.test(e.message));
    assert.throws(() => checkSend('telegram', {}), StoredPayloadInvalid);
    assert.throws(() => checkSend('text', null), StoredPayloadInvalid);
  });

  test('a sticker without mimetype is checked by its source\'s own type, warned about only when none is known', () => {
    const refused = (code: string, field: string) => (e: unknown) => e instanceof DomainError && e.code === code && e.data.field === field;
    const url = { chatId: '1@c.us', mediaUrl: 'https://example.org/a' };
    assert.throws(() => checkSourceType('sticker', url, 'image/gif', []), refused('STICKER_VIDEO_UNSUPPORTED', 'mediaUrl'));
    assert.throws(() => checkSourceType('sticker', url, 'text/html', []), refused('VALIDATION_FAILED', 'mediaUrl'));
    assert.throws(() => checkSourceType('sticker', { chatId: '1@c.us', mediaId: 'md_1' }, 'video/mp4', []), refused('STICKER_VIDEO_UNSUPPORTED', 'mediaId'));
    const warnings: string[] = [];
    checkSourceType('sticker', url, 'image/webp', warnings);
    assert.deepEqual(warnings, []);
    checkSourceType('sticker', url, null, warnings);
    assert.deepEqual(warnings, ['mimetype not given: only image/* can be converted to a sticker']);
    // a given mimetype is the type sent (src/media/resolve.ts), checked with the body already
    checkSourceType('sticker', { ...url, mimetype: 'image/png' }, 'text/plain', warnings);
    checkSourceType('media', url, 'text/plain', warnings);
    assert.equal(warnings.length, 1);
  });
});

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
import { StructError } from 'superstruct';
import { DomainError } from '../../src/errors.js';
import { parse, structField } from '../../src/http/validate.js';
import { ParticipantsBody } from '../../src/http/routes/groups.js';

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

describe('a recipient reads alike in every field that takes one', () => {
  const OWN = '4915550100001';
  const refusal = (fn: () => unknown): { code: string; field: unknown } => {
    try {
      fn();
    } catch (err) {
      // a schema's failure is answered 400 VALIDATION_FAILED at the boundary, naming its path
      if (err instanceof StructError) return { code: 'VALIDATION_FAILED', field: structField(err) };
      assert.ok(err instanceof DomainError, String(err));
      return { code: err.code, field: (err.data as { field?: unknown }).field };
    }
    assert.fail('expected a refusal');
  };

  test('an id with blanks around it: trimmed as chatId is, also as toChatId and as a participant (kept trimmed)', () => {
    for (const spaced of [' 4915112345678@c.us ', '\u00a04915112345678@c.us', '4915112345678@c.us\n']) {
      assert.equal(parseSend('text', { chatId: spaced, message: 'm' }, undefined, OWN).chatId, '4915112345678@c.us');
      const fwd = parseSend('forward', { toChatId: spaced }, undefined, OWN, { msgId: 'true_4915100000000@c.us_ABC' });
      assert.equal(fwd.chatId, '4915112345678@c.us');
      assert.equal((fwd.payload as { toChatId: string }).toChatId, '4915112345678@c.us');
      const group = parseGroupCreate({ title: 'g', participants: [spaced, '4915112345678@c.us'] }, undefined, OWN);
      assert.deepEqual((group.payload as { participants: string[] }).participants, ['4915112345678@c.us'], 'one participant, trimmed');
      assert.deepEqual(parse({ participants: [spaced] }, ParticipantsBody).participants, ['4915112345678@c.us'], 'a group\'s add, remove, promote, demote');
    }
    // the own number with blanks is the own number in each of them
    assert.equal(refusal(() => parseSend('forward', { toChatId: ` ${OWN}@c.us` }, undefined, OWN, { msgId: 'true_4915100000000@c.us_ABC' })).field, 'toChatId');
    assert.equal(refusal(() => parseGroupCreate({ title: 'g', participants: [`${OWN}@c.us `] }, undefined, OWN)).field, 'participants');
  });

  test('a @c.us id is an international number: a leading 0 is refused in every field, the own number behind it too', () => {
    for (const id of ['04915112345678@c.us', `0${OWN}@c.us`, `00${OWN}@c.us`]) {
      assert.deepEqual(refusal(() => parseSend('text', { chatId: id, message: 'm' }, undefined, OWN)), { code: 'VALIDATION_FAILED', field: 'chatId' });
      assert.deepEqual(refusal(() => parseSend('forward', { toChatId: id }, undefined, OWN, { msgId: 'true_4915100000000@c.us_ABC' })), { code: 'VALIDATION_FAILED', field: 'toChatId' });
      assert.deepEqual(refusal(() => parseGroupCreate({ title: 'g', participants: [id] }, undefined, OWN)), { code: 'VALIDATION_FAILED', field: 'participants.0' });
    }
    // a linked id and a group id are the network's digits, as they come
    assert.equal(parseSend('text', { chatId: '012345678901234@lid', message: 'm' }, undefined, OWN).chatId, '012345678901234@lid');
  });

  test('a group mention names a group id as chatId takes one (trimmed); any other text ending in @g.us is refused', () => {
    const mentionOf = (id: string) => (parseSend('text', { chatId: '4915112345678@c.us', message: 'm', options: { groupMentions: [{ subject: 'Team', id }] } }, undefined, OWN).payload as { options?: { groupMentions?: { id: string }[] } }).options?.groupMentions?.[0]?.id;
    assert.equal(mentionOf('120363000000000001@g.us'), '120363000000000001@g.us');
    assert.equal(mentionOf(' 4915112345678-1600000000@g.us\n'), '4915112345678-1600000000@g.us');
    for (const id of ['@g.us', 'x@g.us', 'team@g.us', '123@g.us', '12345-@g.us', '12345@g.us.evil', '4915112345678@c.us', '12345 6789@g.us']) {
      assert.deepEqual(refusal(() => mentionOf(id)), { code: 'VALIDATION_FAILED', field: 'options.groupMentions.0.id' }, id);
    }
  });

  test('phone spellings: the trunk (0) after a country code with any separator, and no number left starting with 0', () => {
    const phoneOf = (phone: string) => parseSend('text', { phone, message: 'm' }, undefined, OWN).phone;
    for (const spelling of ['+49-(0)151-12345678', '+49.(0)151.12345678', '+49/(0)151/12345678', '49-(0)151-12345678', '(+49) (0)151 12345678', '+(49) (0)151 12345678', '(0049) (0)151 12345678', '+0049 (0)151 12345678', '+49\u00a0(0)151\u00a012345678']) {
      assert.equal(phoneOf(spelling), '4915112345678', spelling);
    }
    assert.equal(phoneOf('+44-(0)20-7946-0958'), '442079460958');
    assert.equal(phoneOf('+44 (0) 20 7946 0958'), '442079460958');
    assert.equal(phoneOf('(0)151 12345678'), '4915112345678', 'the national trunk digit at the start');
    for (const spelling of ['0004915112345678', '00015112345678', '+000491511234567', '0 (0)151 12345678', '0(0)15112345678', '+49 151 (0)12345678', '(0)0151 12345678', '(0)00 49 151 12345678']) {
      assert.deepEqual(refusal(() => phoneOf(spelling)), { code: 'VALIDATION_FAILED', field: 'phone' }, spelling);
    }
    assert.deepEqual(refusal(() => phoneOf(`+49-(0)${OWN.slice(2)}`)), { code: 'VALIDATION_FAILED', field: 'phone' }, 'the own number written with its trunk digit');
  });
});

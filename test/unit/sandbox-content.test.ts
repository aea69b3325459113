import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { DriverError } from '../../src/drivers/contract.js';
import { draftFromContent, MAX_IMAGE_BYTES } from '../../src/sandbox/content.js';
import { lidFor, normalizePhone, parseChatId, parseMessageId, serializeId } from '../../src/sandbox/ids.js';
import { deviceTypeOf } from '../../src/sandbox/wire.js';

const noContacts = { vCardOf: () => null };
const b64 = (bytes: Buffer) => bytes.toString('base64');

describe('sandbox ids', () => {
  test('message ids round-trip in the serialized form, with the participant of a group message', () => {
    const direct = serializeId(true, '4917600000042@c.us', '3EB0AABBCCDDEEFF0011');
    assert.equal(direct, 'true_4917600000042@c.us_3EB0AABBCCDDEEFF0011');
    assert.deepEqual(parseMessageId(direct), { fromMe: true, remote: '4917600000042@c.us', key: '3EB0AABBCCDDEEFF0011', participant: null });
    const group = serializeId(false, '120363000000000001@g.us', 'ABCDEF', '4917600000042@c.us');
    assert.deepEqual(parseMessageId(group), { fromMe: false, remote: '120363000000000001@g.us', key: 'ABCDEF', participant: '4917600000042@c.us' });
    assert.equal(parseMessageId('wq_123'), null);
  });

  test('chat ids: users, lids and groups; anything else is refused', () => {
    assert.deepEqual(parseChatId('4917600000042@c.us'), { kind: 'user', phone: '4917600000042' });
    assert.deepEqual(parseChatId('123456789012345@lid'), { kind: 'lid', lid: '123456789012345' });
    assert.deepEqual(parseChatId('120363000000000001@g.us'), { kind: 'group', gid: '120363000000000001@g.us' });
    assert.deepEqual(parseChatId('4917600000042-1700000000@g.us'), { kind: 'group', gid: '4917600000042-1700000000@g.us' });
    assert.equal(parseChatId('hello@c.us'), null);
    assert.equal(parseChatId('4917600000042'), null);
  });

  test('phones normalise to digits; lids are stable per phone', () => {
    assert.equal(normalizePhone('+49 176 000-00042'), '4917600000042');
    assert.equal(normalizePhone('4917600000042@c.us'), '4917600000042');
    assert.equal(normalizePhone('abc'), null);
    assert.equal(lidFor('4917600000042'), lidFor('4917600000042'));
    assert.notEqual(lidFor('4917600000042'), lidFor('4917600000043'));
    assert.match(lidFor('4917600000042'), /^\d{15}$/);
  });

  test('deviceType follows whatsapp-web.js: web keys 3EB0…, iOS 3A…, Android 32 hex', () => {
    assert.equal(deviceTypeOf('3EB0AABBCCDDEEFF0011'), 'web');
    assert.equal(deviceTypeOf('3A1234567890ABCDEF12'), 'ios');
    assert.equal(deviceTypeOf('A'.repeat(32)), 'android');
  });
});

describe('sandbox content typing', () => {
  const audio = Buffer.from('OggS fake opus payload');

  test('audio is a voice note (ptt) only when asked, else audio', () => {
    const media = { mimetype: 'audio/ogg; codecs=opus', data: b64(audio) };
    assert.equal(draftFromContent({ kind: 'media', media }, { sendAudioAsVoice: true }, noContacts).type, 'ptt');
    assert.equal(draftFromContent({ kind: 'media', media }, {}, noContacts).type, 'audio');
  });

  test('images, stickers, documents and unknown files', () => {
    const png = { mimetype: 'image/png', data: b64(Buffer.from([0x89, 0x50, 0x4e, 0x47])) };
    assert.equal(draftFromContent({ kind: 'media', media: png }, {}, noContacts).type, 'image');
    assert.equal(draftFromContent({ kind: 'media', media: png }, { sendMediaAsSticker: true }, noContacts).type, 'sticker');
    assert.equal(draftFromContent({ kind: 'media', media: png }, { sendMediaAsDocument: true }, noContacts).type, 'document');
    const zip = { mimetype: 'application/zip', data: b64(Buffer.from('PK')) };
    assert.equal(draftFromContent({ kind: 'media', media: zip }, {}, noContacts).type, 'document');
    const mp4 = { mimetype: 'video/mp4', data: b64(Buffer.from('ftyp')) };
    assert.throws(() => draftFromContent({ kind: 'media', media: mp4 }, { sendMediaAsSticker: true }, noContacts), DriverError);
    const gif = draftFromContent({ kind: 'media', media: mp4 }, { sendVideoAsGif: true }, noContacts);
    assert.equal(gif.type, 'video');
    assert.equal(gif.media?.ref.isGif, true);
  });

  test('media keeps its bytes and their sha256; malformed or oversized media is refused as provably not sent', () => {
    const bytes = Buffer.from('hello media');
    const d = draftFromContent({ kind: 'media', media: { mimetype: 'text/plain', data: b64(bytes), filename: 'a.txt' }, caption: 'cap' }, {}, noContacts);
    assert.equal(d.media?.ref.sha256, createHash('sha256').update(bytes).digest('hex'));
    assert.equal(d.media?.ref.size, bytes.length);
    assert.equal(d.body, 'cap');
    const refuse = (data: string, mimetype = 'image/png') => {
      try {
        draftFromContent({ kind: 'media', media: { mimetype, data } }, {}, noContacts);
        assert.fail('expected a refusal');
      } catch (err) {
        assert.ok(err instanceof DriverError);
        assert.equal(err.code, 'INVALID_INPUT');
        assert.equal(err.provablyNotSent, true);
      }
    };
    refuse('data:image/png;base64,AAAA');
    refuse('');
    refuse(b64(Buffer.alloc(MAX_IMAGE_BYTES + 1)));
  });

  test('one contact is a vcard, several a multi_vcard; unknown contacts are refused', () => {
    const ctx = { vCardOf: (id: string) => (id.startsWith('49') ? `BEGIN:VCARD\nFN:${id}\nEND:VCARD` : null) };
    const one = draftFromContent({ kind: 'contacts', contactIds: ['491@c.us'] }, {}, ctx);
    assert.equal(one.type, 'vcard');
    assert.equal(one.body, one.vCards[0]);
    const two = draftFromContent({ kind: 'contacts', contactIds: ['491@c.us', '492@c.us'] }, {}, ctx);
    assert.equal(two.type, 'multi_vcard');
    assert.equal(two.vCards.length, 2);
    assert.throws(() => draftFromContent({ kind: 'contacts', contactIds: ['1@c.us'] }, {}, ctx), DriverError);
  });

  test('polls number their options from 0 and refuse duplicates', () => {
    const d = draftFromContent({ kind: 'poll', poll: { pollName: 'Lunch?', pollOptions: ['Pizza', 'Sushi'], options: { allowMultipleAnswers: false } } }, {}, noContacts);
    assert.equal(d.type, 'poll_creation');
    assert.deepEqual(d.poll?.options, [{ name: 'Pizza', localId: 0 }, { name: 'Sushi', localId: 1 }]);
    assert.throws(
      () => draftFromContent({ kind: 'poll', poll: { pollName: 'x', pollOptions: ['a', 'a'], options: { allowMultipleAnswers: false } } }, {}, noContacts),
      DriverError,
    );
  });
});

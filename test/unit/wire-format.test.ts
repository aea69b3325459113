import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { toChat, toContact, toMessage } from '../../src/wire/objects.js';
import type { WireChat, WireContact, WireMessage } from '../../src/drivers/contract.js';

// The field tables of SPEC.md "Chat object" / "Message object" and DESIGN.md's Contact object.
const CHAT_FIELDS = ['id', 'name', 'isGroup', 'isReadOnly', 'unreadCount', 'timestamp', 'archived', 'pinned', 'isMuted', 'muteExpiration'];
const MESSAGE_FIELDS = ['id', 'chatId', 'from', 'to', 'author', 'body', 'type', 'timestamp', 'fromMe', 'hasMedia', 'hasQuotedMsg', 'ack', 'isForwarded', 'deviceType', 'location', 'vCards'];
const CONTACT_FIELDS = ['id', 'number', 'name', 'pushname', 'shortName', 'isBusiness', 'isEnterprise', 'isMyContact', 'isBlocked', 'isGroup', 'isUser', 'isWAContact'];

const incoming: WireMessage = {
  id: { fromMe: false, remote: '4915111111111@c.us', id: 'ABC123', _serialized: 'false_4915111111111@c.us_ABC123' },
  from: '4915111111111@c.us',
  to: '4915199999999@c.us',
  author: null,
  body: 'hello',
  type: 'chat',
  timestamp: 1_767_607_200,
  fromMe: false,
  hasMedia: true,
  hasQuotedMsg: false,
  ack: 3,
  isForwarded: false,
  deviceType: 'android',
  location: null,
  vCards: [],
  mediaInfo: { mimetype: 'image/png', filename: null, size: 10 },
  pollName: 'internal',
};

describe('wire format', () => {
  test('Message: exactly the SPEC.md fields, timestamp seconds → unix milliseconds, chatId from the id', () => {
    const m = toMessage(incoming);
    assert.deepEqual(Object.keys(m).sort(), [...MESSAGE_FIELDS].sort());
    assert.equal(m.timestamp, 1_767_607_200_000);
    assert.equal(m.id, 'false_4915111111111@c.us_ABC123');
    assert.equal(m.chatId, '4915111111111@c.us');
    assert.equal(m.hasMedia, true);
    assert.equal(m.ack, 3);
  });

  test('Message sent by us: chatId is the remote side, not the sender', () => {
    const mine: WireMessage = {
      ...incoming,
      id: { fromMe: true, remote: '4915111111111@c.us', id: 'X', _serialized: 'true_4915111111111@c.us_X' },
      from: '4915199999999@c.us',
      to: '4915111111111@c.us',
      fromMe: true,
      timestamp: 1_767_607_201.5,
      location: { latitude: 52.5, longitude: 13.4, name: 'Berlin' },
      vCards: ['BEGIN:VCARD'],
    };
    const m = toMessage(mine);
    assert.equal(m.chatId, '4915111111111@c.us');
    assert.equal(m.timestamp, 1_767_607_201_500);
    assert.deepEqual(m.location, { latitude: 52.5, longitude: 13.4, name: 'Berlin' });
    assert.deepEqual(m.vCards, ['BEGIN:VCARD']);
  });

  test('Chat: exactly the SPEC.md fields, timestamp stays unix seconds', () => {
    const wire: WireChat & { secret: string } = {
      id: '120363000000000001@g.us',
      name: 'Team',
      isGroup: true,
      isReadOnly: false,
      unreadCount: 2,
      timestamp: 1_767_607_200,
      archived: false,
      pinned: true,
      isMuted: true,
      muteExpiration: 1_767_700_000,
      secret: 'must not leak',
    };
    const c = toChat(wire);
    assert.deepEqual(Object.keys(c).sort(), [...CHAT_FIELDS].sort());
    assert.equal(c.timestamp, 1_767_607_200);
    assert.equal(c.muteExpiration, 1_767_700_000);
    assert.equal(toChat({ ...wire, muteExpiration: null }).muteExpiration, null);
  });

  test('Contact: the DESIGN.md fields', () => {
    const wire: WireContact = {
      id: '4915111111111@c.us',
      number: '4915111111111',
      name: 'Alice',
      pushname: 'alice',
      shortName: null,
      isBusiness: false,
      isEnterprise: false,
      isMyContact: true,
      isBlocked: false,
      isGroup: false,
      isUser: true,
      isWAContact: true,
    };
    const c = toContact(wire);
    assert.deepEqual(Object.keys(c).sort(), [...CONTACT_FIELDS].sort());
    assert.deepEqual(c, wire);
  });
});

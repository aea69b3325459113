/**
 * Every whatsapp-web.js Client event becomes the contract's event with plain-data arguments: ids kept as given
 * (`@lid` too), message timestamps in seconds, ack values as numbers. The payloads are the library's own
 * structures built from WhatsApp Web-like models (see webjs-standin.ts).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { simulatedClock } from '../../src/clock.js';
import type { DriverEventName } from '../../src/drivers/contract.js';
import { WebjsDriver } from '../../src/drivers/webjs/driver.js';
import { LIB_EVENT_NAMES } from '../../src/drivers/webjs/events.js';
import {
  Call,
  GroupNotification,
  Message,
  PollVote,
  Reaction,
  StandInClient,
  msgKey,
  rawChat,
  rawMessage,
  wid,
} from './webjs-standin.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'webjs-events-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

let client: StandInClient;
let driver: WebjsDriver;
const seen: { event: DriverEventName; args: unknown[] }[] = [];
const exercised = new Set<string>();

/** Emit `event` from the library side; return what the driver emitted for it. */
function fire(event: string, ...args: unknown[]): unknown[][] {
  exercised.add(event);
  const from = seen.length;
  client.emit(event, ...args);
  return seen.slice(from).filter((e) => e.event === event).map((e) => e.args);
}

before(async () => {
  driver = new WebjsDriver({
    instanceId: 'events-1',
    dataDir,
    callTimeoutMs: 1000,
    clock: simulatedClock(),
    clientFactory: (options) => (client = new StandInClient(options)),
  });
  for (const name of [...LIB_EVENT_NAMES, 'browser_health', 'fatal'] as DriverEventName[]) {
    driver.on(name, (...args: unknown[]) => seen.push({ event: name, args }));
  }
  await driver.initialize();
});
after(() => driver.destroy());

describe('lifecycle events', () => {
  test('qr and code pass the secret string through; empty ones are dropped', () => {
    assert.deepEqual(fire('qr', '2@abc,def,ghi=='), [['2@abc,def,ghi==']]);
    assert.deepEqual(fire('code', 'K7Q2ZP4M'), [['K7Q2ZP4M']]);
    assert.deepEqual(fire('qr', ''), []);
  });

  test('authenticated drops the auth strategy payload; auth_failure keeps the message', () => {
    assert.deepEqual(fire('authenticated', undefined), [[]]);
    assert.deepEqual(fire('auth_failure', 'restore failed'), [['restore failed']]);
    assert.deepEqual(fire('auth_failure', undefined), [['authentication failed']]);
  });

  test('ready records the account; disconnected clears it', () => {
    assert.equal(driver.info, null);
    client.info = { wid: wid('4915112345678@c.us'), pushname: 'Shop', platform: 'android' };
    assert.deepEqual(fire('ready'), [[]]);
    assert.deepEqual(driver.info, { wid: '4915112345678@c.us', pushname: 'Shop', platform: 'android' });
    assert.deepEqual(fire('disconnected', 'LOGOUT'), [['LOGOUT']]);
    assert.equal(driver.info, null);
    fire('ready');
  });

  test('change_state passes known WAState values only', () => {
    assert.deepEqual(fire('change_state', 'CONNECTED'), [['CONNECTED']]);
    assert.deepEqual(fire('change_state', 'TOS_BLOCK'), [['TOS_BLOCK']]);
    assert.deepEqual(fire('change_state', 'SOMETHING_NEW'), []);
  });

  test('loading_screen gives a number (the library declares a string)', () => {
    assert.deepEqual(fire('loading_screen', 42, 'WhatsApp'), [[42, 'WhatsApp']]);
    assert.deepEqual(fire('loading_screen', '87', 'WhatsApp'), [[87, 'WhatsApp']]);
  });
});

describe('message events', () => {
  const text = () =>
    new Message(client, rawMessage({ id: msgKey(false, '123456789012345@lid', '3EB0TEXT'), from: '123456789012345@lid', ack: 2 }));

  test('message: a plain-data copy, @lid kept, timestamp in seconds', () => {
    const [[m]] = fire('message', text()) as [[Record<string, unknown>]];
    assert.deepEqual(m, {
      id: { fromMe: false, remote: '123456789012345@lid', id: '3EB0TEXT', _serialized: 'false_123456789012345@lid_3EB0TEXT' },
      from: '123456789012345@lid',
      to: '491609876543@c.us',
      author: null,
      body: 'hello',
      type: 'chat',
      timestamp: 1767607200,
      fromMe: false,
      hasMedia: false,
      hasQuotedMsg: false,
      ack: 2,
      isForwarded: false,
      deviceType: 'web',
      location: null,
      vCards: [],
      mediaInfo: null,
    });
    assert.equal(JSON.stringify(m), JSON.stringify(JSON.parse(JSON.stringify(m))), 'serialisable as is');
  });

  test('media message: caption as body, attachment described without bytes', () => {
    const raw = rawMessage({
      type: 'image',
      body: '/9j/4AAQSkZJRgABAQ…thumbnail',
      caption: 'look',
      directPath: '/v/t62.7118-24/abc',
      mimetype: 'image/jpeg',
      filename: null,
      size: 48213,
      author: wid('491511111111@c.us'),
      id: msgKey(false, '120363000000000001@g.us', '3EB0IMG'),
      from: '120363000000000001@g.us',
    });
    const [[m]] = fire('message', new Message(client, raw)) as [[Record<string, unknown>]];
    assert.equal(m.body, 'look');
    assert.equal(m.hasMedia, true);
    assert.deepEqual(m.mediaInfo, { mimetype: 'image/jpeg', filename: null, size: 48213 });
    assert.equal(m.author, '491511111111@c.us');
    assert.equal(m.from, '120363000000000001@g.us');
  });

  test('location, vcard, multi_vcard and poll messages', () => {
    const [[loc]] = fire(
      'message',
      new Message(client, rawMessage({ type: 'location', lat: 52.52, lng: 13.405, loc: 'Alexanderplatz\nBerlin', clientUrl: 'https://x.example' })),
    ) as [[Record<string, unknown>]];
    assert.deepEqual(loc.location, {
      latitude: 52.52,
      longitude: 13.405,
      name: 'Alexanderplatz',
      address: 'Berlin',
      url: 'https://x.example',
      description: 'Alexanderplatz\nBerlin',
    });
    const vcard = 'BEGIN:VCARD\nVERSION:3.0\nFN:Alice\nEND:VCARD';
    const [[one]] = fire('message', new Message(client, rawMessage({ type: 'vcard', body: vcard }))) as [[Record<string, unknown>]];
    assert.deepEqual(one.vCards, [vcard]);
    const [[many]] = fire(
      'message',
      new Message(client, rawMessage({ type: 'multi_vcard', body: '', vcardList: [{ vcard }, { vcard }] })),
    ) as [[Record<string, unknown>]];
    assert.deepEqual(many.vCards, [vcard, vcard]);
    const [[poll]] = fire(
      'message',
      new Message(
        client,
        rawMessage({ type: 'poll_creation', body: '', pollName: 'Lunch?', pollOptions: [{ name: 'Pizza', localId: 0 }, { name: 'Soup', localId: 1 }] }),
      ),
    ) as [[Record<string, unknown>]];
    assert.equal(poll.type, 'poll_creation');
    assert.equal(poll.body, 'Lunch?');
    assert.equal(poll.pollName, 'Lunch?');
    assert.deepEqual(poll.pollOptions, [{ name: 'Pizza', localId: 0 }, { name: 'Soup', localId: 1 }]);
  });

  test('message types the contract does not list become unknown', () => {
    const [[m]] = fire('message', new Message(client, rawMessage({ type: 'groups_v4_invite' }))) as [[Record<string, unknown>]];
    assert.equal(m.type, 'unknown');
  });

  test('message_create, message_revoke_me, ciphertext and media_uploaded carry one message', () => {
    for (const event of ['message_create', 'message_revoke_me', 'message_ciphertext', 'message_ciphertext_failed', 'media_uploaded']) {
      const out = fire(event, text()) as [[{ id: { _serialized: string } }]];
      assert.equal(out.length, 1, event);
      assert.equal(out[0]?.[0].id._serialized, 'false_123456789012345@lid_3EB0TEXT', event);
    }
  });

  test('message_ack: the ack value given with the event', () => {
    const [[m, ack]] = fire('message_ack', text(), 3) as [[{ ack: number }, number]];
    assert.equal(ack, 3);
    assert.equal(m.ack, 2);
    assert.deepEqual(fire('message_ack', text(), -1).map((a) => a[1]), [-1]);
    assert.deepEqual(fire('message_ack', text(), 9).map((a) => a[1]), [2], 'not an ack value: the message\'s own ack');
  });

  test('message_edit keeps new and previous body', () => {
    const [[m, newBody, prevBody]] = fire('message_edit', text(), 'fixed', 'typo') as [[object, string, string]];
    assert.ok(m);
    assert.equal(newBody, 'fixed');
    assert.equal(prevBody, 'typo');
  });

  test('message_revoke_everyone: the original when the library has it, else null', () => {
    const revoked = new Message(client, rawMessage({ type: 'revoked', body: '' }));
    const [[, original]] = fire('message_revoke_everyone', revoked, text()) as [[object, { body: string }]];
    assert.equal(original.body, 'hello');
    const [[, none]] = fire('message_revoke_everyone', revoked, undefined) as [[object, null]];
    assert.equal(none, null);
  });

  test('contact_changed: ids as strings, whether given as strings or wids', () => {
    const notice = new Message(client, rawMessage({ type: 'notification_template', subtype: 'change_number' }));
    assert.deepEqual(fire('contact_changed', notice, '491511234567@c.us', wid('491700000000@c.us'), true).map((a) => a.slice(1)), [
      ['491511234567@c.us', '491700000000@c.us', true],
    ]);
  });

  test('a payload that is not a message is dropped, not thrown', () => {
    assert.deepEqual(fire('message', { nope: true }), []);
    assert.deepEqual(fire('message', undefined), []);
  });
});

describe('reactions, votes, chats, groups, calls, battery', () => {
  test('message_reaction from the library Reaction (message keys, seconds)', () => {
    const parent = msgKey(true, '491511234567@c.us', '3EB0PARENT');
    const reaction = new Reaction(client, {
      msgKey: msgKey(false, '491511234567@c.us', '3EB0REACT'),
      parentMsgKey: parent,
      reactionText: '👍',
      senderUserJid: '491511234567@c.us',
      timestamp: 1767607260.123,
      orphan: 0,
      read: false,
    });
    assert.deepEqual(fire('message_reaction', reaction), [
      [
        {
          id: 'false_491511234567@c.us_3EB0REACT',
          msgId: 'true_491511234567@c.us_3EB0PARENT',
          chatId: '491511234567@c.us',
          senderId: '491511234567@c.us',
          reaction: '👍',
          timestamp: 1767607260,
          orphan: 0,
        },
      ],
    ]);
  });

  test('vote_update from the library PollVote (voter is a wid object at runtime)', () => {
    const parentMessage = rawMessage({
      id: msgKey(true, '491511234567@c.us', '3EB0POLL'),
      type: 'poll_creation',
      pollName: 'Lunch?',
      pollOptions: [{ name: 'Pizza', localId: 0 }, { name: 'Soup', localId: 1 }],
    });
    const vote = new PollVote(client, {
      sender: wid('491511234567@c.us'),
      selectedOptionLocalIds: [1],
      senderTimestampMs: 1767607300000,
      parentMessage,
      parentMsgKey: parentMessage.id,
    });
    assert.deepEqual(fire('vote_update', vote), [
      [
        {
          voter: '491511234567@c.us',
          selectedOptions: [{ name: 'Soup', localId: 1 }],
          interractedAtTs: 1767607300000,
          parentMessageId: 'true_491511234567@c.us_3EB0POLL',
        },
      ],
    ]);
  });

  test('unread_count, chat_removed and chat_archived carry a plain chat', () => {
    const chat = client.chat(rawChat({ unreadCount: 5, pin: 1767600000, archive: true }));
    const [[c]] = fire('unread_count', chat) as [[Record<string, unknown>]];
    assert.deepEqual(c, {
      id: '491511234567@c.us',
      name: 'Alice',
      isGroup: false,
      isReadOnly: false,
      unreadCount: 5,
      timestamp: 1767607000,
      archived: true,
      pinned: true,
      isMuted: false,
      muteExpiration: 0,
    });
    assert.equal(fire('chat_removed', chat).length, 1);
    assert.deepEqual(fire('chat_archived', chat, true, false).map((a) => a.slice(1)), [[true, false]]);
    assert.deepEqual(fire('unread_count', undefined), [], 'the library found no chat: dropped');
  });

  test('group notifications, each kind of event', () => {
    const note = (subtype: string) =>
      new GroupNotification(client, {
        id: msgKey(false, '120363000000000001@g.us', `3EB0G${subtype}`),
        subtype,
        t: 1767607400,
        author: wid('491511234567@c.us'),
        recipients: [wid('123456789012345@lid'), '491700000000@c.us'],
        body: '',
      });
    for (const [event, subtype] of [
      ['group_join', 'add'],
      ['group_leave', 'remove'],
      ['group_admin_changed', 'promote'],
      ['group_membership_request', 'membership_approval_request'],
      ['group_update', 'subject'],
    ] as const) {
      assert.deepEqual(
        fire(event, note(subtype)),
        [
          [
            {
              id: `false_120363000000000001@g.us_3EB0G${subtype}`,
              chatId: '120363000000000001@g.us',
              author: '491511234567@c.us',
              recipientIds: ['123456789012345@lid', '491700000000@c.us'],
              body: '',
              type: subtype,
              timestamp: 1767607400,
            },
          ],
        ],
        event,
      );
    }
  });

  test('call from the library Call (peerJid, offerTime, outgoing)', () => {
    const call = new Call(client, { id: 'CALL01', peerJid: '491511234567@c.us', offerTime: 1767607500, isVideo: true, isGroup: false, outgoing: false });
    assert.deepEqual(fire('call', call), [
      [{ id: 'CALL01', from: '491511234567@c.us', timestamp: 1767607500, isVideo: true, isGroup: false, fromMe: false }],
    ]);
  });

  test('change_battery', () => {
    assert.deepEqual(fire('change_battery', { battery: 81, plugged: true }), [[{ battery: 81, plugged: true }]]);
  });
});

test('every library event the contract knows was exercised above', () => {
  assert.deepEqual([...LIB_EVENT_NAMES].sort(), [...exercised].sort());
});

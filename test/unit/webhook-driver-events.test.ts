import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { DriverEventName, DriverEvents, WireMessage } from '../../src/drivers/contract.js';
import {
  LIFECYCLE_EVENT_NAMES, NETWORK_EVENT_NAMES, lifecycleEventOf, networkEventOf, type NetworkEventContext,
} from '../../src/webhooks/driver-events.js';
import { EVENT_NAMES, QUEUE_EVENTS, isEventName } from '../../src/webhooks/events.js';
import { LIFECYCLE_EVENTS as SESSION_CONSUMES } from '../../src/actors/session.js';

const msg = (over: Partial<WireMessage> = {}): WireMessage => ({
  id: { fromMe: false, remote: '4917111@c.us', id: 'ABC', _serialized: 'false_4917111@c.us_ABC' },
  from: '4917111@c.us', to: '4917999@c.us', author: null, body: 'hello', type: 'chat', timestamp: 1767607200,
  fromMe: false, hasMedia: false, hasQuotedMsg: false, ack: 1, isForwarded: false, deviceType: 'android',
  location: null, vCards: [], ...over,
});
const ctx: NetworkEventContext = {
  messageObject: (m) => Promise.resolve({ id: m.id._serialized, body: m.body, media: null }),
};
const chat = { id: 'g1@g.us', name: 'Group', isGroup: true, isReadOnly: false, unreadCount: 4, timestamp: 1, archived: true, pinned: false, isMuted: false, muteExpiration: null };
const note = { id: 'n1', chatId: 'g1@g.us', author: 'a@c.us', recipientIds: ['b@c.us'], body: 'new subject', type: 'subject', timestamp: 5 };

// One sample argument list per driver event: the map below must name every event of the contract.
const samples: { [K in DriverEventName]: DriverEvents[K] } = {
  qr: ['2@qrdata'], code: ['ABCD-EFGH'], authenticated: [], auth_failure: ['bad session'], ready: [],
  disconnected: ['LOGOUT'], change_state: ['CONNECTED'], loading_screen: [50, 'WhatsApp'],
  message: [msg()], message_create: [msg({ fromMe: true })], message_ack: [msg({ fromMe: true }), 3],
  message_reaction: [{ id: 'r1', msgId: 'false_x_1', chatId: 'c@c.us', senderId: 's@c.us', reaction: '👍', timestamp: 9, orphan: 0 }],
  message_edit: [msg(), 'new', 'old'], message_revoke_everyone: [msg({ type: 'revoked', body: '' }), msg({ body: 'secret plan', author: 'x@c.us' })],
  message_revoke_me: [msg()], message_ciphertext: [msg()], message_ciphertext_failed: [msg()], media_uploaded: [msg({ type: 'image' })],
  unread_count: [chat], vote_update: [{ voter: 'v@c.us', selectedOptions: [{ name: 'A', localId: 0 }], interractedAtTs: 1767607200123, parentMessageId: 'p1' }],
  contact_changed: [msg(), 'old@c.us', 'new@c.us', true], chat_removed: [chat], chat_archived: [chat, true, false],
  group_join: [note], group_leave: [note], group_admin_changed: [note], group_membership_request: [note], group_update: [note],
  call: [{ id: 'call1', from: 'c@c.us', timestamp: 7, isVideo: true, isGroup: false, fromMe: false }],
  change_battery: [{ battery: 80, plugged: true }], browser_health: [{ alive: true, failStreak: 0, lastOkAt: 0 }], fatal: ['crash'],
};

test('every driver event the session forwards maps to a catalogue event of the same name; the ones it hands to the instance machine have no network mapper', async () => {
  for (const name of Object.keys(samples) as DriverEventName[]) {
    const out = await networkEventOf(name, samples[name], ctx);
    const consumed = (SESSION_CONSUMES as readonly string[]).includes(name);
    assert.equal(NETWORK_EVENT_NAMES.includes(name), !consumed, `${name}: a network mapper exactly when the session does not consume it`);
    if (consumed) assert.equal(out, null, name);
    else if (name === 'message_create') assert.equal(out?.event, 'message_sent');
    else assert.equal(out?.event, name);
    if (out) assert.ok(isEventName(out.event));
  }
});

test('one mapper per event name: network and lifecycle mappers together name every non-queue event once', async () => {
  const produced: string[] = [];
  for (const name of NETWORK_EVENT_NAMES) {
    const out = await networkEventOf(name, samples[name], ctx);
    produced.push(String(out?.event));
  }
  const lifecycleData = { qr: { qr: 'q' }, code: { code: 'c' }, ready: { phoneNumber: '4917999' }, authenticated: {}, auth_failure: { message: 'm' },
    disconnected: { reason: 'r' }, change_state: { state: 'CONNECTED' }, loading_screen: { percent: 1, message: 'm' }, instance_restarting: { reason: 'r', expectedDowntimeMs: 1 } } as const;
  for (const name of LIFECYCLE_EVENT_NAMES) {
    const out = lifecycleEventOf(name, lifecycleData[name]);
    assert.deepEqual(out, { event: name, data: lifecycleData[name] }, 'the machine\'s payload unchanged');
    produced.push(out.event);
  }
  // everything but the queue's events and the admin's `test`, which have their own producers
  const expected = EVENT_NAMES.filter((e) => !(QUEUE_EVENTS as readonly string[]).includes(e) && e !== 'test');
  assert.deepEqual([...produced].sort(), [...expected].sort());
});

test('payloads of SPEC.md and DESIGN.md "Decisions"', async () => {
  const results = new Map<DriverEventName, unknown>();
  for (const n of NETWORK_EVENT_NAMES) results.set(n, (await networkEventOf(n, samples[n], ctx))?.data);
  const data = (n: DriverEventName) => results.get(n);
  assert.deepEqual(data('message_ack'), { id: 'false_4917111@c.us_ABC', chatId: '4917111@c.us', ack: 3, ackName: 'ACK_READ' });
  assert.deepEqual(data('message_create'), { id: 'false_4917111@c.us_ABC', to: '4917999@c.us', body: 'hello', timestamp: 1767607200000 });
  assert.deepEqual(data('message_revoke_everyone'), { id: 'false_4917111@c.us_ABC', chatId: '4917111@c.us', revokedBody: 'secret plan', author: 'x@c.us' });
  assert.deepEqual(data('message_edit'), { id: 'false_4917111@c.us_ABC', chatId: '4917111@c.us', newBody: 'new', prevBody: 'old', timestamp: 1767607200000 });
  assert.deepEqual(data('vote_update'), { pollId: 'p1', voterId: 'v@c.us', selectedOptions: [{ name: 'A', localId: 0 }], timestamp: 1767607200123 });
  assert.deepEqual(data('group_join'), { chatId: 'g1@g.us', author: 'a@c.us', recipientIds: ['b@c.us'], timestamp: 5000 });
  assert.deepEqual(data('group_update'), { chatId: 'g1@g.us', type: 'subject', body: 'new subject', author: 'a@c.us' });
  assert.deepEqual(data('call'), { callId: 'call1', from: 'c@c.us', timestamp: 7000, isVideo: true, isGroup: false, fromMe: false });
  assert.deepEqual(data('message'), { id: 'false_4917111@c.us_ABC', body: 'hello', media: null });
  assert.deepEqual(data('unread_count'), { chatId: 'g1@g.us', unreadCount: 4 });
  assert.equal(await networkEventOf('message_create', [msg({ fromMe: false })], ctx), null, 'incoming messages are `message`, not `message_sent`');
});

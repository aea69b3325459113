import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_SUBSCRIPTION,
  EVENT_NAMES,
  HIGH_FREQUENCY_EVENTS,
  isEventName,
  isQueueMessageEvent,
  isSubscribed,
  maxAttemptsFor,
} from '../../src/webhooks/events.js';

test('the catalogue holds every event of SPEC.md "Events" once', () => {
  // Written out from SPEC.md's tables, independently of events.ts's grouping.
  const spec = `message message_sent message_ack message_reaction message_edit message_revoke_everyone
    message_revoke_me message_ciphertext message_ciphertext_failed media_uploaded unread_count vote_update
    contact_changed chat_removed chat_archived group_join group_leave group_admin_changed group_membership_request
    group_update call change_battery code qr ready authenticated auth_failure disconnected loading_screen change_state
    instance_restarting test message.queued message.sent message.failed message.unknown message.cancelled
    message.expired queue.replanned queue.degraded queue.recovered`.split(/\s+/);
  assert.deepEqual([...EVENT_NAMES].sort(), [...spec].sort());
  assert.equal(new Set(EVENT_NAMES).size, EVENT_NAMES.length);
  assert.equal(isEventName('message.scheduled'), false, 'SPEC.md: there is no message.scheduled');
});

test('default subscription and `*`', () => {
  assert.deepEqual([...DEFAULT_SUBSCRIPTION], ['message', 'ready', 'disconnected', 'instance_restarting', 'test']);
  assert.equal(isSubscribed(DEFAULT_SUBSCRIPTION, 'message'), true);
  assert.equal(isSubscribed(DEFAULT_SUBSCRIPTION, 'message_ack'), false);
  assert.equal(isSubscribed(DEFAULT_SUBSCRIPTION, 'message.sent'), false);
  assert.equal(isSubscribed(['*'], 'queue.degraded'), true);
  assert.equal(isSubscribed(['message.sent'], 'message'), false, 'no prefix matching');
  assert.equal(isSubscribed([], 'test'), false);
});

test('attempts: 1 for the high-frequency events of SPEC.md "Retries", 3 otherwise', () => {
  const hf = ['message_ack', 'message_sent', 'message_reaction', 'unread_count', 'media_uploaded',
    'message_ciphertext', 'message_ciphertext_failed', 'change_battery'];
  assert.deepEqual([...HIGH_FREQUENCY_EVENTS].sort(), hf.sort());
  for (const e of EVENT_NAMES) assert.equal(maxAttemptsFor(e), hf.includes(e) ? 1 : 3, e);
});

test('message.* are the queue-path events', () => {
  assert.deepEqual(
    EVENT_NAMES.filter(isQueueMessageEvent),
    ['message.queued', 'message.sent', 'message.failed', 'message.unknown', 'message.cancelled', 'message.expired'],
  );
});

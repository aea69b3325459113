/**
 * From a driver event (whatsapp-web.js names and arguments, src/drivers/contract.ts) to the webhook event
 * and payload of SPEC.md "Messaging-network events" and DESIGN.md "Decisions". Pure: the instance actor
 * calls it for every driver event and hands the result to `enqueueEvent`.
 *
 * Two events need what only the runtime has: `message` carries the full Message object with its media block
 * (built by whoever owns the Message object and the incoming-media store), and `ready` carries the
 * instance's own number. `browser_health` and `fatal` are the gateway's internal signals: no webhook event.
 * `message_create` becomes `message_sent` for the instance's own outgoing messages only (incoming messages
 * already arrive as `message`).
 *
 * Units: every `timestamp` of a payload is unix milliseconds, like the Message object of SPEC.md
 * (whatsapp-web.js has seconds for messages, reactions, calls and group notifications; one unit across all
 * payloads is what an integrator can rely on). Poll votes already come in milliseconds.
 */
import { ACK_NAMES, type DriverEventName, type DriverEvents, type WireGroupNotification, type WireMessage } from '../drivers/contract.js';
import type { EventOf } from './events.js';

/** whatsapp-web.js seconds → the milliseconds of every payload */
const ms = (seconds: number) => Math.round(seconds * 1000);

export interface DriverEventContext {
  /** SPEC.md "Message object" (with `media`) of an incoming message */
  messageObject(message: WireMessage): Record<string, unknown>;
  /** the instance's own number once linked, for `ready` */
  phoneNumber(): string | null;
}

type Mapper<K extends DriverEventName> = (args: DriverEvents[K], ctx: DriverEventContext) => EventOf | null;

const ref = (m: WireMessage) => ({ id: m.id._serialized, chatId: m.id.remote });

const groupChange = (event: 'group_join' | 'group_leave' | 'group_admin_changed', n: WireGroupNotification): EventOf => ({
  event,
  data: { chatId: n.chatId, author: n.author, recipientIds: n.recipientIds, timestamp: ms(n.timestamp) },
});

const MAPPERS: { [K in DriverEventName]: Mapper<K> } = {
  qr: ([qr]) => ({ event: 'qr', data: { qr } }),
  code: ([code]) => ({ event: 'code', data: { code } }),
  authenticated: () => ({ event: 'authenticated', data: {} }),
  auth_failure: ([message]) => ({ event: 'auth_failure', data: { message } }),
  ready: (_args, ctx) => ({ event: 'ready', data: { phoneNumber: ctx.phoneNumber() } }),
  disconnected: ([reason]) => ({ event: 'disconnected', data: { reason } }),
  change_state: ([state]) => ({ event: 'change_state', data: { state } }),
  loading_screen: ([percent, message]) => ({ event: 'loading_screen', data: { percent, message } }),
  message: ([m], ctx) => ({ event: 'message', data: ctx.messageObject(m) }),
  message_create: ([m]) =>
    m.fromMe ? { event: 'message_sent', data: { id: m.id._serialized, to: m.to, body: m.body, timestamp: ms(m.timestamp) } } : null,
  message_ack: ([m, ack]) => ({ event: 'message_ack', data: { ...ref(m), ack, ackName: ACK_NAMES[ack] } }),
  message_reaction: ([r]) => ({
    event: 'message_reaction',
    data: { id: r.id, msgId: r.msgId, chatId: r.chatId, senderId: r.senderId, reaction: r.reaction, timestamp: ms(r.timestamp), orphan: r.orphan },
  }),
  message_edit: ([m, newBody, prevBody]) => ({ event: 'message_edit', data: { ...ref(m), newBody, prevBody, timestamp: ms(m.timestamp) } }),
  // whatsapp-web.js passes (the revoked message, the message as it was before, if known)
  message_revoke_everyone: ([after, before]) => ({
    event: 'message_revoke_everyone',
    data: { ...ref(after), revokedBody: before ? before.body : null, author: before?.author ?? after.author ?? (after.fromMe ? null : after.from) },
  }),
  message_revoke_me: ([m]) => ({ event: 'message_revoke_me', data: ref(m) }),
  message_ciphertext: ([m]) => ({ event: 'message_ciphertext', data: ref(m) }),
  message_ciphertext_failed: ([m]) => ({ event: 'message_ciphertext_failed', data: ref(m) }),
  media_uploaded: ([m]) => ({ event: 'media_uploaded', data: { ...ref(m), type: m.type } }),
  unread_count: ([chat]) => ({ event: 'unread_count', data: { chatId: chat.id, unreadCount: chat.unreadCount } }),
  vote_update: ([v]) => ({
    event: 'vote_update',
    data: { pollId: v.parentMessageId, voterId: v.voter, selectedOptions: v.selectedOptions, timestamp: v.interractedAtTs },
  }),
  contact_changed: ([m, oldId, newId, isContact]) => ({
    event: 'contact_changed',
    data: { messageId: m.id._serialized, oldId, newId, isContact },
  }),
  chat_removed: ([chat]) => ({ event: 'chat_removed', data: { chatId: chat.id, name: chat.name } }),
  chat_archived: ([chat, currState, prevState]) => ({ event: 'chat_archived', data: { chatId: chat.id, currState, prevState } }),
  group_join: ([n]) => groupChange('group_join', n),
  group_leave: ([n]) => groupChange('group_leave', n),
  group_admin_changed: ([n]) => groupChange('group_admin_changed', n),
  group_membership_request: ([n]) => ({ event: 'group_membership_request', data: { chatId: n.chatId, author: n.author, timestamp: ms(n.timestamp) } }),
  group_update: ([n]) => ({ event: 'group_update', data: { chatId: n.chatId, type: n.type, body: n.body, author: n.author } }),
  call: ([c]) => ({
    event: 'call',
    data: { callId: c.id, from: c.from, timestamp: ms(c.timestamp), isVideo: c.isVideo, isGroup: c.isGroup, fromMe: c.fromMe },
  }),
  change_battery: ([b]) => ({ event: 'change_battery', data: { battery: b.battery, plugged: b.plugged } }),
  browser_health: () => null,
  fatal: () => null,
};

/** The webhook event for a driver event, or null when it has none. */
export function webhookEventOf<E extends DriverEventName>(name: E, args: DriverEvents[E], ctx: DriverEventContext): EventOf | null {
  const map: Mapper<E> = MAPPERS[name];
  return map(args, ctx);
}

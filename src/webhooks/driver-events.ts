/**
 * The one table from what an instance reports to the webhook event and payload of SPEC.md "Events" and
 * docs/api.md (one mapper per event name). Two sources feed it, and each event name has exactly one:
 *
 * - lifecycle events (`qr`, `code`, `ready`, `authenticated`, `auth_failure`, `disconnected`,
 *   `loading_screen`, `change_state`, `instance_restarting`): what the instance machine decided and notified
 *   (machines/instance.types.ts `NotifyParams`). The session hands the driver's lifecycle events to the
 *   machine, which knows what they mean (a `disconnected` also follows a crash, `ready` carries the number);
 *   the driver's own arguments for them go nowhere else.
 * - network events: the driver's events with its arguments, as the session forwards them. The driver's
 *   lifecycle events and its internal signals (`browser_health`, `fatal`) have no network mapper: `null`.
 *
 * `message_create` becomes `message_sent` for the instance's own outgoing messages only (incoming messages
 * already arrive as `message`). `message` carries the whole Message object with its media block, built by the
 * caller (src/actors/network-events.ts), which stores the attachment first when the instance keeps them.
 *
 * Units: every `timestamp` of a payload is unix milliseconds, like the Message object of SPEC.md
 * (whatsapp-web.js has seconds for messages, reactions, calls and group notifications; one unit across all
 * payloads is what an integrator can rely on). Poll votes already come in milliseconds.
 * `qr` and `code` carry login secrets: webhook only, never a log line.
 */
import { ACK_NAMES, type DriverEventName, type DriverEvents, type WireGroupNotification, type WireMessage } from '../drivers/contract.js';
import type { NotifyParams } from '../../machines/instance.types.js';
import type { EventOf } from './events.js';

/** Lifecycle events, as the instance machine notifies them. */
export type LifecycleEventName = NotifyParams['event'];
type LifecycleData<K extends LifecycleEventName> = Extract<NotifyParams, { event: K }>['data'];

/** Driver events that reach webhooks as the driver gave them (all but lifecycle events and the driver's own signals). */
export type NetworkEventName = Exclude<DriverEventName, LifecycleEventName | 'browser_health' | 'fatal'>;

export interface NetworkEventContext {
  /** SPEC.md "Message object" of an incoming `message`, with its `media` block (stored first when enabled) */
  messageObject(message: WireMessage): Promise<Record<string, unknown>>;
}

type NetworkMapper<K extends DriverEventName> = (args: DriverEvents[K], ctx: NetworkEventContext) => EventOf | null | Promise<EventOf | null>;
type LifecycleMapper<K extends LifecycleEventName> = (data: LifecycleData<K>) => EventOf;

/** whatsapp-web.js seconds → the milliseconds of every payload */
const ms = (seconds: number) => Math.round(seconds * 1000);
const ref = (m: WireMessage) => ({ id: m.id._serialized, chatId: m.id.remote });
const groupChange = (event: 'group_join' | 'group_leave' | 'group_admin_changed', n: WireGroupNotification): EventOf => ({
  event,
  data: { chatId: n.chatId, author: n.author, recipientIds: n.recipientIds, timestamp: ms(n.timestamp) },
});

/** The instance machine's: the session hands these driver events to it (src/actors/session.ts LIFECYCLE_EVENTS). */
const VIA_MACHINE = null;

const NETWORK: { [K in NetworkEventName]: NetworkMapper<K> } & { [K in Exclude<DriverEventName, NetworkEventName>]: null } = {
  qr: VIA_MACHINE,
  code: VIA_MACHINE,
  authenticated: VIA_MACHINE,
  auth_failure: VIA_MACHINE,
  ready: VIA_MACHINE,
  disconnected: VIA_MACHINE,
  change_state: VIA_MACHINE,
  loading_screen: VIA_MACHINE,
  browser_health: VIA_MACHINE,
  fatal: VIA_MACHINE,
  message: async ([m], ctx) => ({ event: 'message', data: await ctx.messageObject(m) }),
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
};

// The machine's payloads are already those of docs/api.md; the table names each event once, like the rest.
const LIFECYCLE: { [K in LifecycleEventName]: LifecycleMapper<K> } = {
  qr: (data) => ({ event: 'qr', data }),
  code: (data) => ({ event: 'code', data }),
  ready: (data) => ({ event: 'ready', data }),
  authenticated: (data) => ({ event: 'authenticated', data }),
  auth_failure: (data) => ({ event: 'auth_failure', data }),
  disconnected: (data) => ({ event: 'disconnected', data }),
  change_state: (data) => ({ event: 'change_state', data }),
  loading_screen: (data) => ({ event: 'loading_screen', data }),
  instance_restarting: (data) => ({ event: 'instance_restarting', data }),
};

/** The driver events that have a network mapper (the rest reach webhooks through the instance machine, or not at all). */
export const NETWORK_EVENT_NAMES = (Object.keys(NETWORK) as DriverEventName[]).filter((n) => NETWORK[n] !== null);
export const LIFECYCLE_EVENT_NAMES = Object.keys(LIFECYCLE) as LifecycleEventName[];

/** The webhook event of a driver event, or null when it has none here (lifecycle, internal, someone else's message). */
export async function networkEventOf<E extends DriverEventName>(name: E, args: DriverEvents[E], ctx: NetworkEventContext): Promise<EventOf | null> {
  const table: { [K in DriverEventName]: NetworkMapper<K> | null } = NETWORK;
  const map: NetworkMapper<E> | null = table[name];
  return map ? map(args, ctx) : null;
}

/** The webhook event of a lifecycle event the instance machine notified. */
export function lifecycleEventOf<K extends LifecycleEventName>(event: K, data: LifecycleData<K>): EventOf {
  const map: LifecycleMapper<K> = LIFECYCLE[event];
  return map(data);
}

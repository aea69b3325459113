/**
 * The event catalogue: every event name of SPEC.md "Events", the default subscription, the high-frequency
 * events that get a single attempt (SPEC.md "Retries"), and the subscription test.
 *
 * Payload shapes follow SPEC.md and DESIGN.md "Decisions"; where SPEC.md gives a whole object (`message`:
 * the Message object) the type stays open, the producer owns that shape.
 */
import type { WireReaction } from '../drivers/wire-types.js';

/** Events of the messaging network, in whatsapp-web.js's names (SPEC.md "Messaging-network events"). */
export const NETWORK_EVENTS = [
  'message',
  'message_sent',
  'message_ack',
  'message_reaction',
  'message_edit',
  'message_revoke_everyone',
  'message_revoke_me',
  'message_ciphertext',
  'message_ciphertext_failed',
  'media_uploaded',
  'unread_count',
  'vote_update',
  'contact_changed',
  'chat_removed',
  'chat_archived',
  'group_join',
  'group_leave',
  'group_admin_changed',
  'group_membership_request',
  'group_update',
  'call',
  'change_battery',
] as const;

/** Linking and connection lifecycle. `qr` and `code` carry login secrets: webhook only, never a log line. */
export const LIFECYCLE_EVENTS = [
  'qr',
  'code',
  'ready',
  'authenticated',
  'auth_failure',
  'disconnected',
  'loading_screen',
  'change_state',
] as const;

/** Events of the gateway itself. */
export const GATEWAY_EVENTS = ['instance_restarting', 'test'] as const;

/** Events of the persistent send queue (SPEC.md "Queue events"). */
export const QUEUE_EVENTS = [
  'message.queued',
  'message.sent',
  'message.failed',
  'message.unknown',
  'message.cancelled',
  'message.expired',
  'queue.replanned',
  'queue.degraded',
  'queue.recovered',
] as const;

export const EVENT_NAMES = [...NETWORK_EVENTS, ...LIFECYCLE_EVENTS, ...GATEWAY_EVENTS, ...QUEUE_EVENTS] as const;
export type EventName = (typeof EVENT_NAMES)[number];

/** What a webhook may list in `events`: an event name or `*` (everything, including events added later). */
export type Subscription = EventName | '*';

const EVENT_SET: ReadonlySet<string> = new Set(EVENT_NAMES);
export const isEventName = (name: string): name is EventName => EVENT_SET.has(name);

/** SPEC.md "Subscription": what a webhook receives when its events are not given. */
export const DEFAULT_SUBSCRIPTION: readonly EventName[] = ['message', 'ready', 'disconnected', 'instance_restarting', 'test'];

/** SPEC.md "Retries": one attempt, no retry. Everything else gets NORMAL_ATTEMPTS. */
export const HIGH_FREQUENCY_EVENTS: ReadonlySet<EventName> = new Set<EventName>([
  'message_ack',
  'message_sent',
  'message_reaction',
  'unread_count',
  'media_uploaded',
  'message_ciphertext',
  'message_ciphertext_failed',
  'change_battery',
]);
export const NORMAL_ATTEMPTS = 3;

export const maxAttemptsFor = (event: EventName): number => (HIGH_FREQUENCY_EVENTS.has(event) ? 1 : NORMAL_ATTEMPTS);

/** True when a webhook subscribed to `events` receives `name`. */
export function isSubscribed(events: readonly string[], name: EventName): boolean {
  return events.includes('*') || events.includes(name);
}

/** The `message.*` events: the persistent queue path only; none of them fire in `memory-degraded`. */
export const isQueueMessageEvent = (name: EventName): boolean => name.startsWith('message.');

// ---- payloads -------------------------------------------------------------------------------------------

type Iso = string;

/** `data` of each event. Open objects where SPEC.md leaves the shape to another resource. */
export interface EventPayloads {
  message: Record<string, unknown>;
  message_sent: { id: string; to: string; body: string; timestamp: number };
  message_ack: { id: string; chatId: string; ack: number; ackName: string };
  /** the network's reaction as the driver reports it (src/drivers/wire-types.ts) */
  message_reaction: WireReaction;
  message_edit: { id: string; chatId: string; newBody: string; prevBody: string; timestamp: number };
  message_revoke_everyone: { id: string; chatId: string; revokedBody: string | null; author: string | null };
  message_revoke_me: { id: string; chatId: string };
  message_ciphertext: { id: string; chatId: string };
  message_ciphertext_failed: { id: string; chatId: string };
  media_uploaded: { id: string; chatId: string; type: string };
  unread_count: { chatId: string; unreadCount: number };
  vote_update: { pollId: string; voterId: string; selectedOptions: unknown[]; timestamp: number };
  contact_changed: { messageId: string; oldId: string; newId: string; isContact: boolean };
  chat_removed: { chatId: string; name: string };
  chat_archived: { chatId: string; currState: boolean; prevState: boolean };
  group_join: GroupNotificationPayload;
  group_leave: GroupNotificationPayload;
  group_admin_changed: GroupNotificationPayload;
  group_membership_request: { chatId: string; author: string; timestamp: number };
  group_update: { chatId: string; type: string; body: string; author: string };
  call: { callId: string; from: string; timestamp: number; isVideo: boolean; isGroup: boolean; fromMe: boolean };
  change_battery: { battery: number; plugged: boolean };
  qr: { qr: string };
  code: { code: string };
  ready: { phoneNumber: string | null };
  authenticated: Record<string, never>;
  auth_failure: { message: string };
  disconnected: { reason: string };
  loading_screen: { percent: number; message: string };
  change_state: { state: string };
  instance_restarting: { reason: string; expectedDowntimeMs: number };
  test: { message: string };
  'message.queued': {
    jobId: string;
    idempotencyKey: string | null;
    chatId: string | null;
    scheduledAt: Iso | null;
    etaSeconds: number | null;
    queuePosition: number;
  };
  'message.sent': { jobId: string; messageId: string | null; deliveryConfidence: string; dispatchedAt: Iso };
  'message.failed': { jobId: string; resultCode: string; errorMessage: string };
  'message.unknown': { jobId: string; unknownReason: string; dispatchedAt: Iso | null };
  'message.cancelled': { jobId: string; reason: string };
  'message.expired': { jobId: string; reason: string };
  'queue.replanned': { affected: number; epoch: number; reason: string };
  'queue.degraded': { queueMode: string; limitsEnforced: true };
  'queue.recovered': { queueMode: string };
}

export interface GroupNotificationPayload {
  chatId: string;
  author: string;
  recipientIds: string[];
  timestamp: number;
}

/** One event as a producer hands it over: the name and its `data`. */
export type EventOf<E extends EventName = EventName> = { [K in E]: { event: K; data: EventPayloads[K] } }[E];

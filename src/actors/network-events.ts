/**
 * What the network tells an instance becomes events for integrators (SPEC.md "Messaging-network events",
 * payloads per DESIGN.md "Decisions"). Lifecycle events (qr, ready, …) come from the instance machine's
 * `notify`, not from here, so each is written once.
 *
 * Units: every `timestamp` in these payloads is unix milliseconds (whatsapp-web.js has seconds for messages,
 * reactions, calls and group notifications; the Message object of SPEC.md has milliseconds, and one unit
 * across all payloads is what an integrator can rely on).
 */
import type { Pool } from '../store/pool.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { EventBus } from './events.js';
import type { Instance } from '../store/instances.js';
import {
  ACK_NAMES, type BatteryInfo, type DriverEventName, type MessageAck, type WireCall, type WireChat,
  type WireGroupNotification, type WireMessage, type WirePollVote, type WireReaction,
} from '../drivers/contract.js';
import { secondsToMs, toMessage } from '../http/routes/wire-format.js';

export interface IncomingMedia {
  /** the `media` block of the `message` event (SPEC.md "Incoming media block"); stores the file when enabled */
  describe(instance: Instance, message: WireMessage): Promise<Record<string, unknown> | null>;
}

export interface NetworkEventDeps {
  pool: Pool;
  clock: Clock;
  log: Logger;
  events: EventBus;
  media: IncomingMedia;
}

type Mapped = { event: string; data: Record<string, unknown> } | null;

const chatOf = (m: WireMessage) => m.id.remote;

/** Pure part: driver event + arguments → webhook event + payload (null: not an integrator event). */
export function mapNetworkEvent(name: DriverEventName, args: unknown[]): Mapped {
  const a0 = args[0];
  switch (name) {
    case 'message_create': {
      const m = a0 as WireMessage;
      if (!m.fromMe) return null;
      return { event: 'message_sent', data: { id: m.id._serialized, to: m.to, body: m.body, timestamp: secondsToMs(m.timestamp) } };
    }
    case 'message_ack': {
      const m = a0 as WireMessage;
      const ack = args[1] as MessageAck;
      return { event: 'message_ack', data: { id: m.id._serialized, chatId: chatOf(m), ack, ackName: ACK_NAMES[ack] ?? String(ack) } };
    }
    case 'message_reaction': {
      const r = a0 as WireReaction;
      return {
        event: 'message_reaction',
        data: { id: r.id, msgId: r.msgId, chatId: r.chatId, senderId: r.senderId, reaction: r.reaction, timestamp: secondsToMs(r.timestamp), orphan: r.orphan },
      };
    }
    case 'message_edit': {
      const m = a0 as WireMessage;
      return { event: 'message_edit', data: { id: m.id._serialized, chatId: chatOf(m), newBody: String(args[1]), prevBody: String(args[2]), timestamp: secondsToMs(m.timestamp) } };
    }
    case 'message_revoke_everyone': {
      const m = a0 as WireMessage;
      const revoked = (args[1] as WireMessage | null | undefined) ?? null;
      return { event: 'message_revoke_everyone', data: { id: m.id._serialized, chatId: chatOf(m), revokedBody: revoked?.body ?? null, author: m.author ?? revoked?.author ?? null } };
    }
    case 'message_revoke_me':
    case 'message_ciphertext':
    case 'message_ciphertext_failed': {
      const m = a0 as WireMessage;
      return { event: name, data: { id: m.id._serialized, chatId: chatOf(m) } };
    }
    case 'media_uploaded': {
      const m = a0 as WireMessage;
      return { event: 'media_uploaded', data: { id: m.id._serialized, chatId: chatOf(m), type: m.type } };
    }
    case 'unread_count': {
      const c = a0 as WireChat;
      return { event: 'unread_count', data: { chatId: c.id, unreadCount: c.unreadCount } };
    }
    case 'vote_update': {
      const v = a0 as WirePollVote;
      return { event: 'vote_update', data: { pollId: v.parentMessageId, voterId: v.voter, selectedOptions: v.selectedOptions, timestamp: v.interractedAtTs } };
    }
    case 'contact_changed': {
      const m = a0 as WireMessage;
      return { event: 'contact_changed', data: { messageId: m.id._serialized, oldId: String(args[1]), newId: String(args[2]), isContact: Boolean(args[3]) } };
    }
    case 'chat_removed': {
      const c = a0 as WireChat;
      return { event: 'chat_removed', data: { chatId: c.id, name: c.name } };
    }
    case 'chat_archived': {
      const c = a0 as WireChat;
      return { event: 'chat_archived', data: { chatId: c.id, currState: Boolean(args[1]), prevState: Boolean(args[2]) } };
    }
    case 'group_join':
    case 'group_leave':
    case 'group_admin_changed': {
      const n = a0 as WireGroupNotification;
      return { event: name, data: { chatId: n.chatId, author: n.author, recipientIds: n.recipientIds, timestamp: secondsToMs(n.timestamp) } };
    }
    case 'group_membership_request': {
      const n = a0 as WireGroupNotification;
      return { event: name, data: { chatId: n.chatId, author: n.author, timestamp: secondsToMs(n.timestamp) } };
    }
    case 'group_update': {
      const n = a0 as WireGroupNotification;
      return { event: name, data: { chatId: n.chatId, type: n.type, body: n.body, author: n.author } };
    }
    case 'call': {
      const c = a0 as WireCall;
      return { event: 'call', data: { callId: c.id, from: c.from, timestamp: secondsToMs(c.timestamp), isVideo: c.isVideo, isGroup: c.isGroup, fromMe: c.fromMe } };
    }
    case 'change_battery': {
      const b = a0 as BatteryInfo;
      return { event: 'change_battery', data: { battery: b.battery, plugged: b.plugged } };
    }
    default:
      return null; // `message` is handled with its media block below; lifecycle events come from the machine
  }
}

export function createNetworkEventHandler(deps: NetworkEventDeps): (instance: Instance, name: DriverEventName, args: unknown[]) => void {
  const fail = (instance: Instance, name: string) => (err: unknown) =>
    deps.log.warn({ err, instanceId: instance.id, event: name }, 'network event not written');

  return (instance, name, args) => {
    if (name === 'message') {
      const m = args[0] as WireMessage;
      void (async () => {
        if (!m.fromMe) {
          await deps.pool.query(
            'INSERT INTO inbound_messages (instance_id, message_id, received_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
            [instance.id, m.id._serialized, new Date(deps.clock.now())],
          );
        }
        const media = m.hasMedia ? await deps.media.describe(instance, m) : null;
        await deps.events.publish(instance.id, 'message', { ...toMessage(m), ...(media ? { media } : {}) });
      })().catch(fail(instance, name));
      return;
    }
    const mapped = mapNetworkEvent(name, args);
    if (mapped) void deps.events.publish(instance.id, mapped.event, mapped.data).catch(fail(instance, name));
  };
}

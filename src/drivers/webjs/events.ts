/**
 * whatsapp-web.js Client events → the contract's events (same names, same argument order, plain data).
 *
 * Payloads arrive as `unknown` and are narrowed here: they are built inside the library from WhatsApp Web's
 * models, and a payload we cannot read is dropped (and reported) rather than thrown back into the library's
 * page callback. The library's `remote_session_saved` has no counterpart (we use LocalAuth) and is ignored.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from '../../log.js';
import type { DriverEventName, DriverEvents, DriverListener } from '../contract.js';
import { bool, num, serialized, str } from './fields.js';
import type { LibClient } from './library.js';
import {
  isChatData,
  isMessageData,
  mapBattery,
  mapCall,
  mapChat,
  mapGroupNotification,
  mapMessage,
  mapPollVote,
  mapReaction,
  toAck,
  toWAState,
} from './mapping.js';

/** A session's events to its listeners; a listener that throws is logged and never breaks the emitting side. */
export class DriverEmitter {
  private readonly emitter = new EventEmitter();

  constructor(private readonly log: Logger) {
    this.emitter.setMaxListeners(0);
  }

  on<E extends DriverEventName>(event: E, listener: DriverListener<E>): void {
    this.emitter.on(event, listener);
  }

  off<E extends DriverEventName>(event: E, listener: DriverListener<E>): void {
    this.emitter.off(event, listener);
  }

  emit<E extends DriverEventName>(event: E, ...args: DriverEvents[E]): void {
    try {
      this.emitter.emit(event, ...args);
    } catch (err) {
      // e.g. the library's page callback that got us here
      this.log.error({ err, event }, 'driver event listener threw');
    }
  }
}

/** The library's events: the contract's, minus the driver's own. */
export type LibEventName = Exclude<DriverEventName, 'browser_health' | 'fatal'>;

type Translator<E extends LibEventName> = (args: unknown[]) => DriverEvents[E] | null;

export interface EventSink {
  emit<E extends DriverEventName>(event: E, ...args: DriverEvents[E]): void;
  /** Before `ready` is emitted (the driver records the account and opens for sends). */
  onReady(): void;
  /** Before `disconnected` is emitted. */
  onDisconnected(reason: string): void;
  /** A payload that could not be read. */
  dropped(event: LibEventName, why: string): void;
}

const message = ([m]: unknown[]): [ReturnType<typeof mapMessage>] | null => (isMessageData(m) ? [mapMessage(m)] : null);
const chat = ([c]: unknown[]): [ReturnType<typeof mapChat>] | null => (isChatData(c) ? [mapChat(c)] : null);
const lifecycleText = (fallback: string) => ([text]: unknown[]): [string] => [str(text, fallback)];
const secret = ([value]: unknown[]): [string] | null => (typeof value === 'string' && value !== '' ? [value] : null);
function one<T>(map: (value: unknown) => T | null) {
  return ([value]: unknown[]): [T] | null => {
    const out = map(value);
    return out === null ? null : [out];
  };
}
const notification = one(mapGroupNotification);

const TRANSLATORS: { [E in LibEventName]: Translator<E> } = {
  qr: secret,
  code: secret,
  authenticated: () => [],
  auth_failure: lifecycleText('authentication failed'),
  ready: () => [],
  disconnected: lifecycleText('unknown'),
  change_state: ([state]) => {
    const s = toWAState(state);
    return s === null ? null : [s];
  },
  loading_screen: ([percent, text]) => [num(percent), str(text)],
  message,
  message_create: message,
  message_ack: ([m, ack]) => {
    if (!isMessageData(m)) return null;
    const a = toAck(ack) ?? toAck(m.ack);
    return a === null ? null : [mapMessage(m), a];
  },
  message_reaction: one(mapReaction),
  message_edit: ([m, newBody, prevBody]) => (isMessageData(m) ? [mapMessage(m), str(newBody), str(prevBody)] : null),
  message_revoke_everyone: ([m, revoked]) => (isMessageData(m) ? [mapMessage(m), isMessageData(revoked) ? mapMessage(revoked) : null] : null),
  message_revoke_me: message,
  message_ciphertext: message,
  message_ciphertext_failed: message,
  media_uploaded: message,
  unread_count: chat,
  vote_update: one(mapPollVote),
  contact_changed: ([m, oldId, newId, isContact]) =>
    isMessageData(m) ? [mapMessage(m), serialized(oldId), serialized(newId), bool(isContact)] : null,
  chat_removed: chat,
  chat_archived: ([c, curr, prev]) => (isChatData(c) ? [mapChat(c), bool(curr), bool(prev)] : null),
  group_join: notification,
  group_leave: notification,
  group_admin_changed: notification,
  group_membership_request: notification,
  group_update: notification,
  call: one(mapCall),
  change_battery: one(mapBattery),
};

export const LIB_EVENT_NAMES = Object.keys(TRANSLATORS) as LibEventName[];

function wireOne<E extends LibEventName>(client: LibClient, name: E, sink: EventSink): void {
  const translate: Translator<E> = TRANSLATORS[name];
  client.on(name, (...args: unknown[]) => {
    let out: DriverEvents[E] | null;
    try {
      out = translate(args);
    } catch (err) {
      sink.dropped(name, err instanceof Error ? err.message : 'unreadable payload');
      return;
    }
    if (out === null) {
      sink.dropped(name, 'unreadable payload');
      return;
    }
    if (name === 'ready') sink.onReady();
    if (name === 'disconnected') sink.onDisconnected(str(args[0], 'unknown'));
    sink.emit(name, ...out);
  });
}

/** Subscribe to every library event the contract knows. */
export function wireLibraryEvents(client: LibClient, sink: EventSink): void {
  for (const name of LIB_EVENT_NAMES) wireOne(client, name, sink);
}

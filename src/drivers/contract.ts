/**
 * The driver contract: the only way the runtime talks to the messaging network behind an instance.
 *
 * It is modelled on whatsapp-web.js's `Client` (node_modules/whatsapp-web.js/index.d.ts): the same
 * operation names, the same content types (MessageMedia, Location, Poll, contact cards) and the same events
 * with the same argument order. What differs on purpose: everything crossing this boundary is plain data
 * (no live objects with methods), so a driver can sit in another process (the sandbox) and the runtime can
 * persist and serialise what it gets.
 *
 * Ids are kept as the network gives them: `<digits>@c.us`, `<digits>@lid`, `<digits>-<digits>@g.us` or
 * `<digits>@g.us`. Message ids are the serialized form `true_<chatId>_<HEX>` (fromMe, remote, id).
 * Message timestamps here are unix SECONDS, as whatsapp-web.js has them; the HTTP layer converts to ms.
 */

import type { DriverErrorCode } from '../errors.js';
export { DRIVER_ERROR_CODES, type DriverErrorCode } from '../errors.js';
import type { WAState, MessageAck, MessageType, MessageMedia, Location, Poll, SendContent, SendOptions, WireMessage, SendResult, WireChat, GroupParticipant, WireGroup, WireContact, WireReaction, WirePollVote, WireGroupNotification, WireCall, BatteryInfo, ClientInfo, BrowserHealth, CreateGroupResult } from './wire-types.js';
export { ACK_NAMES } from './wire-types.js';
export type { WAState, MessageAck, MessageType, MessageMedia, Location, Poll, SendContent, SendOptions, WireMessage, SendResult, WireChat, GroupParticipant, WireGroup, WireContact, WireReaction, WirePollVote, WireGroupNotification, WireCall, BatteryInfo, ClientInfo, BrowserHealth, CreateGroupResult } from './wire-types.js';

/** The events of the network, with whatsapp-web.js's names and argument order, plus `browser_health`. */
export interface DriverEvents {
  qr: [qr: string];
  code: [code: string];
  authenticated: [];
  auth_failure: [message: string];
  ready: [];
  disconnected: [reason: string];
  change_state: [state: WAState];
  loading_screen: [percent: number, message: string];
  message: [message: WireMessage];
  message_create: [message: WireMessage];
  message_ack: [message: WireMessage, ack: MessageAck];
  message_reaction: [reaction: WireReaction];
  message_edit: [message: WireMessage, newBody: string, prevBody: string];
  message_revoke_everyone: [message: WireMessage, revoked: WireMessage | null];
  message_revoke_me: [message: WireMessage];
  message_ciphertext: [message: WireMessage];
  message_ciphertext_failed: [message: WireMessage];
  media_uploaded: [message: WireMessage];
  unread_count: [chat: WireChat];
  vote_update: [vote: WirePollVote];
  contact_changed: [message: WireMessage, oldId: string, newId: string, isContact: boolean];
  chat_removed: [chat: WireChat];
  chat_archived: [chat: WireChat, currState: boolean, prevState: boolean];
  group_join: [notification: WireGroupNotification];
  group_leave: [notification: WireGroupNotification];
  group_admin_changed: [notification: WireGroupNotification];
  group_membership_request: [notification: WireGroupNotification];
  group_update: [notification: WireGroupNotification];
  call: [call: WireCall];
  change_battery: [info: BatteryInfo];
  /** Not a whatsapp-web.js event: the driver's view of its browser (or simulated browser). */
  browser_health: [health: BrowserHealth];
  /** Not a whatsapp-web.js event: the session died (browser crash, page closed); the instance restarts. */
  fatal: [reason: string];
}

export type DriverEventName = keyof DriverEvents;
export type DriverListener<E extends DriverEventName> = (...args: DriverEvents[E]) => void;

/**
 * A failure the network reported. `provablyNotSent` is true only when the network certainly did not take
 * the message (recipient not registered, invalid input): the job ends `failed`. Anything else after the call
 * started ends `unknown`.
 */
export class DriverError extends Error {
  constructor(
    message: string,
    readonly code: DriverErrorCode,
    readonly provablyNotSent: boolean,
  ) {
    super(message);
    this.name = 'DriverError';
  }
}

/**
 * A start (or call) refused before it reached the network at all: a connection the network's side refused
 * (the separate sandbox process is away). The network is not there now; nothing about the session failed.
 */
export const networkUnreachable = (err: unknown): boolean =>
  err instanceof DriverError && err.code === 'CALL_FAILED' && err.provablyNotSent;

/** Driver refusals that say there is no session to send on (with `provablyNotSent`: the call never started). */
export const NO_SESSION_DRIVER_CODES: ReadonlySet<DriverError['code']> = new Set<DriverError['code']>(['NOT_CONNECTED', 'SESSION_CLOSED']);

export interface FetchMessagesOptions {
  limit: number;
  fromMe?: boolean;
}

export interface Driver {
  readonly kind: 'sandbox' | 'webjs';

  // lifecycle
  /** Start the session; resolves when started (not when linked): progress arrives as events. */
  initialize(): Promise<void>;
  /** Stop the session, keep the link. Idempotent. */
  destroy(): Promise<void>;
  /** Unlink the number and stop. */
  logout(): Promise<void>;
  getState(): Promise<WAState | null>;
  /** The linked account, null until ready. */
  readonly info: ClientInfo | null;
  /** Ask for a pairing code for `phoneNumber` instead of a QR; the code also arrives as event `code`. */
  requestPairingCode(phoneNumber: string): Promise<string>;
  browserHealth(): BrowserHealth;

  // sending (one call = at most one message on the network; a driver never retries)
  sendMessage(chatId: string, content: SendContent, options: SendOptions): Promise<SendResult>;
  forwardMessage(msgId: string, toChatId: string): Promise<void>;

  // interactions
  react(msgId: string, emoji: string): Promise<void>;
  editMessage(msgId: string, body: string, options: SendOptions): Promise<WireMessage | null>;
  deleteMessage(msgId: string, everyone: boolean): Promise<void>;
  sendSeen(chatId: string): Promise<boolean>;
  sendStateTyping(chatId: string): Promise<void>;
  sendStateRecording(chatId: string): Promise<void>;
  clearState(chatId: string): Promise<void>;

  // reads
  getChats(): Promise<WireChat[]>;
  getChatById(chatId: string): Promise<WireChat | null>;
  fetchMessages(chatId: string, options: FetchMessagesOptions): Promise<WireMessage[]>;
  getMessageById(msgId: string): Promise<WireMessage | null>;
  getContactById(contactId: string): Promise<WireContact | null>;
  getProfilePicUrl(contactId: string): Promise<string | null>;
  /** Number lookup: the serialized id when registered, null when not. */
  getNumberId(phone: string): Promise<string | null>;
  downloadMedia(msgId: string): Promise<MessageMedia | null>;

  // groups
  createGroup(title: string, participants: string[], options: Record<string, unknown>): Promise<CreateGroupResult>;
  getGroup(groupId: string): Promise<WireGroup | null>;
  addParticipants(groupId: string, ids: string[]): Promise<Record<string, { code: number; message: string }>>;
  removeParticipants(groupId: string, ids: string[]): Promise<void>;
  promoteParticipants(groupId: string, ids: string[]): Promise<void>;
  demoteParticipants(groupId: string, ids: string[]): Promise<void>;
  getInviteCode(groupId: string): Promise<string>;
  revokeInvite(groupId: string): Promise<string>;
  leaveGroup(groupId: string): Promise<void>;
  setSubject(groupId: string, subject: string): Promise<void>;
  setDescription(groupId: string, description: string): Promise<void>;

  // events
  on<E extends DriverEventName>(event: E, listener: DriverListener<E>): this;
  off<E extends DriverEventName>(event: E, listener: DriverListener<E>): this;
}

/** What the runtime gives a driver factory. */
export interface DriverOptions {
  instanceId: string;
  dataDir: string;
  /** per-call timeout for network operations (ms) */
  callTimeoutMs: number;
}

export type DriverFactory = (opts: DriverOptions) => Driver;

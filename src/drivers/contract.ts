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

/** whatsapp-web.js WAState values the runtime cares about. */
export type WAState =
  | 'CONFLICT'
  | 'CONNECTED'
  | 'DEPRECATED_VERSION'
  | 'OPENING'
  | 'PAIRING'
  | 'PROXYBLOCK'
  | 'SMB_TOS_BLOCK'
  | 'TIMEOUT'
  | 'TOS_BLOCK'
  | 'UNLAUNCHED'
  | 'UNPAIRED'
  | 'UNPAIRED_IDLE';

/** whatsapp-web.js MessageAck: -1 error, 0 pending, 1 server, 2 device, 3 read, 4 played. */
export type MessageAck = -1 | 0 | 1 | 2 | 3 | 4;
export const ACK_NAMES: Record<MessageAck, string> = {
  [-1]: 'ACK_ERROR',
  0: 'ACK_PENDING',
  1: 'ACK_SERVER',
  2: 'ACK_DEVICE',
  3: 'ACK_READ',
  4: 'ACK_PLAYED',
};

/** whatsapp-web.js MessageTypes (the subset the network produces for us). */
export type MessageType =
  | 'chat'
  | 'image'
  | 'video'
  | 'audio'
  | 'ptt'
  | 'document'
  | 'sticker'
  | 'location'
  | 'vcard'
  | 'multi_vcard'
  | 'poll_creation'
  | 'revoked'
  | 'e2e_notification'
  | 'gp2'
  | 'call_log'
  | 'ciphertext'
  | 'unknown';

/** Like whatsapp-web.js MessageMedia: base64 data without a data-URL prefix. */
export interface MessageMedia {
  mimetype: string;
  data: string;
  filename?: string | null;
  filesize?: number | null;
}

/** Like whatsapp-web.js Location. */
export interface Location {
  latitude: number;
  longitude: number;
  name?: string;
  address?: string;
  url?: string;
  description?: string;
}

/** Like whatsapp-web.js Poll. */
export interface Poll {
  pollName: string;
  pollOptions: string[];
  options: { allowMultipleAnswers: boolean; messageSecret?: number[] };
}

/** The content of one send. Contact cards are given by contact id (one card, or several as a list). */
export type SendContent =
  | { kind: 'text'; body: string }
  | { kind: 'media'; media: MessageMedia; caption?: string }
  | { kind: 'location'; location: Location }
  | { kind: 'contacts'; contactIds: string[] }
  | { kind: 'poll'; poll: Poll };

/** whatsapp-web.js MessageSendOptions, limited to what the gateway passes through. */
export interface SendOptions {
  linkPreview?: boolean;
  sendAudioAsVoice?: boolean;
  sendVideoAsGif?: boolean;
  sendMediaAsSticker?: boolean;
  sendMediaAsDocument?: boolean;
  sendMediaAsHd?: boolean;
  isViewOnce?: boolean;
  parseVCards?: boolean;
  quotedMessageId?: string;
  mentions?: string[];
  groupMentions?: { subject: string; id: string }[];
  stickerName?: string;
  stickerAuthor?: string;
  stickerCategories?: string[];
  /** Always true from the gateway: resolve only once the network took the message. */
  waitUntilMsgSent?: boolean;
}

/** Plain-data copy of a whatsapp-web.js Message. */
export interface WireMessage {
  id: { fromMe: boolean; remote: string; id: string; _serialized: string };
  from: string;
  to: string;
  author: string | null;
  body: string;
  type: MessageType;
  /** unix seconds */
  timestamp: number;
  fromMe: boolean;
  hasMedia: boolean;
  hasQuotedMsg: boolean;
  ack: MessageAck;
  isForwarded: boolean;
  deviceType: string;
  location: Location | null;
  vCards: string[];
  /** Present when hasMedia: what the attachment is, without its bytes (download with downloadMedia). */
  mediaInfo?: { mimetype: string; filename: string | null; size: number } | null;
  /** For poll_creation messages. */
  pollName?: string;
  pollOptions?: { name: string; localId: number }[];
}

/** Result of a send. `id` absent means the network took it but gave no id back (→ deliveryConfidence assumed). */
export interface SendResult {
  id?: string;
  timestamp?: number;
}

/** Plain-data copy of a whatsapp-web.js Chat, with the fields of SPEC.md "Chat object". */
export interface WireChat {
  id: string;
  name: string;
  isGroup: boolean;
  isReadOnly: boolean;
  unreadCount: number;
  /** unix seconds */
  timestamp: number;
  archived: boolean;
  pinned: boolean;
  isMuted: boolean;
  muteExpiration: number | null;
}

export interface GroupParticipant {
  id: string;
  isAdmin: boolean;
  isSuperAdmin: boolean;
}

export interface WireGroup extends WireChat {
  owner: string | null;
  description: string | null;
  participants: GroupParticipant[];
}

/** Plain-data copy of a whatsapp-web.js Contact (the fields DESIGN.md chose for the Contact object). */
export interface WireContact {
  id: string;
  number: string;
  name: string | null;
  pushname: string | null;
  shortName: string | null;
  isBusiness: boolean;
  isEnterprise: boolean;
  isMyContact: boolean;
  isBlocked: boolean;
  isGroup: boolean;
  isUser: boolean;
  isWAContact: boolean;
}

export interface WireReaction {
  id: string;
  msgId: string;
  /** chat the reacted message is in */
  chatId: string;
  senderId: string;
  reaction: string;
  /** unix seconds */
  timestamp: number;
  orphan: number;
}

export interface WirePollVote {
  voter: string;
  selectedOptions: { name: string; localId: number }[];
  /** unix ms (as whatsapp-web.js PollVote.interractedAtTs) */
  interractedAtTs: number;
  parentMessageId: string;
}

export interface WireGroupNotification {
  id: string;
  chatId: string;
  author: string;
  recipientIds: string[];
  body: string;
  type: string;
  /** unix seconds */
  timestamp: number;
}

export interface WireCall {
  id: string;
  from: string;
  /** unix seconds */
  timestamp: number;
  isVideo: boolean;
  isGroup: boolean;
  fromMe: boolean;
}

export interface BatteryInfo {
  battery: number;
  plugged: boolean;
}

export interface ClientInfo {
  /** own id, e.g. 4915112345678@c.us */
  wid: string;
  pushname: string;
  platform: string;
}

export interface BrowserHealth {
  alive: boolean;
  failStreak: number;
  /** unix ms of the last successful probe or call, 0 when never */
  lastOkAt: number;
}

export interface CreateGroupResult {
  gid: string;
  title: string;
  missingParticipants: Record<string, { code: number; message: string }>;
}

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
    readonly code:
      | 'NOT_REGISTERED'
      | 'INVALID_INPUT'
      | 'NOT_FOUND'
      | 'NOT_A_GROUP'
      | 'NOT_CONNECTED'
      | 'CALL_FAILED'
      | 'TIMEOUT'
      | 'SESSION_CLOSED',
    readonly provablyNotSent: boolean,
  ) {
    super(message);
    this.name = 'DriverError';
  }
}

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

/**
 * The plain data of the driver contract (src/drivers/contract.ts): the network's values and objects as copies of
 * whatsapp-web.js's, without methods, so that they cross a process boundary (the sandbox) or an actor's reply.
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


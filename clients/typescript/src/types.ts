/**
 * Request and answer shapes of the v2 API (docs/api.md). Answers may carry fields added later: the types list
 * what the guide documents, and nothing here rejects more.
 */

// ---- sends ------------------------------------------------------------------------------------------------

/** Exactly one of `phone` and `chatId`. */
export type Recipient = { phone: string; chatId?: never } | { chatId: string; phone?: never };

/** docs/api.md "Common request fields" (without the recipient). */
export interface SendCommon {
  /**
   * 8–128 characters of `[A-Za-z0-9_.:-]`. Omitted: the client makes one (`mgw:<uuid>`) so that retries are
   * replays. `null`: send without a key; then no answer at all, a `504` or a `500` is never retried.
   */
  idempotencyKey?: string | null;
  /** 1–9, default 5; 9 goes first */
  priority?: number;
  /** not sent before this instant */
  notBefore?: Date | string;
  /** 60–2592000; default the instance's `defaultTtlSeconds` */
  ttlSeconds?: number;
}

export interface MessageOptions {
  quotedMessageId?: string;
  mentions?: string[];
  groupMentions?: { subject: string; id: string }[];
  linkPreview?: boolean;
  isViewOnce?: boolean;
  sendMediaAsHd?: boolean;
  parseVCards?: boolean;
}

type WithOptions = { options?: MessageOptions };

/** Exactly one media source. */
export type MediaSource =
  | { mediaUrl: string; mediaBase64?: never; mediaId?: never }
  | { mediaBase64: string; mediaUrl?: never; mediaId?: never }
  | { mediaId: string; mediaUrl?: never; mediaBase64?: never };
type MediaCommon = { mimetype?: string; filename?: string };

export type SendMessageInput = Recipient & SendCommon & WithOptions & { message: string };
export type SendMediaInput = Recipient & SendCommon & WithOptions & MediaSource & MediaCommon & { caption?: string; message?: string };
export type SendVoiceInput = Recipient & SendCommon & WithOptions & MediaSource & { mimetype: string; filename?: string };
export type SendDocumentInput = Recipient & SendCommon & WithOptions & MediaSource & { filename: string; mimetype?: string; caption?: string; message?: string };
export type SendStickerInput = Recipient & SendCommon & WithOptions & MediaSource & MediaCommon & { stickerName?: string; stickerAuthor?: string };
export type SendVideoInput = Recipient & SendCommon & WithOptions & MediaSource & MediaCommon & { asGif?: boolean; caption?: string; message?: string };
export type SendLocationInput = Recipient &
  SendCommon &
  WithOptions & { latitude: number; longitude: number; name?: string; address?: string; url?: string; description?: string };
export type SendContactInput = Recipient & SendCommon & WithOptions & { contactIds: string[] };
/** On a poll `options` is the list of answers (2–12). */
export type SendPollInput = Recipient & SendCommon & { name: string; options: string[]; allowMultipleAnswers?: boolean };
export type ForwardInput = SendCommon & WithOptions & { toChatId: string };
export type CreateGroupInput = SendCommon & { title: string; participants: string[]; options?: Record<string, unknown> };

// ---- jobs ---------------------------------------------------------------------------------------------------

export type JobState = 'queued' | 'scheduled' | 'sending' | 'sent' | 'failed' | 'unknown' | 'cancelled' | 'expired';
export type TerminalJobState = 'sent' | 'failed' | 'unknown' | 'cancelled' | 'expired';
export const TERMINAL_STATES: readonly TerminalJobState[] = ['sent', 'failed', 'unknown', 'cancelled', 'expired'];
export const isTerminal = (s: JobState): s is TerminalJobState => (TERMINAL_STATES as readonly string[]).includes(s);

export type JobKind = 'text' | 'media' | 'voice' | 'document' | 'sticker' | 'video' | 'location' | 'contact' | 'poll' | 'forward' | 'group_create';
export type DeliveryConfidence = 'confirmed' | 'assumed' | 'unknown';

export interface Limits {
  maxPerHour: number | null;
  maxPer24h: number | null;
  usedLastHour: number | null;
  usedLast24h: number | null;
  remainingHour: number | null;
  remaining24h: number | null;
  minDelayMs: number;
  maxDelayMs: number;
  quietHours: { start: string; end: string; tz: string } | null;
  window: 'sliding';
}

/** `data` of a send: 202 for a new job, 200 for a replay (`idempotentReplay: true`). */
export interface AcceptedJob {
  status: 'queued' | 'sending' | 'sent' | 'failed' | 'unknown' | 'cancelled' | 'expired';
  queueState: 'scheduled' | 'queued';
  jobId: string;
  messageId: string | null;
  idempotencyKey: string | null;
  idempotentReplay: boolean;
  scheduledAt: string | null;
  etaSeconds: number;
  queuePosition: number;
  expiresAt: string | null;
  statusUrl: string;
  limits: Limits;
  warnings?: string[];
  /** on a requeue: the job it was made from */
  previousJobId?: string;
}

/** docs/api.md "Job status". */
export interface JobStatus {
  jobId: string;
  state: JobState;
  deliveryConfidence: DeliveryConfidence;
  messageId: string | null;
  resultCode: string | null;
  errorMessage: string | null;
  unknownReason: string | null;
  idempotencyKey: string | null;
  kind: JobKind;
  chatId: string | null;
  phone: string | null;
  priority: number;
  originRoute: string;
  queuedAt: string | null;
  scheduledAt: string | null;
  dispatchedAt: string | null;
  terminalAt: string | null;
  expiresAt: string | null;
  attempts: number;
  etaSeconds: number | null;
  previousJobId?: string;
}

// ---- queue --------------------------------------------------------------------------------------------------

export type QueueMode = 'pg' | 'memory-degraded' | 'disabled';

export interface QueueSummary {
  mode: QueueMode;
  limitsEnforced: boolean;
  degradedSince: string | null;
  counts: { queued: number; scheduled: number; sending: number; sent24h: number; failed24h: number; unknown24h: number };
  nextAt: string | null;
  limits: Limits;
}
export interface QueueItemsQuery {
  state?: JobState;
  limit?: number;
  cursor?: string;
}
export interface QueueItems {
  items: JobStatus[];
  nextCursor: string | null;
}
export interface ReplanResult {
  replanned: true;
  affected: number;
  epoch: number;
}

// ---- media --------------------------------------------------------------------------------------------------

export interface UploadMediaInput {
  data: Blob | Uint8Array | ArrayBuffer;
  filename?: string;
  mimetype?: string;
}
export interface StoredMedia {
  stored: true;
  mediaId: string;
  url: string;
  expiresAt: string;
  size: number;
}
export interface MediaInfo {
  mediaId: string;
  mimetype: string;
  filename: string | null;
  size: number;
  createdAt: string;
  expiresAt: string;
  url: string;
}
export interface MessageMediaInfo {
  mimetype: string;
  filename: string | null;
  size: number | null;
  stored: boolean;
  reason?: string;
  mediaId?: string;
  url?: string;
  expiresAt?: string;
}
export interface Download {
  bytes: Uint8Array;
  contentType: string | null;
  filename: string | null;
}

// ---- reads --------------------------------------------------------------------------------------------------

export interface Chat {
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
  muteExpiration: number;
}
export interface Message {
  id: string;
  chatId: string;
  from: string;
  to: string;
  author: string | null;
  body: string;
  type: string;
  /** unix milliseconds */
  timestamp: number;
  fromMe: boolean;
  hasMedia: boolean;
  hasQuotedMsg: boolean;
  ack: number;
  isForwarded: boolean;
  deviceType: string | null;
  location: Record<string, unknown> | null;
  vCards: string[];
}
export interface Contact {
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
export interface ChatList {
  items: Chat[];
  total: number;
  nextCursor: string | null;
}
export interface ChatMessages {
  items: Message[];
  limit: number;
  capped: boolean;
}
export interface NumberCheck {
  phone: string;
  registered: boolean;
  whatsappId: string | null;
}

// ---- interactions and groups --------------------------------------------------------------------------------

export interface ChatStateResult {
  chatId: string;
  expiresAt: string;
  durationMs: number;
}
export interface EditMessageInput {
  message: string;
  options?: { linkPreview?: boolean; mentions?: string[] };
}
export interface AddParticipantsResult {
  groupId: string;
  added: string[];
  failed: Record<string, { code: number; message: string }>;
}

// ---- status -------------------------------------------------------------------------------------------------

export type InstanceStatus = 'initializing' | 'waiting_qr' | 'authenticated' | 'connected' | 'disconnected' | 'error';

export interface Status {
  status: InstanceStatus;
  phoneNumber: string | null;
  connected: boolean;
  browser: { alive: boolean; failStreak: number; lastOkAt: number | null };
  queue: Record<string, unknown> & { mode: QueueMode; degraded: boolean; limits: Limits };
  messages: { sent: number; received: number; failed: number };
}
export type Qr =
  | { status: 'connected'; phoneNumber: string }
  | { status: 'waiting_qr'; qr: string }
  | { status: Exclude<InstanceStatus, 'connected' | 'waiting_qr'>; message: string };

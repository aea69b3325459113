/**
 * GatewayClient: a typed method for every v2 route (docs/api.md), an idempotency key on every send, retries
 * only where retry.ts allows them, and `waitForOutcome` to poll a job until it ends.
 */
import { randomUUID } from 'node:crypto';
import { GatewayError } from './errors.js';
import { defaultSleep, Transport, type HttpMethod, type QueryValue, type RetryInfo } from './http.js';
import { RETRY_DEFAULTS, type RetryClass, type RetryOptions } from './retry.js';
import {
  isTerminal,
  type AcceptedJob,
  type AddParticipantsResult,
  type Chat,
  type ChatList,
  type ChatMessages,
  type ChatStateResult,
  type Contact,
  type CreateGroupInput,
  type Download,
  type EditMessageInput,
  type ForwardInput,
  type JobStatus,
  type MediaInfo,
  type Message,
  type MessageMediaInfo,
  type NumberCheck,
  type Qr,
  type QueueItems,
  type QueueItemsQuery,
  type QueueSummary,
  type ReplanResult,
  type SendCommon,
  type SendContactInput,
  type SendDocumentInput,
  type SendLocationInput,
  type SendMediaInput,
  type SendMessageInput,
  type SendPollInput,
  type SendStickerInput,
  type SendVideoInput,
  type SendVoiceInput,
  type Status,
  type StoredMedia,
  type TerminalJobState,
  type UploadMediaInput,
} from './types.js';

export interface GatewayClientOptions {
  /** the gateway's address, e.g. `http://127.0.0.1:3000` */
  baseUrl: string;
  /** the instance's API key (`wapi_…`) */
  apiKey: string;
  /** per attempt, in ms (default 70_000: the gateway's own send deadline is 60 s) */
  timeoutMs?: number;
  retry?: RetryOptions;
  /** called before each automatic retry (for logs and metrics; carries no secret) */
  onRetry?: (info: RetryInfo) => void;
  /** replaceable for tests */
  fetch?: typeof fetch;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  now?: () => number;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface WaitOptions extends CallOptions {
  /** give up after this long (default 120_000 ms): OUTCOME_TIMEOUT, the job goes on */
  timeoutMs?: number;
  /** between two reads of the job (default 1_000 ms) */
  pollMs?: number;
}

export type FinishedJob = JobStatus & { state: TerminalJobState };

/** A fresh idempotency key: `mgw:` and a random UUID (40 characters of `[A-Za-z0-9_.:-]`). */
export function newIdempotencyKey(): string {
  return `mgw:${randomUUID()}`;
}

/** A path segment: percent-encoded except the characters ids are made of (`@`, `:`, `+`). */
const seg = (s: string): string => encodeURIComponent(s).replace(/%40/g, '@').replace(/%3A/gi, ':').replace(/%2B/gi, '+');

export class GatewayClient {
  private readonly http: Transport;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly now: () => number;

  constructor(opts: GatewayClientOptions) {
    if (!/^https?:\/\//.test(opts.baseUrl)) throw new TypeError('baseUrl must be an http(s) URL');
    this.sleep = opts.sleep ?? defaultSleep;
    this.now = opts.now ?? Date.now;
    this.http = new Transport({
      baseUrl: opts.baseUrl,
      apiKey: opts.apiKey,
      fetch: opts.fetch ?? globalThis.fetch,
      timeoutMs: opts.timeoutMs ?? 70_000,
      retry: { ...RETRY_DEFAULTS, ...opts.retry },
      sleep: this.sleep,
      random: opts.random ?? Math.random,
      ...(opts.onRetry ? { onRetry: opts.onRetry } : {}),
    });
  }

  private async call<T>(method: HttpMethod, path: string, retry: RetryClass, o: CallOptions & { body?: unknown; query?: Record<string, QueryValue>; key?: string | null } = {}): Promise<T> {
    const { data } = await this.http.json<T>({ method, path, retry, body: o.body, query: o.query ?? {}, idempotencyKey: o.key ?? null, signal: o.signal });
    return data;
  }

  // ---- sends (docs/api.md "Send routes") ---------------------------------------------------------------

  /**
   * Every send: the key given, or a new one; `null` sends without a key. The key travels as
   * `X-Idempotency-Key` and is the same on every attempt, so a retry is a replay (`idempotentReplay: true`).
   */
  private send(path: string, input: SendCommon & object, o: CallOptions = {}): Promise<AcceptedJob> {
    const { idempotencyKey, notBefore, ...rest } = input;
    const key = idempotencyKey === undefined ? newIdempotencyKey() : idempotencyKey;
    const body = { ...rest, ...(notBefore !== undefined ? { notBefore: notBefore instanceof Date ? notBefore.toISOString() : notBefore } : {}) };
    return this.call<AcceptedJob>('POST', path, key === null ? 'unkeyed' : 'keyed', { ...o, body, key });
  }

  private sender<I extends SendCommon>(path: string): (input: I, o?: CallOptions) => Promise<AcceptedJob> {
    return (input, o) => this.send(path, input, o);
  }

  readonly sendMessage = this.sender<SendMessageInput>('/api/v2/send-message');
  readonly sendMedia = this.sender<SendMediaInput>('/api/v2/send-media');
  readonly sendVoice = this.sender<SendVoiceInput>('/api/v2/send-voice');
  readonly sendDocument = this.sender<SendDocumentInput>('/api/v2/send-document');
  readonly sendSticker = this.sender<SendStickerInput>('/api/v2/send-sticker');
  readonly sendVideo = this.sender<SendVideoInput>('/api/v2/send-video');
  readonly sendLocation = this.sender<SendLocationInput>('/api/v2/send-location');
  readonly sendContact = this.sender<SendContactInput>('/api/v2/send-contact');
  readonly sendPoll = this.sender<SendPollInput>('/api/v2/send-poll');
  /** Create a group through the send queue; the job's `messageId` is the new group's id. */
  readonly createGroup = this.sender<CreateGroupInput>('/api/v2/groups');
  /** Forward a network message (`msgId` is not a `wq_` id). Ends `sent` with `assumed` confidence. */
  forward(msgId: string, input: ForwardInput, o?: CallOptions) {
    return this.send(`/api/v2/messages/${seg(msgId)}/forward`, input, o);
  }

  // ---- jobs ------------------------------------------------------------------------------------------------

  getJob(jobId: string, o?: CallOptions) {
    return this.call<JobStatus>('GET', `/api/v2/messages/${seg(jobId)}`, 'read', o);
  }
  /** The job of an idempotency key (remembered 7 days): how to find out what a send with no answer did. */
  jobByKey(idempotencyKey: string, o?: CallOptions) {
    return this.call<JobStatus>('GET', '/api/v2/messages', 'read', { ...o, query: { idempotencyKey } });
  }
  /** Cancel a waiting job; `409 JOB_NOT_CANCELLABLE` once sending started. Not retried after no answer. */
  cancelJob(jobId: string, o?: CallOptions) {
    return this.call<JobStatus>('DELETE', `/api/v2/messages/${seg(jobId)}`, 'unkeyed', o);
  }
  /** A new job from a `failed`, `expired` or `cancelled` one; keyed by the gateway (`requeue:<jobId>`), so safe to retry. */
  requeueJob(jobId: string, o?: CallOptions) {
    return this.call<AcceptedJob>('POST', `/api/v2/messages/${seg(jobId)}/requeue`, 'keyed', o);
  }

  /**
   * Read the job every `pollMs` until it is terminal (`sent`, `failed`, `unknown`, `cancelled`, `expired`).
   * Past `timeoutMs`: GatewayError `OUTCOME_TIMEOUT` with `data.state`; the job itself goes on. Never resend
   * because of it: the job is still the one message.
   */
  async waitForOutcome(jobId: string, o: WaitOptions = {}): Promise<FinishedJob> {
    const timeoutMs = o.timeoutMs ?? 120_000;
    const pollMs = Math.max(1, o.pollMs ?? 1_000);
    const deadline = this.now() + timeoutMs;
    const call: CallOptions = o.signal ? { signal: o.signal } : {};
    for (;;) {
      const job = await this.getJob(jobId, call);
      if (isTerminal(job.state)) return job as FinishedJob;
      const left = deadline - this.now();
      if (left <= 0) {
        throw new GatewayError({ code: 'OUTCOME_TIMEOUT', status: 0, message: `job ${jobId} still ${job.state} after ${timeoutMs} ms`, data: { jobId, state: job.state } });
      }
      try {
        await this.sleep(Math.min(pollMs, left), o.signal);
      } catch (err) {
        throw new GatewayError({ code: 'ABORTED', status: 0, message: `waiting for ${jobId} aborted by the caller`, cause: err });
      }
    }
  }

  // ---- queue -----------------------------------------------------------------------------------------------

  queueSummary(o?: CallOptions) {
    return this.call<QueueSummary>('GET', '/api/v2/queue', 'read', o);
  }
  queueItems(q: QueueItemsQuery = {}, o?: CallOptions) {
    return this.call<QueueItems>('GET', '/api/v2/queue/items', 'read', { ...o, query: { state: q.state, limit: q.limit, cursor: q.cursor } });
  }
  replan(o?: CallOptions) {
    return this.call<ReplanResult>('POST', '/api/v2/queue/replan', 'unkeyed', o);
  }

  // ---- media -----------------------------------------------------------------------------------------------

  uploadMedia(input: UploadMediaInput, o?: CallOptions) {
    const form = new FormData();
    const blob = input.data instanceof Blob ? input.data : new Blob([input.data], input.mimetype ? { type: input.mimetype } : {});
    form.set('file', blob, input.filename ?? 'upload');
    if (input.filename !== undefined) form.set('filename', input.filename);
    if (input.mimetype !== undefined) form.set('mimetype', input.mimetype);
    return this.call<StoredMedia>('POST', '/api/v2/media', 'unkeyed', { ...o, body: form });
  }
  getMedia(mediaId: string, o?: CallOptions) {
    return this.call<MediaInfo>('GET', `/api/v2/media/${seg(mediaId)}`, 'read', o);
  }
  downloadMedia(mediaId: string, o?: CallOptions) {
    return this.download(`/api/v2/media/${seg(mediaId)}`, o);
  }
  deleteMedia(mediaId: string, o?: CallOptions) {
    return this.call<{ mediaId: string; deleted: true }>('DELETE', `/api/v2/media/${seg(mediaId)}`, 'unkeyed', o);
  }
  messageMedia(msgId: string, o?: CallOptions) {
    return this.call<MessageMediaInfo>('GET', `/api/v2/messages/${seg(msgId)}/media`, 'read', o);
  }
  downloadMessageMedia(msgId: string, o?: CallOptions) {
    return this.download(`/api/v2/messages/${seg(msgId)}/media`, o);
  }

  private async download(path: string, o: CallOptions = {}): Promise<Download> {
    const raw = await this.http.raw({ method: 'GET', path, query: { download: 1 }, retry: 'read', signal: o.signal });
    const disposition = raw.headers.get('content-disposition');
    const name = disposition ? /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition)?.[1] : undefined;
    return { bytes: raw.bytes, contentType: raw.headers.get('content-type'), filename: name ? decodeURIComponent(name) : null };
  }

  // ---- reads -----------------------------------------------------------------------------------------------

  listChats(q: { limit?: number; cursor?: string; archived?: boolean } = {}, o?: CallOptions) {
    return this.call<ChatList>('GET', '/api/v2/chats', 'read', { ...o, query: { limit: q.limit, cursor: q.cursor, archived: q.archived } });
  }
  getChat(chatId: string, o?: CallOptions) {
    return this.call<Chat>('GET', `/api/v2/chats/${seg(chatId)}`, 'read', o);
  }
  chatMessages(chatId: string, q: { limit?: number; fromMe?: boolean } = {}, o?: CallOptions) {
    return this.call<ChatMessages>('GET', `/api/v2/chats/${seg(chatId)}/messages`, 'read', { ...o, query: { limit: q.limit, fromMe: q.fromMe } });
  }
  getMessage(msgId: string, o?: CallOptions) {
    return this.call<Message>('GET', `/api/v2/messages/${seg(msgId)}`, 'read', o);
  }
  getContact(contactId: string, o?: CallOptions) {
    return this.call<Contact>('GET', `/api/v2/contacts/${seg(contactId)}`, 'read', o);
  }
  contactPicture(contactId: string, o?: CallOptions) {
    return this.call<{ contactId: string; pictureUrl: string | null }>('GET', `/api/v2/contacts/${seg(contactId)}/picture`, 'read', o);
  }
  numberExists(phone: string, o?: CallOptions) {
    return this.call<NumberCheck>('GET', `/api/v2/contacts/${seg(phone)}/exists`, 'read', o);
  }

  // ---- interactions (not retried after no answer: they act at once) -----------------------------------------

  react(msgId: string, emoji: string, o?: CallOptions) {
    return this.call<{ msgId: string; emoji: string }>('POST', `/api/v2/messages/${seg(msgId)}/reaction`, 'unkeyed', { ...o, body: { emoji } });
  }
  removeReaction(msgId: string, o?: CallOptions) {
    return this.call<{ msgId: string; emoji: null }>('DELETE', `/api/v2/messages/${seg(msgId)}/reaction`, 'unkeyed', o);
  }
  markSeen(chatId: string, o?: CallOptions) {
    return this.call<{ chatId: string; seen: boolean }>('POST', `/api/v2/chats/${seg(chatId)}/seen`, 'unkeyed', o);
  }
  typing(chatId: string, q: { durationMs?: number } = {}, o?: CallOptions) {
    return this.call<ChatStateResult>('POST', `/api/v2/chats/${seg(chatId)}/typing`, 'unkeyed', { ...o, body: q });
  }
  recording(chatId: string, q: { durationMs?: number } = {}, o?: CallOptions) {
    return this.call<ChatStateResult>('POST', `/api/v2/chats/${seg(chatId)}/recording`, 'unkeyed', { ...o, body: q });
  }
  clearChatState(chatId: string, o?: CallOptions) {
    return this.call<{ chatId: string; cancelled: boolean }>('DELETE', `/api/v2/chats/${seg(chatId)}/state`, 'unkeyed', o);
  }
  editMessage(msgId: string, input: EditMessageInput, o?: CallOptions) {
    return this.call<{ messageId: string }>('PATCH', `/api/v2/messages/${seg(msgId)}`, 'unkeyed', { ...o, body: input });
  }
  deleteMessage(msgId: string, q: { everyone?: boolean } = {}, o?: CallOptions) {
    return this.call<{ msgId: string; everyone: boolean }>('DELETE', `/api/v2/messages/${seg(msgId)}`, 'unkeyed', { ...o, body: q });
  }

  // ---- groups (docs/api.md "Groups"; creation is createGroup) ------------------------------------------------

  private group(groupId: string, tail = ''): string {
    return `/api/v2/groups/${seg(groupId)}${tail}`;
  }
  addParticipants(groupId: string, participants: string[], options?: Record<string, unknown>, o?: CallOptions) {
    return this.call<AddParticipantsResult>('POST', this.group(groupId, '/participants'), 'unkeyed', { ...o, body: { participants, ...(options ? { options } : {}) } });
  }
  removeParticipants(groupId: string, participants: string[], o?: CallOptions) {
    return this.call<{ groupId: string; removed: string[] }>('DELETE', this.group(groupId, '/participants'), 'unkeyed', { ...o, body: { participants } });
  }
  promoteAdmins(groupId: string, participants: string[], o?: CallOptions) {
    return this.call<{ groupId: string; promoted: string[] }>('POST', this.group(groupId, '/admins'), 'unkeyed', { ...o, body: { participants } });
  }
  demoteAdmins(groupId: string, participants: string[], o?: CallOptions) {
    return this.call<{ groupId: string; demoted: string[] }>('DELETE', this.group(groupId, '/admins'), 'unkeyed', { ...o, body: { participants } });
  }
  inviteCode(groupId: string, o?: CallOptions) {
    return this.call<{ code: string; url: string }>('GET', this.group(groupId, '/invite'), 'read', o);
  }
  revokeInvite(groupId: string, o?: CallOptions) {
    return this.call<{ code: string }>('POST', this.group(groupId, '/invite/revoke'), 'unkeyed', o);
  }
  leaveGroup(groupId: string, o?: CallOptions) {
    return this.call<{ groupId: string; left: true }>('POST', this.group(groupId, '/leave'), 'unkeyed', o);
  }
  updateGroup(groupId: string, input: { subject?: string; description?: string }, o?: CallOptions) {
    return this.call<{ groupId: string; subject?: string; description?: string }>('PATCH', this.group(groupId), 'unkeyed', { ...o, body: input });
  }

  // ---- status ----------------------------------------------------------------------------------------------

  status(o?: CallOptions) {
    return this.call<Status>('GET', '/api/status', 'read', o);
  }
  qr(o?: CallOptions) {
    return this.call<Qr>('GET', '/api/qr', 'read', o);
  }
}

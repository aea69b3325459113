/**
 * The boundary between the sandbox driver and the sandbox network. Every operation is a named method with
 * plain-data arguments and a plain-data result, so the same table serves an in-process network (direct calls)
 * and a network in another process (JSON over HTTP, events over server-sent events).
 */
import type {
  ClientInfo,
  CreateGroupResult,
  DriverEventName,
  DriverEvents,
  FetchMessagesOptions,
  MessageMedia,
  SendContent,
  SendOptions,
  SendResult,
  WAState,
  WireChat,
  WireContact,
  WireGroup,
  WireMessage,
} from '../contract.js';

export interface InitializeOptions {
  /** Link this number without a QR scan if the session is not linked yet (demo instances). */
  autoLink?: { phoneNumber: string; pushname?: string };
}

type Op<A extends unknown[], R> = { args: A; result: R };
export type ParticipantResults = Record<string, { code: number; message: string }>;

export interface SandboxRpc {
  initialize: Op<[opts: InitializeOptions], void>;
  destroy: Op<[], void>;
  logout: Op<[], void>;
  getState: Op<[], WAState | null>;
  getInfo: Op<[], ClientInfo | null>;
  requestPairingCode: Op<[phoneNumber: string], string>;
  sendMessage: Op<[chatId: string, content: SendContent, options: SendOptions], SendResult>;
  forwardMessage: Op<[msgId: string, toChatId: string], void>;
  react: Op<[msgId: string, emoji: string], void>;
  editMessage: Op<[msgId: string, body: string, options: SendOptions], WireMessage | null>;
  deleteMessage: Op<[msgId: string, everyone: boolean], void>;
  sendSeen: Op<[chatId: string], boolean>;
  sendStateTyping: Op<[chatId: string], void>;
  sendStateRecording: Op<[chatId: string], void>;
  clearState: Op<[chatId: string], void>;
  getChats: Op<[], WireChat[]>;
  getChatById: Op<[chatId: string], WireChat | null>;
  fetchMessages: Op<[chatId: string, options: FetchMessagesOptions], WireMessage[]>;
  getMessageById: Op<[msgId: string], WireMessage | null>;
  getContactById: Op<[contactId: string], WireContact | null>;
  getProfilePicUrl: Op<[contactId: string], string | null>;
  getNumberId: Op<[phone: string], string | null>;
  downloadMedia: Op<[msgId: string], MessageMedia | null>;
  createGroup: Op<[title: string, participants: string[], options: Record<string, unknown>], CreateGroupResult>;
  getGroup: Op<[groupId: string], WireGroup | null>;
  addParticipants: Op<[groupId: string, ids: string[]], ParticipantResults>;
  removeParticipants: Op<[groupId: string, ids: string[]], void>;
  promoteParticipants: Op<[groupId: string, ids: string[]], void>;
  demoteParticipants: Op<[groupId: string, ids: string[]], void>;
  getInviteCode: Op<[groupId: string], string>;
  revokeInvite: Op<[groupId: string], string>;
  leaveGroup: Op<[groupId: string], void>;
  setSubject: Op<[groupId: string, subject: string], void>;
  setDescription: Op<[groupId: string, description: string], void>;
}

export type SandboxMethod = keyof SandboxRpc;
export type SandboxArgs<M extends SandboxMethod> = SandboxRpc[M]['args'];
export type SandboxResult<M extends SandboxMethod> = SandboxRpc[M]['result'];

/** Operations that put something on the network; "next call" faults aim at these by default. */
export const SEND_METHODS: ReadonlySet<SandboxMethod> = new Set<SandboxMethod>(['sendMessage', 'forwardMessage']);

/**
 * A network event for one session: a driver event with its whatsapp-web.js arguments, or `info`, which
 * carries the linked account (it precedes `ready`, so `driver.info` is set when `ready` fires).
 */
export type SandboxEvent =
  | { [E in DriverEventName]: { name: E; args: DriverEvents[E] } }[DriverEventName]
  | { name: 'info'; args: [info: ClientInfo | null] };

export type SandboxEventListener = (event: SandboxEvent) => void;

/**
 * Who makes a call or holds a subscription: one driver object (a random id of its own). The session belongs to
 * the client that initialized it last; another client's `initialize` takes it over, and the previous owner is
 * told `disconnected('CONFLICT')` and refused from then on (docs/sandbox.md, "Takeover").
 */
export interface SandboxClientOptions {
  /**
   * The calling driver's client id. Over the wire it is required; in-process, a call or subscription without
   * one is the network's own (tests, tools): it is never refused as stale, never takes a session over, and a
   * subscription without one sees every event of the session.
   */
  clientId?: string;
}

export interface SandboxCallOptions extends SandboxClientOptions {
  /** abandon the call (the remote transport aborts its request) */
  signal?: AbortSignal;
}

export interface SandboxSubscribeOptions extends SandboxClientOptions {
  /** the subscription broke without `unsubscribe` (remote network gone) */
  onLost?: (reason: string) => void;
}

export interface SandboxNetworkApi {
  /** Run one operation of the session `instanceId`. Rejects with DriverError for network-reported failures. */
  call<M extends SandboxMethod>(
    instanceId: string,
    method: M,
    args: SandboxArgs<M>,
    opts?: SandboxCallOptions,
  ): Promise<SandboxResult<M>>;
  /**
   * Receive the session's events (with a client id: only while that client owns the session). Resolves once
   * the subscription is live (events emitted after that are delivered in order).
   */
  subscribe(instanceId: string, listener: SandboxEventListener, opts?: SandboxSubscribeOptions): Promise<() => void>;
}

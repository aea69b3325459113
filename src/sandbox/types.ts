/**
 * The sandbox network's state as plain data: what is persisted to the state file (accounts, links, messages,
 * groups, per-account chat state, the ledger, account faults). Phones are digits only ("4915112345678").
 */
import type { Location, MessageAck, MessageType, SendOptions } from '../drivers/contract.js';

export interface AccountRecord {
  /** Explicit registration; absent means the default rule (numbers ending in 0000 are not registered). */
  registered?: boolean;
  pushname?: string | null;
  isBusiness?: boolean;
}

export interface SessionRecord {
  linkedPhone: string | null;
  pushname: string | null;
  /** unix ms */
  linkedAt: number | null;
}

export interface MediaRef {
  sha256: string;
  mimetype: string;
  filename: string | null;
  size: number;
  isGif?: boolean;
  isViewOnce?: boolean;
  hd?: boolean;
}

export interface PollRecord {
  name: string;
  options: { name: string; localId: number }[];
  allowMultipleAnswers: boolean;
}

export type ChatRef = { kind: 'direct'; to: string } | { kind: 'group'; gid: string };

export interface NetMessage {
  /** network-wide message key, the HEX part of the serialized id */
  key: string;
  sender: string;
  chat: ChatRef;
  /** phones that received a copy (direct: both sides; group: participants at send time) */
  audience: string[];
  type: MessageType;
  body: string;
  /** unix ms */
  timestampMs: number;
  media: MediaRef | null;
  location: Location | null;
  vCards: string[];
  poll: PollRecord | null;
  /** voter phone → selected option localIds */
  votes: Record<string, { selected: number[]; atMs: number }>;
  /** reactor phone → emoji */
  reactions: Record<string, { emoji: string; atMs: number; key: string }>;
  quotedKey: string | null;
  mentions: string[];
  isForwarded: boolean;
  /** the sender's view of delivery */
  ack: MessageAck;
  /** earlier bodies, oldest first */
  edits: { body: string; atMs: number }[];
  revoked: boolean;
  deletedFor: string[];
  /** group notification messages (gp2) */
  notification?: { subtype: string; author: string; recipients: string[] } | null;
}

export interface GroupParticipantRecord {
  phone: string;
  admin: boolean;
  superAdmin: boolean;
}

export interface GroupRecord {
  gid: string;
  subject: string;
  description: string | null;
  owner: string;
  /** unix ms */
  createdAtMs: number;
  participants: GroupParticipantRecord[];
  inviteCode: string;
  /** phones that were in the group and left or were removed (the chat stays, read-only) */
  former: string[];
}

export interface ChatStateRecord {
  unreadCount: number;
  archived: boolean;
  pinned: boolean;
  /** unix seconds, -1 forever, null not muted */
  muteExpiration: number | null;
}

export type LedgerAction = 'send' | 'forward' | 'react' | 'edit' | 'delete' | 'group_create';

/** One thing an instance put on the network. The crash tests count these. */
export interface LedgerEntry {
  /** 1-based, per instance */
  seq: number;
  instanceId: string;
  from: string;
  action: LedgerAction;
  /** serialized id as the sender sees it (null for actions without a message of their own) */
  messageId: string | null;
  chatId: string;
  type: MessageType | null;
  body: string | null;
  media: MediaRef | null;
  location: Location | null;
  vCards: string[];
  poll: PollRecord | null;
  /** for react/edit/delete: the message acted on */
  targetMessageId: string | null;
  /** for delete: for everyone (true) or only for the instance (false) */
  everyone?: boolean;
  options: SendOptions;
  /** unix ms */
  timestamp: number;
  /** the fault that shaped the caller's outcome, if any (the message still went out) */
  fault: FaultKind | null;
}

export type FaultKind =
  | 'not_registered'
  | 'no_id'
  | 'hang'
  | 'call_error'
  | 'invalid_input'
  | 'session_crash'
  | 'browser_death'
  | 'disconnect';

export interface Fault {
  kind: FaultKind;
  /** hang (default true) and call_error (default false): does the network take the message anyway? */
  deliver?: boolean;
  /** disconnect reason, crash reason, error text */
  reason?: string;
}

export interface NextCallFault extends Fault {
  /** `send` (default): the next sendMessage/forwardMessage. `any`: the next operation of any kind. */
  on?: 'send' | 'any';
}

export interface NetworkState {
  version: 1;
  accounts: Record<string, AccountRecord>;
  sessions: Record<string, SessionRecord>;
  messages: Record<string, NetMessage>;
  groups: Record<string, GroupRecord>;
  /** key `<phone>|<chatId>` */
  chatStates: Record<string, ChatStateRecord>;
  ledger: Record<string, LedgerEntry[]>;
  accountFaults: Record<string, Fault>;
}

/**
 * A record keyed by what arrives from outside (instance ids, message ids, phones, chat ids): it has no
 * prototype, so `constructor`, `__proto__` or `valueOf` is an ordinary key that is simply not there.
 */
export function dict<T>(from?: Readonly<Record<string, T>> | null): Record<string, T> {
  const d: Record<string, T> = Object.create(null) as Record<string, T>;
  if (from) for (const [k, v] of Object.entries(from)) d[k] = v;
  return d;
}

export const emptyState = (): NetworkState => ({
  version: 1,
  accounts: dict(),
  sessions: dict(),
  messages: dict(),
  groups: dict(),
  chatStates: dict(),
  ledger: dict(),
  accountFaults: dict(),
});

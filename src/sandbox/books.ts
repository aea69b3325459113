/**
 * What the network's parts need of the network (SandboxNetwork implements all three): the group book, the
 * message book and a session depend on these interfaces, not on SandboxNetwork, so no part imports the network
 * that owns it.
 */
import type { SandboxEvent, SandboxMethod } from '../drivers/sandbox/api.js';
import type { SandboxStore } from './store.js';
import type { Fault, GroupRecord, NetMessage, NetworkState, NextCallFault, SessionRecord } from './types.js';

/** The shared state, time, persistence and delivery every part uses. */
export interface NetworkCore {
  readonly state: NetworkState;
  now(): number;
  persist(): void;
  /** deliver an event to the linked session of `phone` (made only when someone listens) */
  emitTo(phone: string, make: () => SandboxEvent | null): void;
  /** run `fn` after `ms` of the network's clock */
  schedule(ms: number, fn: () => void): void;
  /** the phone behind a user id (`…@c.us`, `…@lid`) or a bare number, null when unknown */
  resolveUser(id: string): string | null;
  displayName(phone: string): string;
  isRegistered(phone: string): boolean;
}

export type GroupNetwork = NetworkCore;

export interface MessageNetwork extends NetworkCore {
  /** the group book's lookups (GroupBook) */
  readonly groups: { require(gid: string): GroupRecord; of(phone: string): GroupRecord[] };
  readonly store: Pick<SandboxStore, 'putMedia'>;
  readonly ackDelays: { deviceMs: number; readMs: number };
  isLinked(phone: string): boolean;
  know(phone: string): void;
  saveMessage(m: NetMessage): void;
}

export interface SessionNetwork extends NetworkCore {
  readonly qrRotateMs: number;
  sessionRecord(instanceId: string): SessionRecord;
  /** link the session to a phone (null: unlink), journaled at once */
  setLink(instanceId: string, phone: string | null, pushname?: string | null): void;
  accountFault(phone: string): Fault | null;
  takeNextCallFault(instanceId: string, method: SandboxMethod): NextCallFault | null;
}

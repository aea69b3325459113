/**
 * The sandbox messaging network: accounts, linked sessions, chats, messages, groups, the ledger of what each
 * instance sent, and the faults a test has asked for. One object holds the state; MessageBook and GroupBook
 * own their halves of the behaviour, SandboxSession the lifecycle of one instance's linked session.
 * All time comes from the injected Clock, so acks, QR rotation and timestamps follow simulated time in tests.
 */
import { randomInt } from 'node:crypto';
import { systemClock, type Clock, type TimerHandle } from '../clock.js';
import { DomainError } from '../errors.js';
import type { SandboxEvent, SandboxMethod } from '../drivers/sandbox/api.js';
import { SEND_METHODS } from '../drivers/sandbox/api.js';
import { lidFor, normalizePhone, parseChatId } from './ids.js';
import { GroupBook } from './groups.js';
import { MessageBook } from './messages.js';
import { SandboxSession } from './session.js';
import { SandboxStore } from './store.js';
import type { AccountRecord, Fault, LedgerEntry, NetMessage, NetworkState, NextCallFault, SessionRecord } from './types.js';

export interface SandboxNetworkOptions {
  clock?: Clock;
  /** JSON state file; null or absent keeps everything in memory */
  statePath?: string | null;
  /** when a recipient's device and (for recipients that are not linked instances) its reader acknowledge */
  ackDelays?: { deviceMs?: number; readMs?: number };
  /** QR rotation period (the real network rotates about every 20 s) */
  qrRotateMs?: number;
}

export interface LinkRequest {
  /** the QR token currently shown by the session (as if a phone scanned it) */
  qr?: string;
  /** the phone that links; with `qr` it is the scanning phone, alone it links directly */
  phoneNumber?: string;
  pushname?: string;
}

export class SandboxNetwork {
  readonly clock: Clock;
  readonly store: SandboxStore;
  readonly state: NetworkState;
  readonly messages: MessageBook;
  readonly groups: GroupBook;
  readonly ackDelays: { deviceMs: number; readMs: number };
  readonly qrRotateMs: number;
  private readonly sessions = new Map<string, SandboxSession<SandboxNetwork>>();
  private readonly timers = new Set<TimerHandle>();
  private readonly nextFaults = new Map<string, NextCallFault[]>();
  private readonly lids = new Map<string, string>();
  /** linked phone → the instances linked to it (one, normally): a lookup per event, not a scan of every session */
  private readonly linked = new Map<string, Set<string>>();
  private closed = false;

  constructor(opts: SandboxNetworkOptions = {}) {
    this.clock = opts.clock ?? systemClock;
    this.store = new SandboxStore(opts.statePath ?? null);
    this.state = this.store.load();
    this.ackDelays = { deviceMs: opts.ackDelays?.deviceMs ?? 1000, readMs: opts.ackDelays?.readMs ?? 5000 };
    this.qrRotateMs = opts.qrRotateMs ?? 20_000;
    this.messages = new MessageBook(this);
    this.groups = new GroupBook(this);
    for (const phone of Object.keys(this.state.accounts)) this.know(phone);
    for (const [instanceId, s] of Object.entries(this.state.sessions)) if (s.linkedPhone) this.index(instanceId, s.linkedPhone);
    this.messages.reindex();
  }

  now(): number {
    return this.clock.now();
  }

  // ---- accounts

  /** Explicit registration wins; otherwise every number is registered except those ending in 0000. */
  isRegistered(phone: string): boolean {
    return this.state.accounts[phone]?.registered ?? !phone.endsWith('0000');
  }

  account(phone: string): AccountRecord & { phone: string; registered: boolean; lid: string } {
    const a = this.state.accounts[phone] ?? {};
    return { ...a, phone, registered: this.isRegistered(phone), lid: lidFor(phone) };
  }

  setAccount(phone: string, patch: AccountRecord): void {
    this.state.accounts[phone] = { ...this.state.accounts[phone], ...patch };
    this.know(phone);
    this.persist();
  }

  pushname(phone: string): string | null {
    const own = this.state.accounts[phone]?.pushname;
    if (own) return own;
    for (const id of this.linked.get(phone) ?? []) {
      const name = this.state.sessions[id]?.pushname;
      if (name) return name;
    }
    return null;
  }

  displayName(phone: string): string {
    return this.pushname(phone) ?? `+${phone}`;
  }

  /** Remember a phone so its lid can be resolved back to it. */
  know(phone: string): void {
    this.lids.set(lidFor(phone), phone);
  }

  /** The phone behind a `@c.us` or `@lid` id, or null. */
  resolveUser(id: string): string | null {
    const parsed = parseChatId(id);
    if (parsed?.kind === 'user') return parsed.phone;
    if (parsed?.kind === 'lid') return this.lids.get(parsed.lid) ?? null;
    return null;
  }

  // ---- sessions

  session(instanceId: string): SandboxSession<SandboxNetwork> {
    let s = this.sessions.get(instanceId);
    if (!s) {
      s = new SandboxSession<SandboxNetwork>(this, instanceId);
      this.sessions.set(instanceId, s);
    }
    return s;
  }

  /**
   * An instance the gateway deleted: its session stopped and forgotten, in memory and in the state file (its
   * link's record, journaled at once). Found from the outside: every instance ever created kept its session
   * object here, about 1.6 KB each, and a linked one its record in the state file, after it was deleted. The
   * accounts, chats and messages are the network's and stay.
   */
  forget(instanceId: string): void {
    const s = this.sessions.get(instanceId);
    if (s) {
      void s.destroy();
      this.sessions.delete(instanceId);
    }
    const r = this.state.sessions[instanceId];
    if (!r) return;
    if (r.linkedPhone) this.linked.get(r.linkedPhone)?.delete(instanceId);
    delete this.state.sessions[instanceId];
    this.store.appendSession(instanceId, null);
    this.persist();
  }

  /** Whether the network holds a session object of the instance (in memory). */
  hasSession(instanceId: string): boolean {
    return this.sessions.has(instanceId);
  }

  sessionRecord(instanceId: string): SessionRecord {
    let r = this.state.sessions[instanceId];
    if (!r) {
      r = { linkedPhone: null, pushname: null, linkedAt: null };
      this.state.sessions[instanceId] = r;
    }
    return r;
  }

  /**
   * Link the instance's session to `phone` (null: unlink), journaled at once: a link must survive even a
   * process killed right after it. A linked phone is a registered account.
   */
  setLink(instanceId: string, phone: string | null, pushname: string | null = null): void {
    const r = this.sessionRecord(instanceId);
    if (r.linkedPhone) this.linked.get(r.linkedPhone)?.delete(instanceId);
    r.linkedPhone = phone;
    r.linkedAt = phone ? this.now() : null;
    if (phone) {
      r.pushname = pushname ?? r.pushname;
      this.index(instanceId, phone);
      this.state.accounts[phone] = { ...this.state.accounts[phone], registered: true };
    }
    this.store.appendSession(instanceId, r);
    this.persist();
  }

  /** Is any instance linked to this phone (then its reads come from the instance, not from a timer)? */
  isLinked(phone: string): boolean {
    return (this.linked.get(phone)?.size ?? 0) > 0;
  }

  /** Emit to every ready session linked to `phone`; `make` runs per session so no object is shared. */
  emitTo(phone: string, make: () => SandboxEvent | null): void {
    for (const id of [...(this.linked.get(phone) ?? [])]) {
      const s = this.sessions.get(id);
      if (!s || s.phone !== phone || !s.isReady()) continue;
      const event = make();
      if (event) s.emit(event);
    }
  }

  private index(instanceId: string, phone: string): void {
    this.know(phone);
    let ids = this.linked.get(phone);
    if (!ids) this.linked.set(phone, (ids = new Set()));
    ids.add(instanceId);
  }

  // ---- linking (control side)

  link(instanceId: string, req: LinkRequest): { phoneNumber: string } {
    const session = this.session(instanceId);
    let phone: string | null = null;
    if (req.phoneNumber !== undefined) {
      phone = normalizePhone(req.phoneNumber);
      if (!phone) throw new DomainError('VALIDATION_FAILED', 'phoneNumber is not a phone number', { field: 'phoneNumber' });
    }
    if (req.qr !== undefined) {
      if (!session.qrMatches(req.qr)) {
        throw new DomainError('CONFLICT', 'the QR code is not the one the session shows now (expired or not waiting)');
      }
      phone ??= randomSandboxPhone();
    }
    if (!phone) throw new DomainError('VALIDATION_FAILED', 'give qr or phoneNumber', { field: 'qr' });
    // a linked device belongs to one phone: another one cannot take it over without an unlink (the session and
    // its driver would go on as the old number, and a send to the new own number would crash the session)
    const current = session.phone;
    if (current !== null && current !== phone) {
      throw new DomainError('CONFLICT', `the session is linked to another phone; unlink it first (POST /sandbox/v1/instances/:instanceId/unlink)`);
    }
    session.acceptLink(phone, req.pushname ?? null);
    return { phoneNumber: phone };
  }

  confirmPairing(instanceId: string, code: string): { phoneNumber: string } {
    const phone = this.session(instanceId).pairingPhone(code);
    if (!phone) throw new DomainError('CONFLICT', 'no pending pairing with this code');
    this.session(instanceId).acceptLink(phone, null);
    return { phoneNumber: phone };
  }

  // ---- faults

  setAccountFault(phone: string, fault: Fault | null): void {
    if (fault) this.state.accountFaults[phone] = fault;
    else delete this.state.accountFaults[phone];
    this.persist();
  }

  accountFault(phone: string): Fault | null {
    return this.state.accountFaults[phone] ?? null;
  }

  addNextCallFault(instanceId: string, fault: NextCallFault): void {
    const list = this.nextFaults.get(instanceId) ?? [];
    list.push(fault);
    this.nextFaults.set(instanceId, list);
  }

  pendingNextCallFaults(instanceId: string): NextCallFault[] {
    return [...(this.nextFaults.get(instanceId) ?? [])];
  }

  clearNextCallFaults(instanceId: string): void {
    this.nextFaults.delete(instanceId);
  }

  /** Consume the first queued fault aimed at `method` (send faults only match sends). */
  takeNextCallFault(instanceId: string, method: SandboxMethod): NextCallFault | null {
    const list = this.nextFaults.get(instanceId);
    if (!list) return null;
    const isSend = SEND_METHODS.has(method);
    const sendOnlyKind = (f: NextCallFault) => f.kind === 'no_id' || f.kind === 'not_registered';
    const i = list.findIndex((f) => isSend || ((f.on ?? 'send') === 'any' && !sendOnlyKind(f)));
    if (i < 0) return null;
    const [fault] = list.splice(i, 1);
    if (list.length === 0) this.nextFaults.delete(instanceId);
    return fault ?? null;
  }

  // ---- ledger

  record(instanceId: string, entry: Omit<LedgerEntry, 'seq' | 'instanceId' | 'timestamp'>): LedgerEntry {
    const list = (this.state.ledger[instanceId] ??= []);
    const full: LedgerEntry = { seq: list.length + 1, instanceId, timestamp: this.now(), ...entry };
    list.push(full);
    this.store.appendLedger(full);
    return full;
  }

  ledger(instanceId: string, sinceSeq = 0): LedgerEntry[] {
    return (this.state.ledger[instanceId] ?? []).filter((e) => e.seq > sinceSeq);
  }

  // ---- infrastructure

  schedule(ms: number, fn: () => void): void {
    if (this.closed) return;
    const handle = this.clock.setTimeout(() => {
      this.timers.delete(handle);
      if (!this.closed) fn();
    }, Math.max(0, ms));
    this.timers.add(handle);
  }

  /** Save the small records (accounts, links, groups, chat state, faults) soon. */
  persist(): void {
    this.store.saveMeta(this.state);
  }


  /** Journal a message after it changed (posted, acked, edited, revoked, reacted to, voted on). */
  saveMessage(m: NetMessage): void {
    this.store.appendMessage(m);
  }

  /** Stop every session (hung calls are released) and every timer. The state stays on disk. */
  close(): void {
    for (const s of this.sessions.values()) s.shutdown();
    this.closed = true;
    for (const t of this.timers) this.clock.clearTimeout(t);
    this.timers.clear();
    this.store.flush();
  }
}

/** A German mobile-looking number that is registered under the default rule. */
function randomSandboxPhone(): string {
  let digits = '49155';
  while (digits.length < 12) digits += String(randomInt(10));
  return digits.endsWith('0000') ? `${digits.slice(0, -1)}1` : digits;
}

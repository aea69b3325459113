/**
 * One instance's linked session on the sandbox network, as the driver sees it: started, showing a rotating
 * QR or a pairing code (session-link.ts), linked, ready; or crashed, disconnected, stopped. A link is
 * persisted, so the next initialize goes straight to authenticated → ready. Faults are applied here (what each
 * kind does: session-faults.ts), and a call that "hangs" stays pending until the session stops, when it is
 * released with SESSION_CLOSED.
 *
 * Clients (docs/sandbox.md, "Takeover"; who hears what: session-clients.ts): the session belongs to the
 * client that initialized it last; another client's `initialize` takes it over, as a second browser opening
 * the same linked device does on the real network: the previous owner's run ends, it is told
 * `change_state('CONFLICT')` and `disconnected('CONFLICT')`, and its later calls are refused NOT_CONNECTED,
 * provably not sent. A stale client's `destroy` only detaches it and its `logout` is refused.
 */
import { DriverError, type ClientInfo, type WAState } from '../drivers/contract.js';
import { SEND_METHODS, type InitializeOptions, type SandboxEvent, type SandboxMethod } from '../drivers/sandbox/api.js';
import { normalizePhone, userId } from './ids.js';
import type { SessionNetwork } from './books.js';
import { LinkScreen, type ShownQr } from './session-link.js';
import { SessionClients } from './session-clients.js';
import { runUnderFault, type FaultedSession } from './session-faults.js';
import type { Fault, FaultKind } from './types.js';

export type SessionPhase = 'stopped' | 'starting' | 'waiting_qr' | 'ready' | 'disconnected' | 'crashed';

/**
 * The `disconnected` reason (and `change_state`) a replaced owner gets: whatsapp-web.js's WAState for "this
 * session was opened elsewhere", which it reports the same way (without takeoverOnConflict).
 */
export const REPLACED_REASON = 'CONFLICT';

/** The WAState of whatsapp-web.js each phase reports (a disconnected one: TIMEOUT when linked, else UNPAIRED). */
const WA_STATES: Partial<Record<SessionPhase, WAState>> = { ready: 'CONNECTED', waiting_qr: 'UNPAIRED', starting: 'OPENING' };

/** A phase in which a run is going on (a replaced owner is told it lost it). */
const LIVE: ReadonlySet<SessionPhase> = new Set<SessionPhase>(['starting', 'waiting_qr', 'ready']);

/** `N`: the network as the session's callers see it (SandboxNetwork for the driver operations). */
export class SandboxSession<N extends SessionNetwork = SessionNetwork> {
  private phaseValue: SessionPhase = 'stopped';
  /** who may use the session and who hears its events */
  readonly clients = new SessionClients(() => this.stop('the client that ran the session went away'));
  /** the QR or pairing code shown while the session waits for a link */
  private readonly link: LinkScreen;
  private readonly hung = new Set<(err: DriverError) => void>();
  private failStreak = 0;
  private lastOkAt = 0;
  /** chat id → what the instance shows there (typing or recording) */
  readonly presence = new Map<string, 'typing' | 'recording'>();

  constructor(
    readonly net: N,
    readonly instanceId: string,
  ) {
    this.link = new LinkScreen(net, (event) => this.emit(event));
  }

  get phone(): string | null {
    return this.net.state.sessions[this.instanceId]?.linkedPhone ?? null;
  }

  get phase(): SessionPhase {
    return this.phaseValue;
  }

  isReady(): boolean {
    return this.phaseValue === 'ready';
  }

  /** An event of the session: to the owner's listeners and the network's own observers. */
  emit(event: SandboxEvent): void {
    this.clients.emit(event);
  }

  // ---- lifecycle (driver side)

  /** Start (or restart) the session; from a client that does not own it, a takeover. */
  async initialize(opts: InitializeOptions, client?: string): Promise<void> {
    if (client !== undefined && client !== this.clients.owner) this.takeOver(client);
    this.stop('the session was restarted');
    this.phaseValue = 'starting';
    if (opts.autoLink && !this.phone) {
      const phone = normalizePhone(opts.autoLink.phoneNumber);
      if (!phone) throw new DriverError('autoLink phoneNumber is not a phone number', 'INVALID_INPUT', true);
      this.linkRecord(phone, opts.autoLink.pushname ?? null);
    }
    this.emit({ name: 'browser_health', args: [this.browserHealth(true)] });
    if (this.phone) {
      this.becomeReady();
      return;
    }
    this.phaseValue = 'waiting_qr';
    this.emit({ name: 'change_state', args: ['UNPAIRED'] });
    this.link.show();
  }

  /** Stop the session; from a stale client it only detaches that client (the owner's session runs on). */
  async destroy(client?: string): Promise<void> {
    if (this.clients.isStale(client)) return;
    this.stop('the session was destroyed');
  }

  /**
   * Unlink the device and stop. A stale client is refused (NOT_CONNECTED, provably not sent): the link now
   * belongs to the client that took the session over, and only it (or the phone) may remove it.
   */
  async logout(client?: string): Promise<void> {
    if (this.clients.isStale(client)) {
      throw new DriverError('the session was taken over by another client; log out from the one that runs it', 'NOT_CONNECTED', true);
    }
    this.unlinkRecord();
    this.stop('the session logged out');
  }

  async getState(): Promise<WAState | null> {
    if (this.phaseValue === 'disconnected') return this.phone ? 'TIMEOUT' : 'UNPAIRED';
    return WA_STATES[this.phaseValue] ?? null;
  }

  async getInfo(): Promise<ClientInfo | null> {
    return this.info();
  }

  async requestPairingCode(phoneNumber: string): Promise<string> {
    if (this.phaseValue !== 'waiting_qr') {
      throw new DriverError('a pairing code can only be requested while the session waits to be linked', 'INVALID_INPUT', true);
    }
    const phone = normalizePhone(phoneNumber);
    if (!phone) throw new DriverError('not a phone number', 'INVALID_INPUT', true);
    return this.link.requestCode(phone);
  }

  // ---- linking (control side)

  /** The QR payload shown right now, for the control API (a test or demo "scans" it). */
  currentQr(): ShownQr | null {
    return this.phaseValue === 'waiting_qr' ? this.link.current() : null;
  }

  qrMatches(token: string): boolean {
    return this.phaseValue === 'waiting_qr' && this.link.matches(token);
  }

  pairingPhone(code: string): string | null {
    return this.phaseValue === 'waiting_qr' ? this.link.pairingPhone(code) : null;
  }

  /** A phone linked this session (scan, code, or directly). A waiting session becomes ready now. */
  acceptLink(phone: string, pushname: string | null): void {
    this.linkRecord(phone, pushname);
    if (this.phaseValue === 'waiting_qr') this.becomeReady();
  }

  /** The phone removed this linked device: the link is gone and a running session is told so. */
  remoteLogout(): void {
    this.unlinkRecord();
    if (this.phaseValue === 'stopped') return;
    this.endRun('disconnected', 'the session was logged out from the phone');
    this.emit({ name: 'disconnected', args: ['LOGOUT'] });
  }

  // ---- faults and failures

  crash(reason: string): void {
    if (this.phaseValue === 'stopped') return;
    this.endRun('crashed', 'the session crashed');
    this.emit({ name: 'fatal', args: [reason] });
    this.emit({ name: 'disconnected', args: [reason] });
  }

  browserDeath(reason: string): void {
    if (this.phaseValue === 'stopped') return;
    this.failStreak++;
    this.endRun('crashed', 'the browser died');
    this.emit({ name: 'browser_health', args: [this.browserHealth(false)] });
    this.emit({ name: 'fatal', args: [reason] });
  }

  /** The connection dropped. Pending calls keep hanging, as on the real network; `LOGOUT` also unlinks. */
  disconnect(reason: string): void {
    if (this.phaseValue === 'stopped') return;
    if (reason === 'LOGOUT') this.unlinkRecord();
    this.phaseValue = 'disconnected';
    this.link.clear();
    this.emit({ name: 'disconnected', args: [reason] });
  }

  /** The fault for this call: a queued "next call" fault first, else the recipient account's fault. */
  takeFault(method: SandboxMethod, recipient: string | null): Fault | null {
    const next = this.net.takeNextCallFault(this.instanceId, method);
    if (next) return next;
    return recipient && SEND_METHODS.has(method) ? this.net.accountFault(recipient) : null;
  }

  /** Run `deliver` under `fault` (session-faults.ts says what each kind does). */
  async withFault<T>(fault: Fault | null, deliver: (tag: FaultKind | null) => T): Promise<T> {
    if (!fault) return deliver(null);
    return runUnderFault(this.faulted(), fault, deliver);
  }

  /** The linked phone of a ready session; anything else is refused before the network is touched. */
  requireReady(): string {
    const phone = this.phone;
    if (this.phaseValue !== 'ready' || !phone) throw new DriverError('the session is not connected', 'NOT_CONNECTED', true);
    return phone;
  }

  /** A non-send operation: ready check, then any "next call" fault aimed at every operation. */
  async guarded<T>(method: SandboxMethod, run: (me: string) => T): Promise<T> {
    const me = this.requireReady();
    const result = await this.withFault(this.takeFault(method, null), () => run(me));
    this.touchOk();
    return result;
  }

  touchOk(): void {
    this.lastOkAt = this.net.now();
  }

  browserHealth(alive = this.phaseValue !== 'crashed'): { alive: boolean; failStreak: number; lastOkAt: number } {
    return { alive, failStreak: this.failStreak, lastOkAt: this.lastOkAt };
  }

  /** Stop without events (network shutdown). */
  shutdown(): void {
    this.stop('the sandbox network shut down');
  }

  // ---- internals

  /**
   * `client` takes the session over. A previous owner with a run going is told as a replaced browser is
   * (its hung calls are released with SESSION_CLOSED, outcome unknown); from now on it gets no events.
   */
  private takeOver(client: string): void {
    const live = LIVE.has(this.phaseValue);
    if (live) this.stop('the session was taken over by another client');
    const previous = this.clients.setOwner(client);
    if (previous !== null && live) {
      this.clients.emitTo(previous, { name: 'change_state', args: [REPLACED_REASON] });
      this.clients.emitTo(previous, { name: 'disconnected', args: [REPLACED_REASON] });
    }
  }

  private info(): ClientInfo | null {
    const phone = this.phone;
    if (this.phaseValue !== 'ready' || !phone) return null;
    return { wid: userId(phone), pushname: this.net.displayName(phone), platform: 'sandbox' };
  }

  private becomeReady(): void {
    this.link.clear();
    this.phaseValue = 'ready';
    this.failStreak = 0;
    this.touchOk();
    this.emit({ name: 'authenticated', args: [] });
    this.emit({ name: 'loading_screen', args: [100, 'WhatsApp'] });
    this.emit({ name: 'info', args: [this.info()] });
    this.emit({ name: 'change_state', args: ['CONNECTED'] });
    this.emit({ name: 'ready', args: [] });
  }

  /** What a fault may do to this session (session-faults.ts); made when a fault strikes (rarely), not per session. */
  private faulted(): FaultedSession {
    return {
      crash: (reason) => this.crash(reason),
      browserDeath: (reason) => this.browserDeath(reason),
      disconnect: (reason) => this.disconnect(reason),
      hang: () =>
        new Promise<never>((_resolve, reject) => {
          this.hung.add(reject);
        }),
    };
  }

  /** End the run: the calls that hang on it fail SESSION_CLOSED with `why` (the error made only for them). */
  private endRun(phase: SessionPhase, why: string): void {
    this.phaseValue = phase;
    this.link.clear();
    this.presence.clear();
    if (this.hung.size === 0) return;
    const pending = [...this.hung];
    this.hung.clear();
    const err = new DriverError(why, 'SESSION_CLOSED', false);
    for (const reject of pending) reject(err);
  }

  private stop(why: string): void {
    this.endRun('stopped', why);
  }

  private linkRecord(phone: string, pushname: string | null): void {
    this.net.setLink(this.instanceId, phone, pushname);
  }

  private unlinkRecord(): void {
    this.net.setLink(this.instanceId, null);
  }
}

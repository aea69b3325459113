/**
 * One whatsapp-web.js session: its Client, its Chromium, its lifecycle and its call gate (gate.ts). driver.ts
 * puts the contract's operations on top.
 *
 * Life of a session (one per driver; the instance machine builds a new driver for each start):
 *   idle ──initialize()──▶ starting ──library initialize() resolved──▶ running
 *     starting/running ──browser died, hung, or start failed──▶ dead   (emits `fatal`, kills the browser)
 *     any ──destroy()/logout()──▶ destroyed                            (closes, then kills what is left)
 * `initialize()` resolves once the library has started (WhatsApp Web open and the QR or the stored link on
 * its way); linking progress arrives as events. A start failure emits `fatal` with the reason, then rejects.
 *
 * Every operation is one library call (or a lookup and a call) through `call()` (gate.ts): the session must be
 * able to take it (else NOT_CONNECTED / SESSION_CLOSED, provably not sent), it gets `callTimeoutMs`, and its
 * failure becomes a DriverError (outcome.ts). Nothing is ever retried.
 */
import { systemClock, type Clock } from '../../clock.js';
import { silentLogger, type Logger } from '../../log.js';
import {
  DriverError,
  type BrowserHealth,
  type ClientInfo,
  type DriverEventName,
  type DriverListener,
  type WAState,
} from '../contract.js';
import { BrowserWatch } from './browser.js';
import { checkPhone } from './content.js';
import { DriverEmitter, wireLibraryEvents, type EventSink } from './events.js';
import { CallGate, type CallOptions, type Gate } from './gate.js';
import type { LibClient } from './library.js';
import { mapClientInfo, toWAState } from './mapping.js';
import { DEFAULTS, forgetLink, isValidClientId, sessionPaths, type SessionPaths, type WebjsDriverOptions } from './options.js';
import { CallTimeout, describeError, invalidInput, withTimeout } from './outcome.js';
import { shutdownBrowser } from './shutdown.js';
import { BrowserAttacher, buildClient, clearStaleBrowser } from './start.js';

type Phase = 'idle' | 'starting' | 'running' | 'dead' | 'destroyed';

export class WebjsSession implements Gate {
  readonly paths: SessionPaths;

  private readonly opts: WebjsDriverOptions;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly events: DriverEmitter;
  private readonly watch: BrowserWatch;
  private phase: Phase = 'idle';
  private client: LibClient | null = null;
  private ready = false;
  private account: ClientInfo | null = null;
  /** The library reported `disconnected`: the browser closing afterwards is its doing, not a crash. */
  private libraryDisconnected = false;
  private started: Promise<void> | null = null;
  private readonly browser: BrowserAttacher;
  private readonly gate: CallGate;
  private cleanup: Promise<void> | null = null;
  /** Rejects when the session ends (died or destroyed) so a pending initialize() does not wait for the library. */
  private readonly ended: Promise<never>;
  private end: (reason: string) => void = () => undefined;

  constructor(opts: WebjsDriverOptions) {
    this.opts = opts;
    this.clock = opts.clock ?? systemClock;
    this.log = (opts.logger ?? silentLogger()).child({ driver: 'webjs', instanceId: opts.instanceId });
    this.paths = sessionPaths(opts.dataDir, opts.instanceId, opts.auth?.kind);
    this.events = new DriverEmitter(this.log);
    this.ended = new Promise<never>((_resolve, reject) => {
      this.end = (reason) => reject(new DriverError(reason, 'SESSION_CLOSED', true));
    });
    this.ended.catch(() => undefined);
    this.watch = new BrowserWatch({
      clock: this.clock,
      probeIntervalMs: opts.probeIntervalMs ?? DEFAULTS.probeIntervalMs,
      probeTimeoutMs: opts.probeTimeoutMs ?? DEFAULTS.probeTimeoutMs,
      maxProbeFailures: opts.maxProbeFailures ?? DEFAULTS.maxProbeFailures,
      onChange: (health) => this.events.emit('browser_health', health),
      onDeath: (reason, counted) => void this.die(reason, counted),
    });
    this.browser = new BrowserAttacher(this.clock, this.watch, () => this.client, () => this.phase);
    this.gate = new CallGate({
      state: () => ({ closed: this.phase === 'dead' || this.phase === 'destroyed', client: this.client, ready: this.ready }),
      callTimeoutMs: opts.callTimeoutMs,
      clock: this.clock,
      onOk: () => this.watch.recordOk(),
      onTimeout: () => this.callTimedOut(),
    });
  }

  get info(): ClientInfo | null {
    return this.ready ? this.account : null;
  }

  /** initialize() finished and the session has not ended. */
  get running(): boolean {
    return this.phase === 'running';
  }

  /** The library said `ready`: linked, no pairing code to ask for. */
  get linked(): boolean {
    return this.ready;
  }

  browserHealth(): BrowserHealth {
    return this.watch.snapshot();
  }

  on<E extends DriverEventName>(event: E, listener: DriverListener<E>): void {
    this.events.on(event, listener);
  }

  off<E extends DriverEventName>(event: E, listener: DriverListener<E>): void {
    this.events.off(event, listener);
  }

  // ---- lifecycle

  async initialize(): Promise<void> {
    if (this.phase !== 'idle') throw new DriverError(`session already ${this.phase}`, 'CALL_FAILED', true);
    if (!isValidClientId(this.opts.instanceId)) throw invalidInput('instance id is not usable as a session name');
    this.phase = 'starting';

    await clearStaleBrowser(this.paths.userDataDir, this.clock, this.log);
    this.checkStillStarting();

    const built = buildClient(this.opts, this.paths);
    if ('failure' in built) {
      await this.die(built.failure, true);
      throw new DriverError(built.failure, 'CALL_FAILED', true);
    }
    const client = built.client;
    this.client = client;
    wireLibraryEvents(client, this.sink);

    let start: Promise<void>;
    try {
      start = client.initialize();
    } catch (err) {
      start = Promise.reject(err);
    }
    this.started = start.then(
      () => undefined,
      () => undefined,
    );
    this.browser.attach();
    this.browser.startPolling();

    const startTimeoutMs = this.opts.startTimeoutMs ?? DEFAULTS.startTimeoutMs;
    try {
      await Promise.race([withTimeout(start, startTimeoutMs, this.clock, 'start'), this.ended]);
    } catch (err) {
      if (err instanceof DriverError) {
        // The session ended while starting: `fatal` (if it died) has been emitted with the reason.
        await this.shutdown();
        throw err;
      }
      const reason = err instanceof CallTimeout ? `start timed out after ${startTimeoutMs} ms` : `start failed: ${describeError(err)}`;
      await this.die(reason, true);
      throw new DriverError(reason, err instanceof CallTimeout ? 'TIMEOUT' : 'CALL_FAILED', true);
    } finally {
      this.browser.stopPolling();
    }
    this.checkStillStarting();
    this.phase = 'running';
    this.browser.attach();
    this.watch.recordOk();
  }

  /** `phase` may have moved on while initialize() waited (destroyed, or the browser died at the last moment). */
  private checkStillStarting(): void {
    if (this.phase !== 'starting') throw new DriverError(`session ${this.phase} while starting`, 'SESSION_CLOSED', true);
  }

  async destroy(): Promise<void> {
    if (this.phase === 'idle') {
      this.phase = 'destroyed';
      return;
    }
    if (this.phase !== 'destroyed') {
      this.phase = 'destroyed';
      this.ready = false;
      this.watch.stop();
      this.end('the session was destroyed');
    }
    await this.shutdown();
  }

  async logout(): Promise<void> {
    const client = this.client;
    const wasRunning = this.phase === 'running' && client !== null;
    this.phase = 'destroyed';
    this.ready = false;
    this.watch.stop();
    this.end('the session was logged out');
    if (wasRunning && client) {
      const timeoutMs = this.opts.callTimeoutMs;
      try {
        await withTimeout(client.logout(), timeoutMs, this.clock, 'logout');
      } catch (err) {
        // The local link goes anyway (below); the phone keeps listing the device until the network drops it.
        this.log.warn({ reason: describeError(err) }, 'remote logout failed; removing the local session only');
      }
    }
    await this.shutdown();
    await forgetLink(this.opts, this.paths);
  }

  async getState(): Promise<WAState | null> {
    if (this.client?.pupPage == null || this.phase === 'dead' || this.phase === 'destroyed') return null;
    try {
      return toWAState(await this.call('getState', (c) => c.getState(), { need: 'page' }));
    } catch {
      return null;
    }
  }

  async requestPairingCode(phoneNumber: string): Promise<string> {
    const number = checkPhone(phoneNumber);
    if (this.ready) throw invalidInput('a pairing code can only be requested while the session waits to be linked');
    // The library also emits the code as its `code` event (and renews it every 3 minutes until linked).
    const code: unknown = await this.call('requestPairingCode', (c) => c.requestPairingCode(number, true), { need: 'page' });
    if (typeof code !== 'string' || code === '') throw new DriverError('no pairing code received', 'CALL_FAILED', false);
    return code;
  }

  // ---- the call gate (gate.ts)

  call<T>(what: string, fn: (client: LibClient) => Promise<T>, options: CallOptions = {}): Promise<T> {
    return this.gate.call(what, fn, options);
  }

  /** A hung page shows as calls that never return: they count like failed probes. */
  private callTimedOut(): void {
    const streak = this.watch.recordFailure();
    const max = this.opts.maxProbeFailures ?? DEFAULTS.maxProbeFailures;
    if (streak >= max && this.phase === 'running') void this.die(`browser unresponsive: ${streak} calls or probes timed out`, false);
  }

  // ---- library events

  private readonly sink: EventSink = {
    emit: (event, ...args) => this.events.emit(event, ...args),
    onReady: () => {
      this.ready = true;
      this.libraryDisconnected = false;
      this.account = mapClientInfo(this.client?.info);
    },
    onDisconnected: (reason) => {
      this.ready = false;
      this.account = null;
      this.libraryDisconnected = true;
      this.log.info({ reason }, 'network session disconnected');
    },
    dropped: (event, why) => this.log.warn({ event, why }, 'dropped a library event'),
  };

  // ---- browser: death, cleanup

  /** The session is over without being asked to end: report it once, then make sure no process is left. */
  private die(reason: string, counted: boolean): Promise<void> {
    if (this.phase === 'dead' || this.phase === 'destroyed') return this.cleanup ?? Promise.resolve();
    const expected = this.libraryDisconnected;
    this.phase = 'dead';
    this.ready = false;
    if (expected) {
      this.log.info({ reason }, 'browser closed after the network session ended');
    } else {
      this.log.warn({ reason }, 'session died');
      // `fatal` first: it carries the reason; the health report that follows only says "not alive".
      this.events.emit('fatal', reason);
    }
    this.watch.markDead(counted && !expected);
    this.watch.stop();
    this.end(reason);
    return this.shutdown();
  }

  private shutdown(): Promise<void> {
    this.cleanup ??= this.closeAndKill();
    return this.cleanup;
  }

  private closeAndKill(): Promise<void> {
    this.browser.stopPolling();
    return shutdownBrowser({
      client: this.client,
      userDataDir: this.paths.userDataDir,
      leaderPid: this.watch.pid(),
      started: this.started,
      browserSeen: this.watch.isAttached(),
      closeTimeoutMs: this.opts.closeTimeoutMs ?? DEFAULTS.closeTimeoutMs,
      clock: this.clock,
      log: this.log,
    });
  }
}

/**
 * The driver's view of its Chromium: `{alive, failStreak, lastOkAt}` (SPEC.md Status object `browser`).
 *
 * Three signals, because each misses something:
 *   - puppeteer's Browser `disconnected` (the process died or the DevTools pipe broke),
 *   - the Page's `close` and `error` (the tab was closed or its renderer crashed while the browser lives on),
 *   - a cheap periodic probe, `page.evaluate('1')` with a short timeout, for a browser that is alive but
 *     hung (no event ever fires for that). Failed probes and timed-out calls raise `failStreak`; a success
 *     resets it. `maxProbeFailures` failures in a row count as death.
 * The watch only observes and reports; killing the processes is the driver's job (processes.ts).
 */
import type { Clock, TimerHandle } from '../../clock.js';
import type { BrowserHealth } from '../contract.js';
import type { LibBrowser, LibPage } from './library.js';
import { describeError, withTimeout } from './outcome.js';

export interface BrowserWatchOptions {
  clock: Clock;
  probeIntervalMs: number;
  probeTimeoutMs: number;
  maxProbeFailures: number;
  /** Health changed (every probe reports, so `lastOkAt` stays fresh). */
  onChange(health: BrowserHealth): void;
  /**
   * The browser is gone or hung for good. `counted` is false when failed probes already raised the streak
   * for this cause.
   */
  onDeath(reason: string, counted: boolean): void;
}

export class BrowserWatch {
  private health: BrowserHealth = { alive: false, failStreak: 0, lastOkAt: 0 };
  private browser: LibBrowser | null = null;
  private page: LibPage | null = null;
  private leaderPid: number | null = null;
  private timer: TimerHandle | null = null;
  private stopped = false;
  private dead = false;

  constructor(private readonly opts: BrowserWatchOptions) {}

  snapshot(): BrowserHealth {
    return { ...this.health };
  }

  /** The browser's main process, once known. */
  pid(): number | null {
    return this.leaderPid;
  }

  isAttached(): boolean {
    return this.browser !== null;
  }

  /** Start watching a launched browser and its WhatsApp page. Idempotent. */
  attach(browser: LibBrowser, page: LibPage | null): void {
    if (this.browser !== null || this.stopped) return;
    this.browser = browser;
    this.leaderPid = browser.process()?.pid ?? null;
    browser.on('disconnected', this.onDisconnected);
    if (page) {
      this.page = page;
      page.on('close', this.onPageClose);
      page.on('error', this.onPageError);
    }
    this.update({ alive: true });
    this.schedule();
  }

  /** A call or start step succeeded: the browser works. */
  recordOk(): void {
    if (this.stopped || this.dead) return;
    const changed = this.health.failStreak !== 0 || !this.health.alive;
    this.health = { alive: this.browser !== null, failStreak: 0, lastOkAt: this.opts.clock.now() };
    if (changed) this.opts.onChange(this.snapshot());
  }

  /** A probe failed or a call timed out. Returns the new streak. */
  recordFailure(): number {
    if (this.stopped || this.dead) return this.health.failStreak;
    this.update({ failStreak: this.health.failStreak + 1 });
    return this.health.failStreak;
  }

  /**
   * The session is over (died, or failed to start). `counted` adds one to the streak when the cause was
   * not already counted by a failed probe.
   */
  markDead(counted: boolean): void {
    if (this.dead) return;
    this.dead = true;
    this.clearTimer();
    this.update({ alive: false, failStreak: this.health.failStreak + (counted ? 1 : 0) });
  }

  /** Stop watching: no more probes, no more events from the browser. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.clearTimer();
    this.browser?.off('disconnected', this.onDisconnected);
    this.page?.off('close', this.onPageClose);
    this.page?.off('error', this.onPageError);
    if (this.health.alive) this.health = { ...this.health, alive: false };
  }

  private update(patch: Partial<BrowserHealth>): void {
    this.health = { ...this.health, ...patch };
    this.opts.onChange(this.snapshot());
  }

  private die(reason: string, counted = true): void {
    if (this.stopped || this.dead) return;
    this.opts.onDeath(reason, counted);
  }

  private readonly onDisconnected = (): void => this.die('browser disconnected');
  private readonly onPageClose = (): void => this.die('browser page closed');
  private readonly onPageError = (err: unknown): void => this.die(`browser page crashed: ${describeError(err)}`);

  private clearTimer(): void {
    if (this.timer !== null) this.opts.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    if (this.stopped || this.dead || this.page === null) return;
    this.clearTimer();
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = null;
      void this.probe();
    }, this.opts.probeIntervalMs);
  }

  private async probe(): Promise<void> {
    const page = this.page;
    if (page === null || this.stopped || this.dead) return;
    let ok = false;
    try {
      ok = (await withTimeout(page.evaluate('1'), this.opts.probeTimeoutMs, this.opts.clock, 'browser probe')) === 1;
    } catch {
      ok = false;
    }
    if (this.stopped || this.dead) return;
    if (ok) {
      this.health = { alive: true, failStreak: 0, lastOkAt: this.opts.clock.now() };
      this.opts.onChange(this.snapshot());
    } else if (this.recordFailure() >= this.opts.maxProbeFailures) {
      this.die(`browser unresponsive: ${this.health.failStreak} probes failed`, false);
      return;
    }
    this.schedule();
  }
}

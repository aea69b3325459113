/**
 * Typing/recording keep-alive (SPEC.md "Interaction endpoints"). The network shows a chat state for about
 * 25 s after one call; a caller asking for longer (up to 300 s) gets the state re-fired every 20 s until the
 * duration ends, the session disconnects (a re-fire fails) or the caller cancels it. At the end of the
 * duration the state is cleared, so `expiresAt` is when the indicator really goes away, not up to 25 s later.
 *
 * One state per chat and instance: a new typing/recording request for the same chat replaces the running one.
 * Every timer runs on the injectable clock; the network is reached only through the `fire`/`clear` callbacks
 * the route hands in (which go through the instance actor, so an offline session fails them).
 */
import type { Clock, TimerHandle } from '../clock.js';

export type PresenceKind = 'typing' | 'recording';

/** SPEC.md "Limits": durationMs default 25000 (DESIGN.md), max 300000, re-fired every 20 s above 25000. */
export const PRESENCE_DEFAULT_MS = 25_000;
export const PRESENCE_MAX_MS = 300_000;
export const PRESENCE_REFIRE_MS = 20_000;

export interface PresenceTask {
  /** show the state once (sendStateTyping / sendStateRecording) */
  fire(): Promise<void>;
  /** clear the state (clearState) */
  clear(): Promise<void>;
}

export interface PresenceInfo {
  kind: PresenceKind;
  startedAt: number;
  expiresAt: number;
  /** times the state was shown, the first call included */
  fired: number;
}

interface Entry extends PresenceInfo {
  task: PresenceTask;
  timer: TimerHandle | null;
}

export interface PresenceOptions {
  refireMs?: number;
  /** durations up to this are covered by the network's own ~25 s and are not re-fired */
  keepAliveAboveMs?: number;
  onError?: (err: unknown, where: { instanceId: string; chatId: string; kind: PresenceKind; step: 'refire' | 'clear' }) => void;
}

/** Clamp a requested duration to SPEC.md's range: absent → default, above the cap → the cap. */
export function effectiveDuration(requested: number | undefined): number {
  if (requested === undefined) return PRESENCE_DEFAULT_MS;
  return Math.min(requested, PRESENCE_MAX_MS);
}

export class PresenceManager {
  private readonly entries = new Map<string, Entry>();
  private readonly refireMs: number;
  private readonly keepAliveAboveMs: number;

  constructor(private readonly clock: Clock, private readonly opts: PresenceOptions = {}) {
    this.refireMs = opts.refireMs ?? PRESENCE_REFIRE_MS;
    this.keepAliveAboveMs = opts.keepAliveAboveMs ?? PRESENCE_DEFAULT_MS;
  }

  /**
   * Show `kind` in the chat for `durationMs`. The first `fire` is awaited and its error propagates (the
   * route answers 503/500/504 from it) and then nothing is scheduled. Resolves once the state is shown;
   * re-fires and the final clear run on the clock afterwards.
   */
  async start(instanceId: string, chatId: string, kind: PresenceKind, durationMs: number, task: PresenceTask): Promise<PresenceInfo> {
    const key = keyOf(instanceId, chatId);
    this.drop(key);
    const now = this.clock.now();
    const entry: Entry = { kind, startedAt: now, expiresAt: now + durationMs, fired: 0, task, timer: null };
    this.entries.set(key, entry);
    try {
      await task.fire();
    } catch (err) {
      if (this.entries.get(key) === entry) this.entries.delete(key);
      throw err;
    }
    entry.fired++;
    // cancelled or replaced while the first call was in flight: the newer request owns the chat now
    if (this.entries.get(key) !== entry) return snapshot(entry);
    const keepAlive = durationMs > this.keepAliveAboveMs;
    this.schedule(key, entry, keepAlive ? Math.min(this.refireMs, durationMs) : durationMs, keepAlive, instanceId, chatId);
    return snapshot(entry);
  }

  /** Stop the keep-alive for a chat. Returns whether one was running. Clearing the state is the caller's call. */
  cancel(instanceId: string, chatId: string): boolean {
    return this.drop(keyOf(instanceId, chatId));
  }

  /** What is running for a chat, or null. */
  active(instanceId: string, chatId: string): PresenceInfo | null {
    const e = this.entries.get(keyOf(instanceId, chatId));
    return e ? snapshot(e) : null;
  }

  /** Stop every keep-alive of an instance (it disconnected, restarts or was deleted). No network calls. */
  stopInstance(instanceId: string): number {
    const prefix = `${instanceId}\u0000`;
    let n = 0;
    for (const key of [...this.entries.keys()]) if (key.startsWith(prefix) && this.drop(key)) n++;
    return n;
  }

  /** Stop everything (shutdown). No network calls. */
  stopAll(): void {
    for (const key of [...this.entries.keys()]) this.drop(key);
  }

  get size(): number {
    return this.entries.size;
  }

  private schedule(key: string, entry: Entry, delayMs: number, keepAlive: boolean, instanceId: string, chatId: string): void {
    entry.timer = this.clock.setTimeout(() => this.tick(key, entry, keepAlive, instanceId, chatId), delayMs);
  }

  private tick(key: string, entry: Entry, keepAlive: boolean, instanceId: string, chatId: string): void {
    if (this.entries.get(key) !== entry) return;
    entry.timer = null;
    const now = this.clock.now();
    if (now >= entry.expiresAt) {
      this.entries.delete(key);
      entry.task.clear().catch((err: unknown) => this.opts.onError?.(err, { instanceId, chatId, kind: entry.kind, step: 'clear' }));
      return;
    }
    if (!keepAlive) {
      this.schedule(key, entry, entry.expiresAt - now, keepAlive, instanceId, chatId);
      return;
    }
    // schedule first, so the cadence does not drift by the call's latency; a failure cancels what was scheduled
    this.schedule(key, entry, Math.min(this.refireMs, entry.expiresAt - now), keepAlive, instanceId, chatId);
    entry.task.fire().then(
      () => {
        entry.fired++;
      },
      (err: unknown) => {
        // the session is gone (503) or the call failed: the state cannot be kept, so stop re-firing
        if (this.entries.get(key) === entry) this.drop(key);
        this.opts.onError?.(err, { instanceId, chatId, kind: entry.kind, step: 'refire' });
      },
    );
  }

  private drop(key: string): boolean {
    const e = this.entries.get(key);
    if (!e) return false;
    if (e.timer !== null) this.clock.clearTimeout(e.timer);
    e.timer = null;
    this.entries.delete(key);
    return true;
  }
}

const keyOf = (instanceId: string, chatId: string) => `${instanceId}\u0000${chatId}`;

function snapshot(e: Entry): PresenceInfo {
  return { kind: e.kind, startedAt: e.startedAt, expiresAt: e.expiresAt, fired: e.fired };
}

/**
 * Is PostgreSQL reachable? The queue's mode follows from this (`pg` ↔ `memory-degraded`, SPEC.md "Queue
 * modes"). A cheap probe runs on the runtime clock; any code that sees a connection-class error calls
 * `suspect()` for an immediate probe. Only a failed probe enters the degraded mode, and only a successful one
 * leaves it, so one slow query cannot flap the mode.
 */
import type { Pool } from './pool.js';
import type { Clock, TimerHandle } from '../clock.js';
import type { Logger } from '../log.js';

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006']);

/** True for errors that say the database could not be reached (not for a bad query). */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|not queryable|ECONNREFUSED|ECONNRESET/i.test(err.message);
}

export type StoreListener = (degraded: boolean, since: number) => void;

export class StoreHealth {
  private degradedAt: number | null = null;
  private timer: TimerHandle | null = null;
  private probing: Promise<void> | null = null;
  private stopped = false;
  private readonly listeners = new Set<StoreListener>();

  constructor(
    private readonly deps: { pool: Pool; clock: Clock; log: Logger; intervalMs?: number; degradedIntervalMs?: number },
  ) {}

  get degraded(): boolean {
    return this.degradedAt !== null;
  }

  /** When the current degraded window began, or null. */
  get since(): number | null {
    return this.degradedAt;
  }

  onChange(f: StoreListener): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  start(): void {
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.deps.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  /** Something failed in a way that may mean the store is gone: probe now. */
  suspect(): Promise<void> {
    return this.probe();
  }

  probe(): Promise<void> {
    this.probing ??= this.run().finally(() => {
      this.probing = null;
    });
    return this.probing;
  }

  private async run(): Promise<void> {
    let ok = true;
    try {
      await this.deps.pool.query('SELECT 1');
    } catch (err) {
      ok = false;
      if (!this.degraded) this.deps.log.warn({ err }, 'PostgreSQL unreachable: queue switches to memory-degraded');
    }
    const now = this.deps.clock.now();
    if (!ok && this.degradedAt === null) {
      this.degradedAt = now;
      for (const f of this.listeners) f(true, now);
    } else if (ok && this.degradedAt !== null) {
      const since = this.degradedAt;
      this.degradedAt = null;
      this.deps.log.info({ degradedForMs: now - since }, 'PostgreSQL reachable again: queue back to pg');
      for (const f of this.listeners) f(false, since);
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    const every = this.degraded ? (this.deps.degradedIntervalMs ?? 2_000) : (this.deps.intervalMs ?? 5_000);
    this.timer = this.deps.clock.setTimeout(() => {
      this.timer = null;
      void this.probe().finally(() => this.schedule());
    }, every);
  }
}

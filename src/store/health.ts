/**
 * Is PostgreSQL reachable? The queue's mode follows from this (`pg` ↔ `memory-degraded`, SPEC.md "Queue
 * modes"). A cheap probe runs on the runtime clock; a connection of the pool breaking (reset, closed) and any
 * code that sees a connection-class error (`suspect()`) trigger an immediate probe. Only a failed probe
 * enters the degraded mode, and only a successful one leaves it, so one slow query cannot flap the mode.
 *
 * In a partition (packets dropped, nothing closed) no error ever arrives, and an unanswered probe is a failed
 * one: unanswered within the store's query deadline (`probeAnswerMs`, the wait every request has), where nothing
 * else the pool asked was answered either after its first `probeTimeoutMs`. The deadlines are in real time, like
 * pg's own: they measure a socket, and a simulated clock jumping ahead must not fail a probe whose answer is on
 * its way. When the probe runs is the runtime clock's business.
 */
import { CommitOutcomeUnknown, isStoreError, lastAnswerAt, probePool, STORE_DEADLINES, type Pool } from './pool.js';
import type { Clock, TimerHandle } from '../clock.js';
import { faultReason } from './fault-reason.js';
import type { Logger } from '../log.js';

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006']);

/** A connection failure reported by another actor (as data, then rethrown where the answer is written). */
export class StoreUnreachable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreUnreachable';
  }
}

/** PostgreSQL cancelled a statement (its statement_timeout), reported by another actor (as data, then rethrown where the answer is written). */
export class StoreTimedOut extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreTimedOut';
  }
}

/** PostgreSQL could not do a statement for a reason of its own (`isStoreFault`), reported by another actor. */
export class StoreFault extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreFault';
  }
}

/**
 * What a store fault's SQLSTATE says, for an answer (never PostgreSQL's own message: it names the server's
 * files): insufficient resources (class 53: a full disk, no memory), a system error (class 58: an I/O error, a
 * file of the database gone), damaged data (XX001, XX002).
 */
export function storeFaultOf(err: unknown): string | null {
  if (err instanceof StoreFault) return err.message;
  if (!isStoreError(err)) return null;
  const { code, severity } = err as { code?: unknown; severity?: unknown };
  return faultReason(code, severity);
}

/**
 * PostgreSQL answered, and failed the statement for a reason of its own, not of the statement (`storeFaultOf`):
 * nothing was written (the statement, and its transaction, failed); the same one may succeed once an operator
 * has fixed the server. Found from the outside: the embedded database's files removed under a running gateway
 * made every v2 send a 500 INTERNAL_ERROR (a full disk on a server alike).
 */
export const isStoreFault = (err: unknown): boolean => storeFaultOf(err) !== null;

/**
 * PostgreSQL's `query_canceled` (57014) raised by the store: its statement_timeout (STORE_DEADLINES.statementMs)
 * ended the statement, which wrote nothing; or such a failure reported by another actor.
 */
export function isStatementTimeout(err: unknown): boolean {
  return err instanceof StoreTimedOut || (isStoreError(err) && (err as { code?: unknown }).code === '57014');
}

/**
 * The store's pool found no free connection within its deadline (pg-pool's "timeout exceeded when trying to
 * connect", STORE_DEADLINES.connectMs): every connection was in use. PostgreSQL may be unreachable (each stuck in a
 * statement nothing answers) or busy (each waiting on a lock held elsewhere); the health probe, on a connection of
 * its own, tells which. Still a connection error for what is done with it (isConnectionError); answered by what the
 * probe found (src/http/translate.ts).
 */
export function isPoolBusy(err: unknown): boolean {
  return isStoreError(err) && err.message === 'timeout exceeded when trying to connect';
}

/**
 * True for errors that say the database could not be reached or used (not for a bad query). Only an error the
 * store's pool or client raised is judged (src/store/pool.ts marks them): the same code or text from anywhere else
 * (another peer's socket, a validation message echoing a caller's field) says nothing of PostgreSQL.
 */
export function isConnectionError(err: unknown): boolean {
  if (err instanceof StoreUnreachable) return true;
  // the connection broke during COMMIT: something may have been written, so not a "nothing happened" fault
  if (err instanceof CommitOutcomeUnknown) return false;
  if (!isStoreError(err)) return false;
  const { code, severity } = err as { code?: unknown; severity?: unknown };
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
  // The server ends the session with every FATAL error, whatever its code: a database that does not accept
  // connections now (55000), too many connections (53300), a dropped database (3D000), a failed
  // authentication (28P01). No statement ran; the store cannot be used until that changes.
  if (severity === 'FATAL' || severity === 'PANIC') return true;
  // any other error the server sent is judged by its code and severity alone: its message may quote a value
  // (`invalid input syntax for type uuid: "…"`), whatever a caller put there
  if (typeof severity === 'string') return false;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|not queryable|Query read timeout|ECONNREFUSED|ECONNRESET/i.test(err.message);
}

/**
 * The store could not take a write, and nothing in the write was wrong (PostgreSQL unreachable, a statement it
 * cancelled at its deadline, a COMMIT of unknown outcome, a fault of its own such as a full disk): the same write may be tried again later, and writing
 * its parts one by one would meet the same store.
 */
export function storeCouldNotTake(err: unknown): boolean {
  return isConnectionError(err) || isStatementTimeout(err) || err instanceof CommitOutcomeUnknown || isStoreFault(err);
}

/** How long the probe waits for `SELECT 1` before it looks at the pool's other answers (run). */
export const PROBE_TIMEOUT_MS = 2_000;

const PROBE_TIMED_OUT = Symbol('probe timed out');

/** `p`, or PROBE_TIMED_OUT after `ms` of real time. */
function withinRealTime<T>(ms: number, p: Promise<T>): Promise<T | typeof PROBE_TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<typeof PROBE_TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(PROBE_TIMED_OUT), ms);
    timer.unref();
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

/** pg's own deadline of a query (query_timeout) passed: the question went unanswered, nothing broke under it. */
function isQueryReadTimeout(err: unknown): boolean {
  return err instanceof Error && err.message === 'Query read timeout';
}

export type StoreListener = (degraded: boolean, since: number) => void;

export class StoreHealth {
  private degradedAt: number | null = null;
  private timer: TimerHandle | null = null;
  private probing: Promise<void> | null = null;
  private stopped = false;
  private readonly listeners = new Set<StoreListener>();

  constructor(
    private readonly deps: {
      pool: Pool;
      clock: Clock;
      log: Logger;
      intervalMs?: number;
      degradedIntervalMs?: number;
      /** how long a probe waits before it looks at the pool's other answers (PROBE_TIMEOUT_MS) */
      probeTimeoutMs?: number;
      /** how long a probe whose wait nothing answered waits for its own answer in all (STORE_DEADLINES.queryMs) */
      probeAnswerMs?: number;
      /** what a question asked again on a new connection has beside that, to connect (STORE_DEADLINES.connectMs) */
      probeConnectMs?: number;
    },
  ) {}

  /** A connection of the pool broke, idle or checked out (see createPool). */
  private readonly onPoolFault = () => {
    if (!this.stopped) void this.suspect();
  };

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
    this.deps.pool.on('error', this.onPoolFault);
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    this.deps.pool.removeListener('error', this.onPoolFault);
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
      const ms = this.deps.probeTimeoutMs ?? PROBE_TIMEOUT_MS;
      const answerMs = Math.max(ms, this.deps.probeAnswerMs ?? STORE_DEADLINES.queryMs);
      // The probe asks on a connection of its own (probePool), so a pool whose connections all wait (on a lock held
      // elsewhere) does not hold it up. The store is unreachable when, for the store's query deadline (answerMs, the
      // wait every request has), neither the probe's own question nor anything else the pool asked was answered:
      // - each wait of `ms` in which the pool's other queries were answered is busy, not unreachable (found from the
      //   outside: a takeover of 200 full queues switched every queue to memory-degraded for a second), and the same
      //   question waits on: a second one would queue behind it on the probe's one connection (found from the
      //   outside: under load, questions asked again piled up behind a slow store and latched the mode). An answer
      //   early in a wait may be the last before a partition: only a wait in which nothing was answered counts
      //   towards the deadline (found in CI: such an answer kept the queue on pg for a whole interval more);
      // - a store slower than `ms` but within the deadline is not unreachable either (found from the outside: one
      //   answering in 2.4–3 s switched an idle node to memory-degraded, and kept it there).
      // A connection broken under the probe (a reset while PostgreSQL is there) is asked on once more, on a new one
      // (found from the outside: a reset of every connection flipped the mode for a tenth of a second).
      const ask = () => {
        const q = probePool(this.deps.pool).query('SELECT 1');
        q.catch(() => undefined);
        return q;
      };
      let retried = false;
      let asked = performance.now();
      let answer = ask();
      let since = asked;
      // the question's own deadline; a question asked again on a new connection has the connection's too, as a
      // request's (found by the probe of the fix: a reset under a store answering in 2.5 s switched the mode, the
      // new connection's round trip charged to the query's 5 s)
      let budget = answerMs;
      for (;;) {
        let got: unknown;
        try {
          got = await withinRealTime(Math.max(1, Math.min(ms, budget - (performance.now() - asked))), answer);
        } catch (err) {
          if (retried || this.stopped || !isConnectionError(err) || isQueryReadTimeout(err)) throw err;
          retried = true;
          asked = since = performance.now();
          budget = answerMs + (this.deps.probeConnectMs ?? STORE_DEADLINES.connectMs);
          answer = ask();
          continue;
        }
        if (got !== PROBE_TIMED_OUT || this.stopped) break;
        const busy = lastAnswerAt(this.deps.pool) > since;
        since = performance.now();
        if (!busy && since - asked >= budget) throw new Error(`PostgreSQL did not answer the probe within ${Math.round(budget)} ms`);
      }
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

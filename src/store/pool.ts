/** The `pg` pool, and the one transaction helper every multi-statement change goes through. */
import pg from 'pg';
import { faultReason } from './fault-reason.js';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

// Return int8 (bigint) columns and counts as JS numbers: our bigints are sequence numbers and byte sizes
// far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));

export type PoolConfig = pg.PoolConfig;

/**
 * What the store's pools and clients raised (their `connect` and `query`), marked where it is raised: only such an
 * error can say that PostgreSQL is unreachable (src/store/health.ts isConnectionError). An error of any other
 * origin that reads like one says nothing of the store: a socket error of another peer (a media host, a webhook
 * receiver, another node), or a validation message that echoes a caller's text (found from the outside: a body
 * field named `ECONNRESET` was answered 503 QUEUE_STORE_UNAVAILABLE, with a store probe).
 */
const RAISED_BY_STORE = new WeakSet<Error>();

/** Mark `err` as raised by the store (what the pools below do with every failure of theirs); returns it. */
export function raisedByStore<E>(err: E): E {
  if (err instanceof Error) RAISED_BY_STORE.add(err);
  return err;
}

/** Whether the store's pool or client raised `err`. */
export function isStoreError(err: unknown): err is Error {
  return err instanceof Error && RAISED_BY_STORE.has(err);
}

/** Of each pool of the store: when one of its queries (its own, or a client's it handed out) last got an answer. */
const ANSWERED = new WeakMap<object, number>();
/** A client's pool, for ANSWERED (set when the pool opens the client: src/store/pool.ts watch). */
const POOL_OF = new WeakMap<object, object>();

/**
 * When PostgreSQL last answered a query of `pool` or of one of its clients (performance.now(); -Infinity: never):
 * the store health's probe, stuck behind the pool's own work, tells a busy store from an unreachable one by it.
 */
export function lastAnswerAt(pool: object): number {
  return ANSWERED.get(pool) ?? -Infinity;
}

function answered(by: object): void {
  ANSWERED.set(POOL_OF.get(by) ?? by, performance.now());
}

/** The store faults of a pool's statements so far (`storeFaults`). */
export interface StoreFaults {
  /** statements PostgreSQL failed for a reason of its own (src/store/fault-reason.ts) */
  total: number;
  /** when the last one failed (performance.now()), null before the first */
  lastAt: number | null;
}

/** Of each pool of the store: its statements that failed for PostgreSQL's own reason (a full disk, its files gone). */
const FAULTS = new WeakMap<object, StoreFaults>();

/**
 * The statements of `pool` (or of its clients) that PostgreSQL failed for a reason of its own: the operator's
 * sign of a full disk or damaged files, which a probe's `SELECT 1` does not see (found from the outside: /health
 * and mgw_store_up stayed green while every write failed). src/metrics/registry.ts exposes them.
 */
export function storeFaults(pool: object): StoreFaults {
  return FAULTS.get(pool) ?? { total: 0, lastAt: null };
}

function tallyFault(by: object, err: unknown): void {
  if (!(err instanceof Error) || faultReason((err as { code?: unknown }).code, (err as { severity?: unknown }).severity) === null) return;
  const pool = POOL_OF.get(by) ?? by;
  const faults = FAULTS.get(pool) ?? { total: 0, lastAt: null };
  faults.total += 1;
  faults.lastAt = performance.now();
  FAULTS.set(pool, faults);
}

type PgMethod = (this: object, ...args: unknown[]) => unknown;
type PgCallback = (err: unknown, ...results: unknown[]) => void;

/**
 * pg's `connect` or `query` (of a pool or a client) whose failure is marked before anyone sees it. Called with a
 * callback (as pg-pool calls its clients, and its own `connect`), that callback gets the marked error; called
 * without one (as this code calls them), the same callback settles the promise it answers, as pg's would.
 */
function marking(method: PgMethod, recordsAnswers: boolean): PgMethod {
  return function markedCall(this: object, ...args: unknown[]): unknown {
    const last = args[args.length - 1];
    if (typeof last === 'function') {
      const callback = last as PgCallback;
      args[args.length - 1] = (err: unknown, ...results: unknown[]) => {
        if (recordsAnswers) {
          if (!err) answered(this);
          else tallyFault(this, err);
        }
        callback(raisedByStore(err), ...results);
      };
      return method.apply(this, args);
    }
    // a Submittable (a cursor, a stream) reports on itself; none is used here
    if (typeof (args[0] as { submit?: unknown } | null | undefined)?.submit === 'function') return method.apply(this, args);
    return new Promise((resolve, reject) => {
      method.apply(this, [...args, (err: unknown, result: unknown) => {
        if (err) {
          if (recordsAnswers) tallyFault(this, err);
          return reject(raisedByStore(err));
        }
        if (recordsAnswers) answered(this);
        resolve(result);
      }]);
    });
  };
}

/**
 * `names` of `from` on `prototype`, marking what they raise; with `recordsAnswers` (the client's `query`, through
 * which every query of a pool goes) also when they were answered (lastAnswerAt).
 */
function markFailures(prototype: object, from: object, names: readonly string[], recordsAnswers: boolean): void {
  for (const name of names) {
    const method = Reflect.get(from, name) as PgMethod;
    Object.defineProperty(prototype, name, { value: marking(method, recordsAnswers), writable: true, configurable: true });
  }
}

/** The store's client (pg's `Client` option of its pools): what its queries raise is marked, their answers recorded. */
class StoreClient extends pg.Client {}
markFailures(StoreClient.prototype, pg.Client.prototype, ['query'], true);

/** A pool whose `connect` and `query` mark what they raise (pg-pool's own errors: a connect timeout). */
class MarkingPool extends pg.Pool {}
markFailures(MarkingPool.prototype, pg.Pool.prototype, ['connect', 'query'], false);

/**
 * Every store call ends well inside the shortest caller wait (the v1 synchronous wait, 20 s by default), also
 * when PostgreSQL is partitioned away (packets dropped, nothing closed), so that callers get an answer and the
 * degraded mode starts promptly:
 * - `connectMs`: a new connection, or a free slot of the pool;
 * - `statementMs`: the server cancels a statement that runs longer (the connection stays usable);
 * - `queryMs`: the client gives up on a query whose answer does not come (the server is unreachable); the
 *   connection is then discarded. Longer than `statementMs`, so a slow server answers with its own error first.
 * Code that legitimately runs longer (migrations) lifts them for its own session (see `unbounded`).
 */
export const STORE_DEADLINES = { connectMs: 3_000, statementMs: 4_000, queryMs: 5_000 } as const;

/** Per-query settings of a statement that may run as long as it needs (a migration, its lock wait). */
export const unbounded = { query_timeout: 24 * 3_600_000 } as const;

/**
 * Connections of their own for the dispatch lane's claims (`claimPool`), beside the pool's `max`: a due slot's
 * claim is one short statement, and it must not queue for a connection behind acceptance group commits and
 * outcome writes that hold all of the pool's (measured under acceptance load: 30–40 callers waiting, a claim
 * 150–400 ms instead of 5–15). The lanes of all instances share them, one claim at a time each; four, because
 * the slots of many instances come due together (bench/dispatch.ts: 50 instances' first jobs at once; the
 * slowest claim of that burst took 370–470 ms with two connections, 210–335 ms with four, two runs each).
 */
export const CLAIM_CONNECTIONS = 4;

/**
 * The pool, with the claims' connections: opened when the first queue that claims starts (`warmClaimPool`),
 * kept open, closed by the pool's `end` (a pool that never dispatches opens none). Opening one takes a
 * round trip and authentication: measured on a loaded machine, a claim that had to open its connection took
 * 80–400 ms where one on an open connection takes 5–15. A pool of at most two connections (the embedded PostgreSQL takes one) has none: claims
 * use the pool.
 */
class StorePool extends MarkingPool {
  private claims: pg.Pool | null = null;
  private probes: pg.Pool | null = null;
  private warming: Promise<void> | null = null;

  constructor(private readonly storeSettings: pg.PoolConfig) {
    super(storeSettings);
  }

  /** The claims' pool (this pool itself when it has none, or once it was ended). */
  claimPool(): pg.Pool {
    // (`ended`: pg-pool's, set by end())
    if (this.ended || (this.storeSettings.max ?? 10) <= 2) return this;
    // kept open once opened (no idle timeout): a claim must not pay for a new connection
    this.claims ??= watch(new MarkingPool({ ...this.storeSettings, max: CLAIM_CONNECTIONS, idleTimeoutMillis: 0 }), this);
    return this.claims;
  }

  /** The health probe's pool (this pool itself when it has none, or once it was ended): `probePool`. */
  probePool(): pg.Pool {
    if (this.ended || (this.storeSettings.max ?? 10) <= 2) return this;
    this.probes ??= watch(new MarkingPool({ ...this.storeSettings, max: 1, idleTimeoutMillis: 0 }), this);
    return this.probes;
  }

  /** Open the claim connections ahead of the first claim, unless they are open or opening (never throws). */
  warmClaims(): Promise<void> {
    const claims = this.claimPool();
    if (claims === this || claims.totalCount > 0) return Promise.resolve();
    // all at once (each connect() given a connection of its own), then back to the claims pool, idle
    this.warming ??= Promise.allSettled(Array.from({ length: CLAIM_CONNECTIONS }, () => claims.connect()))
      .then((opened) => {
        for (const o of opened) if (o.status === 'fulfilled') o.value.release();
      })
      .finally(() => (this.warming = null));
    return this.warming;
  }

  override end(): Promise<void>;
  override end(callback: () => void): void;
  override end(callback?: () => void): Promise<void> | void {
    const { claims, probes } = this;
    this.claims = null;
    this.probes = null;
    const both = Promise.all([super.end(), claims?.end(), probes?.end()]).then(() => undefined);
    if (!callback) return both;
    void both.then(callback, callback);
  }
}

/** The pool the dispatch lane sends its claims to: the claims' own connections of a pool made by `createPool`. */
export function claimPool(pool: Pool): Pool {
  return pool instanceof StorePool ? pool.claimPool() : pool;
}

/**
 * The pool the store's health probe asks (src/store/health.ts): a connection of its own, kept open, beside the
 * pool's `max`, so that the probe asks PostgreSQL and not the pool. Behind the pool's connections it waited for
 * one like any query: when another session held a lock on `jobs`, every connection waited on that lock, the probe
 * missed its deadline, and the node switched every queue to memory-degraded (v1 sends went out past the queue)
 * while PostgreSQL answered (found from the outside). A pool of at most two connections (the embedded PostgreSQL)
 * has none: the probe uses the pool.
 */
export function probePool(pool: Pool): Pool {
  return pool instanceof StorePool ? pool.probePool() : pool;
}

/** Open the claim connections of `pool` now, so that a due claim finds one open (never throws). */
export function warmClaimPool(pool: Pool): Promise<void> {
  return pool instanceof StorePool ? pool.warmClaims() : Promise.resolve();
}

export function createPool(config: PoolConfig): Pool {
  const pool = new StorePool({
    max: 10,
    idleTimeoutMillis: 10_000,
    connectionTimeoutMillis: STORE_DEADLINES.connectMs,
    query_timeout: STORE_DEADLINES.queryMs,
    statement_timeout: STORE_DEADLINES.statementMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...config,
    Client: StoreClient,
  });
  return watch(pool, pool);
}

/**
 * An idle client losing its server must not crash the process; the next query reports the fault (and the
 * store health, listening on `reportTo`, probes at once). Nor may a client that is checked out (a transaction,
 * a migration) when its connection breaks: pg emits 'error' on the client, and an EventEmitter without a
 * listener throws it. The query in progress, or the next one, rejects with the fault, so the holder still
 * learns of it. `reportTo`'s 'error' event then means "a connection of this pool (or of its claims' pool)
 * broke", checked out or idle.
 */
function watch(pool: pg.Pool, reportTo: pg.Pool): pg.Pool {
  pool.on('error', (err, client) => {
    if (pool !== reportTo) reportTo.emit('error', err, client);
  });
  pool.on('connect', (client) => {
    // its answers are the store's answers to `reportTo` (lastAnswerAt)
    POOL_OF.set(client, reportTo);
    // (an idle client's error reaches the pool's 'error' twice, through pg-pool too: harmless)
    client.on('error', (err) => void pool.emit('error', err, client));
  });
  return pool;
}

/**
 * A client of the pool for a run of statements on one connection, with an 'error' listener for as long as it
 * is held. `release(err)` with the fault that broke the connection discards it instead of pooling it.
 */
export async function checkout(pool: Pool): Promise<{ client: PoolClient; release: (err?: Error) => void }> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // a method, not an arrow bound to a name: tsx (keepNames) names such an arrow each time it is made
  const listener = {
    onError(err: Error) {
      broken ??= err;
    },
  };
  client.on('error', listener.onError);
  let released = false;
  return {
    client,
    release(err?: Error) {
      if (released) return;
      released = true;
      client.removeListener('error', listener.onError);
      client.release(err ?? broken);
    },
  };
}

export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const { client, release } = await checkout(pool);
  let fault: Error | undefined;
  let committing = false;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    committing = true;
    await client.query('COMMIT');
    return result;
  } catch (err) {
    if (committing && brokenConnection(err)) {
      fault = err;
      throw new CommitOutcomeUnknown(err);
    }
    // A connection that broke or stopped answering cannot roll back (the server does when the connection
    // closes): discard it rather than wait for a ROLLBACK that will not come.
    if (brokenConnection(err)) fault = err;
    else await client.query('ROLLBACK').catch((e: unknown) => void (fault = e instanceof Error ? e : new Error(String(e))));
    throw err;
  } finally {
    release(fault);
  }
}

/**
 * One statement as its own transaction (autocommit): all of it or nothing. A connection that breaks while it
 * is on its way leaves its outcome unknown (it may have committed): CommitOutcomeUnknown, as a broken COMMIT.
 * With a `name`, the statement is prepared under it on each connection that runs it (pg keeps the names a
 * connection has prepared): only for a text that is always the same under that name.
 */
export async function oneStatement<R extends pg.QueryResultRow>(pool: Pool, text: string, values: unknown[], name?: string): Promise<pg.QueryResult<R>> {
  const { client, release } = await checkout(pool);
  let fault: Error | undefined;
  try {
    return await (name ? client.query<R>({ name, text, values }) : client.query<R>(text, values));
  } catch (err) {
    if (brokenConnection(err)) {
      fault = err;
      throw new CommitOutcomeUnknown(err);
    }
    throw err;
  } finally {
    release(fault);
  }
}

/**
 * The connection broke while COMMIT was on its way: the change may or may not have been committed. Not a
 * "nothing happened" connection error: whoever answers a caller must not say that nothing was accepted.
 */
export class CommitOutcomeUnknown extends Error {
  constructor(
    readonly fault: Error,
    /**
     * What the caller is told to do to find out, where a send's answer (retry only with the same idempotency key)
     * does not fit: an operator's creation, which takes no key (src/instances.ts)
     */
    readonly toFindOut?: { message: string; data: Record<string, unknown> },
  ) {
    super(`the store connection broke during COMMIT; the change may have been committed (${fault.message})`);
    this.name = 'CommitOutcomeUnknown';
  }
}

/**
 * The error says the connection itself is unusable: closed, reset, no answer within `queryMs`, or the server
 * ending the session (a FATAL error: an administrator's or a shutdown's termination, 57P01/57P02). What was
 * on its way then may or may not have been done.
 */
function brokenConnection(err: unknown): err is Error {
  if (!(err instanceof Error)) return false;
  if ((err as { severity?: unknown }).severity === 'FATAL') return true;
  return /Connection terminated|Query read timeout|not queryable|ECONNRESET|EPIPE/i.test(err.message);
}

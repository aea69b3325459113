/**
 * Hearing that API keys stopped working on another node. A rotation, a revocation or an instance's delete, made
 * by any node, notifies the channel KEYS_CHANGED_CHANNEL when its transaction commits (sql/0013); this holds a
 * connection of its own that LISTENs on it and calls `changed` for each notice, with the instances it names, so
 * that the node drops those instances' cached keys and the instance records at once, not when their cache time runs out (30 s for a key: a rotated key
 * still sent messages through the other nodes meanwhile).
 *
 * A notice sent while the connection is down is lost: `watching` tells the cache when it breaks (the key cache
 * then keeps a verified key for a second only: src/http/auth.ts KeyResolver.setWatched), and `changed` is
 * called once it listens anew. It connects again after 1 s, doubling up to 30 s, on the injectable clock.
 *
 * A connection that a partition left half-open tells nothing: no error, no end, no notice. Found from the
 * outside: after a healed partition the watch said it was listening while it heard nothing, and a graceful stop
 * waited 30 s on its end (which waits for the server's) until the hard stop, exit 1. So the connection is asked
 * a `SELECT 1` every CHECK_EVERY_MS, and one not answered within CHECK_WITHIN_MS is dropped and opened anew;
 * and a close waits CLOSE_WITHIN_MS for the server, then drops the socket. Both are real time (a round trip's,
 * as pg's own deadlines), not the injectable clock's.
 */
import pg from 'pg';
import { raceClock, systemClock, type Clock, type TimerHandle } from '../clock.js';
import type { Logger } from '../log.js';

export const KEYS_CHANGED_CHANNEL = 'mgw_keys_changed';
/** the listening connection's application_name (pg_stat_activity) */
export const KEY_CHANGES_APPLICATION = 'mgw-key-changes';
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 30_000;
/** how often the listening connection is asked whether it still answers */
export const CHECK_EVERY_MS = 10_000;
/** how long that answer may take before the connection is taken for lost */
export const CHECK_WITHIN_MS = 5_000;
/** how long a close waits for the server's end before it drops the socket */
export const CLOSE_WITHIN_MS = 2_000;

/** End `c`, or drop its socket when the server does not answer the end in time (a half-open connection). */
export async function closeWithin(c: pg.Client, ms = CLOSE_WITHIN_MS): Promise<void> {
  await raceClock(systemClock, ms, c.end().catch(() => undefined), () => c.connection.stream.destroy());
}

export interface KeyChangeWatchOptions {
  connection: pg.ClientConfig;
  clock: Clock;
  log: Logger;
  /**
   * keys may have stopped working: those of `instanceIds` (the notice names them, sql/0023), or of any instance
   * (null: a notice without names, or the connection listens anew after notices it may have missed)
   */
  changed: (instanceIds: readonly string[] | null) => void;
  /** whether a notice would be heard now */
  watching: (on: boolean) => void;
  /** tests: CHECK_EVERY_MS, CHECK_WITHIN_MS, CLOSE_WITHIN_MS */
  checks?: { everyMs: number; withinMs: number; closeWithinMs: number };
}

export interface KeyChangeWatch {
  stop(): Promise<void>;
}

/** The instances a notice names (sql/0023: their ids, comma-separated); null for a notice that names none. */
export function instancesOf(payload: string | undefined): string[] | null {
  const ids = (payload ?? '').split(',').filter((id) => id.length > 0);
  return ids.length > 0 ? ids : null;
}

export function watchKeyChanges(opts: KeyChangeWatchOptions): KeyChangeWatch {
  const { clock, log } = opts;
  let client: pg.Client | null = null;
  let retry: TimerHandle | null = null;
  let retryMs = RETRY_FIRST_MS;
  let stopped = false;

  let check: TimerHandle | null = null;
  const real = systemClock;
  const checks = opts.checks ?? { everyMs: CHECK_EVERY_MS, withinMs: CHECK_WITHIN_MS, closeWithinMs: CLOSE_WITHIN_MS };
  const stopChecks = () => {
    if (check !== null) real.clearTimeout(check);
    check = null;
  };
  /** ask the listening connection `SELECT 1` every CHECK_EVERY_MS; unanswered within CHECK_WITHIN_MS, it is lost */
  const checkLater = (c: pg.Client) => {
    check = real.setTimeout(() => {
      check = null;
      if (client !== c) return;
      raceClock(real, checks.withinMs, c.query('SELECT 1'), () => {
        throw new Error(`the listening connection did not answer within ${checks.withinMs} ms`);
      }).then(
        () => {
          if (client === c && !stopped) checkLater(c);
        },
        (err: unknown) => lost(c, err),
      );
    }, checks.everyMs);
  };

  const lost = (c: pg.Client, err?: unknown) => {
    if (client !== c) return;
    client = null;
    stopChecks();
    void closeWithin(c, checks.closeWithinMs);
    // not `changed`: the connection breaks with the store too often, and the cached keys are what keeps every
    // route working while the store is away (src/http/auth.ts); unheard, each is kept a second only
    opts.watching(false);
    if (stopped) return;
    log.warn({ err, retryMs }, 'not hearing of other nodes\' key changes; listening again soon');
    retry = clock.setTimeout(() => {
      retry = null;
      void connect();
    }, retryMs);
    retryMs = Math.min(RETRY_MAX_MS, retryMs * 2);
  };

  const connect = async () => {
    const c = new pg.Client({ ...opts.connection, application_name: KEY_CHANGES_APPLICATION, keepAlive: true });
    client = c;
    c.on('notification', (n) => {
      if (n.channel === KEYS_CHANGED_CHANNEL) opts.changed(instancesOf(n.payload));
    });
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c));
    try {
      await c.connect();
      await c.query(`LISTEN ${KEYS_CHANGED_CHANNEL}`);
    } catch (err) {
      lost(c, err);
      return;
    }
    if (client !== c) return;
    if (stopped) {
      await closeWithin(c, checks.closeWithinMs);
      return;
    }
    retryMs = RETRY_FIRST_MS;
    checkLater(c);
    opts.watching(true);
    // what changed while nobody listened, so any key may have
    opts.changed(null);
  };

  void connect();
  return {
    async stop() {
      stopped = true;
      if (retry !== null) clock.clearTimeout(retry);
      retry = null;
      const c = client;
      client = null;
      stopChecks();
      opts.watching(false);
      if (c) await closeWithin(c, checks.closeWithinMs);
    },
  };
}

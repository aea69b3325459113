/**
 * The sender's queries: read the head of an instance's pending outbox rows, record a batch of attempt
 * results in one statement, fail what can no longer be delivered.
 *
 * No row locks: the instance's sender is the only writer of its pending rows (one owner node per instance,
 * one sender per instance). The result UPDATE is still conditional on (state pending, attempts as read), so
 * a stray second sender cannot count an attempt twice or resurrect a finished row.
 */
import { dateOf } from '../clock.js';
import type { Queryable } from '../store/pool.js';
import { registerSecret } from '../log.js';

export interface PendingRow {
  id: number;
  eventId: string;
  event: string;
  body: string;
  attempts: number;
  maxAttempts: number;
  /** unix ms */
  nextAttemptAt: number;
}

/** The outcome of one attempt, as it will be persisted. */
export interface AttemptResult {
  outboxId: number;
  /** the row's state after this attempt */
  state: 'pending' | 'delivered' | 'failed';
  /** 1-based number of this attempt */
  attempt: number;
  /** when the attempt started / finished (clock ms) */
  at: number;
  finishedAt: number;
  status: number | null;
  error: string | null;
  durationMs: number;
  /** when pending: when the next attempt is due (clock ms) */
  nextAttemptAt: number | null;
}

/** The receiver as the sender needs it (secret included). */
export interface Receiver {
  url: string;
  secret: string;
  allowPrivate: boolean;
}

/**
 * The statement of fetchPending. The inner SELECT picks the batch's ids in outbox_pending's own order (instance,
 * id), so its plan reads a range of that index (index-only) and stops after `limit` entries; the rows themselves
 * are then read by id. Written as one filter-and-order over the table, PostgreSQL's custom plan (the first five
 * executions on each connection) could walk outbox_pkey from the oldest row and skip every finished row of every
 * instance to reach the pending ones (the newest), whenever the statistics made pending rows look common (an
 * ANALYZE during a backlog): 4.8 ms reading 1,148 pages on 62,000 rows here, growing with the outbox.
 */
export const FETCH_PENDING = `SELECT o.id, o.event_id, o.event, o.body, o.attempts, o.max_attempts, o.next_attempt_at,
            w.url, w.secret, w.allow_private
       FROM (SELECT id FROM outbox
              WHERE instance_id = $1 AND state = 'pending' AND id <> ALL ($3::bigint[])
              ORDER BY id LIMIT $2) p
       JOIN outbox o ON o.id = p.id
       LEFT JOIN webhooks w ON w.instance_id = o.instance_id AND w.enabled
      ORDER BY o.id`;

/**
 * The oldest pending rows of the instance, in delivery order (outbox id), together with its enabled
 * webhook (null when removed or disabled). One query: the configuration is read fresh with every batch (and the
 * sender reads a batch again when it changed, or a second after it read it: src/webhooks/deliver.ts `drain`).
 * `except`: rows the sender attempted whose results are still being written (they are still `pending` in the table).
 */
export async function fetchPending(q: Queryable, instanceId: string, limit: number, except: readonly number[] = []): Promise<{ rows: PendingRow[]; receiver: Receiver | null }> {
  const { rows } = await q.query<{
    id: number;
    event_id: string;
    event: string;
    body: string;
    attempts: number;
    max_attempts: number;
    next_attempt_at: Date;
    url: string | null;
    secret: string | null;
    allow_private: boolean | null;
  }>({
    name: 'fetch_pending_webhooks',
    text: FETCH_PENDING,
    values: [instanceId, limit, except],
  });
  const first = rows[0];
  const receiver =
    first && first.url !== null && first.secret !== null
      ? { url: first.url, secret: first.secret, allowPrivate: first.allow_private === true }
      : null;
  if (receiver) registerSecret(receiver.secret);
  return {
    receiver,
    rows: rows.map((r) => ({
      id: r.id,
      eventId: r.event_id,
      event: r.event,
      body: r.body,
      attempts: r.attempts,
      maxAttempts: r.max_attempts,
      nextAttemptAt: r.next_attempt_at.getTime(),
    })),
  };
}

/**
 * Persist a batch of attempt results: the outbox rows and their attempt log in one statement (unnest), so a
 * batch of deliveries costs one round trip. Returns how many rows were updated.
 */
export async function recordResults(q: Queryable, results: readonly AttemptResult[]): Promise<number> {
  if (results.length === 0) return 0;
  const { rowCount } = await q.query({
    name: 'record_webhook_results',
    text: `WITH r AS (
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::int[], $4::timestamptz[], $5::timestamptz[],
                            $6::int[], $7::text[], $8::int[], $9::timestamptz[])
         AS r(id, state, attempt, at, finished_at, status, error, duration_ms, next_at)
     ), u AS (
       UPDATE outbox o
          SET state = r.state, attempts = r.attempt, last_status = r.status, last_error = r.error,
              next_attempt_at = COALESCE(r.next_at, o.next_attempt_at),
              delivered_at = CASE WHEN r.state = 'delivered' THEN r.finished_at ELSE o.delivered_at END
         FROM r
        WHERE o.id = r.id AND o.attempts = r.attempt - 1
          -- an attempt made ends a row the operator's change failed meanwhile (settleForChange): it reached the
          -- receiver or finally did not, which the listing then says
          AND (o.state = 'pending' OR (r.state <> 'pending' AND o.state = 'failed' AND o.last_error = ANY ($10::text[])))
       RETURNING o.id
     )
     INSERT INTO webhook_attempts (outbox_id, attempt, at, status, error, duration_ms)
     SELECT r.id, r.attempt, r.at, r.status, r.error, r.duration_ms FROM r JOIN u ON u.id = r.id`,
    values: [
      results.map((r) => r.outboxId),
      results.map((r) => r.state),
      results.map((r) => r.attempt),
      results.map((r) => dateOf(r.at)),
      results.map((r) => dateOf(r.finishedAt)),
      results.map((r) => r.status),
      results.map((r) => r.error),
      results.map((r) => r.durationMs),
      results.map((r) => dateOf(r.nextAttemptAt)),
      [REMOVED, UNSUBSCRIBED],
    ],
  });
  return rowCount ?? 0;
}

/** Why a row the operator's change ended failed (failOrphaned, settleForChange). */
export const REMOVED = 'webhook removed or disabled';
export const UNSUBSCRIBED = 'not subscribed by the webhook any more';

/**
 * What an operator's change of an instance's webhook means for its rows still pending, at once, in the change's
 * request: removed or disabled (`events` null), every pending row fails; replaced, the rows of events it no longer
 * subscribes to fail, and the others are due now (a fixed URL is tried at once, not after the broken one's backoff).
 * Found from the outside: left to the sender, which sees a change at its next attempt, a DELETE followed by a PUT
 * while an attempt was in flight sent the backlog raised before the DELETE to the new receiver, and a PUT's new
 * event list did not apply to what was queued. The attempt in flight ends its row as it ends (recordResults).
 */
export async function settleForChange(q: Queryable, instanceId: string, now: number, events: readonly string[] | null): Promise<void> {
  if (events === null) {
    await failOrphaned(q, instanceId, now);
    return;
  }
  // one statement: the rows it no longer subscribes to failed, every other pending row due by now
  await q.query(
    `UPDATE outbox o
        SET state = CASE WHEN p.subscribed THEN o.state ELSE 'failed' END,
            last_error = CASE WHEN p.subscribed THEN o.last_error ELSE $4 END,
            next_attempt_at = LEAST(o.next_attempt_at, $3)
       FROM (SELECT id, ('*' = ANY ($2::text[]) OR event = ANY ($2::text[])) AS subscribed
               FROM outbox WHERE instance_id = $1 AND state = 'pending') p
      WHERE o.id = p.id AND (NOT p.subscribed OR o.next_attempt_at > $3)`,
    [instanceId, [...events], new Date(now), UNSUBSCRIBED],
  );
}

/**
 * Fail every pending row of an instance that has no enabled webhook any more (removed or disabled by the
 * operator): nothing can deliver them. The NOT EXISTS makes this exact even if a webhook is being re-added.
 */
export async function failOrphaned(q: Queryable, instanceId: string, now: number): Promise<number> {
  const { rowCount } = await q.query(
    `UPDATE outbox SET state = 'failed', last_error = $3, next_attempt_at = $2
      WHERE instance_id = $1 AND state = 'pending'
        AND NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.instance_id = $1 AND w.enabled)`,
    [instanceId, new Date(now), REMOVED],
  );
  return rowCount ?? 0;
}

/**
 * The delivery log the operator reads (`GET /admin/v1/instances/:id/webhook/deliveries`): outbox rows,
 * newest first, each with its attempts. Neither the secret nor the body appears here: the body of `qr` and
 * `code` events carries login secrets, and the receiver already has it.
 */
import type { Queryable } from '../store/pool.js';

export const DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

export interface AttemptView {
  attempt: number;
  at: string;
  status: number | null;
  error: string | null;
  durationMs: number;
}

export interface DeliveryView {
  eventId: string;
  event: string;
  state: DeliveryState;
  attempts: number;
  maxAttempts: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
  /** when the next attempt is due; null unless pending */
  nextAttemptAt: string | null;
  attemptLog: AttemptView[];
}

export interface DeliveryPage {
  items: DeliveryView[];
  nextCursor: string | null;
}

export interface ListDeliveriesOptions {
  limit: number;
  cursor?: string | null;
  state?: DeliveryState | null;
}

/** The cursor is the outbox id of the last item, opaque to callers. */
export const encodeCursor = (id: number): string => Buffer.from(`o${id}`).toString('base64url');
export function decodeCursor(cursor: string): number | null {
  const m = /^o(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString());
  return m ? Number(m[1]) : null;
}

interface OutboxRow {
  id: number;
  event_id: string;
  event: string;
  state: DeliveryState;
  attempts: number;
  max_attempts: number;
  last_status: number | null;
  last_error: string | null;
  created_at: Date;
  delivered_at: Date | null;
  next_attempt_at: Date;
}

interface AttemptRow {
  outbox_id: number;
  attempt: number;
  at: Date;
  status: number | null;
  error: string | null;
  duration_ms: number;
}

const COLUMNS = `o.id, o.event_id, o.event, o.state, o.attempts, o.max_attempts, o.last_status, o.last_error, o.created_at,
            o.delivered_at, o.next_attempt_at`;

/** A page: the ids one backward range of an index (`where`), index-only, then the rows by id, newest first. */
const page = (where: string, limit: string) => `SELECT ${COLUMNS}
       FROM (SELECT id FROM outbox WHERE ${where} ORDER BY id DESC LIMIT ${limit}) p
       JOIN outbox o ON o.id = p.id
      ORDER BY o.id DESC`;

/** A page of every state: a range of outbox_instance (instance, id). ($1 instance, $2 the cursor's id or the largest bigint, $3 how many) */
export const ALL_DELIVERIES = page('instance_id = $1 AND id < $2', '$3');

/**
 * A page of one state: a range of outbox_instance_state (instance, state, id). Written as one filter over the
 * table (`($3 IS NULL OR state = $3)`), PostgreSQL walked outbox_pkey backwards and skipped the rows of other
 * states and instances (3.9 ms for a page of an instance holding 3,000 of 82,000 rows; a state it rarely has
 * walked its whole 7 days). ($1 instance, $2 state, $3 the cursor's id or the largest bigint, $4 how many)
 */
export const ONE_STATE_DELIVERIES = page('instance_id = $1 AND state = $2 AND id < $3', '$4');

/** The cursor of the first page: before every id. */
const NO_CURSOR = '9223372036854775807';

/** One page of deliveries. An invalid cursor is the caller's to reject (see decodeCursor). */
export async function listDeliveries(q: Queryable, instanceId: string, opts: ListDeliveriesOptions): Promise<DeliveryPage> {
  const decoded = opts.cursor ? decodeCursor(opts.cursor) : null;
  const before = decoded === null ? NO_CURSOR : String(decoded);
  const { rows } = opts.state
    ? await q.query<OutboxRow>(ONE_STATE_DELIVERIES, [instanceId, opts.state, before, opts.limit + 1])
    : await q.query<OutboxRow>(ALL_DELIVERIES, [instanceId, before, opts.limit + 1]);
  const page = rows.slice(0, opts.limit);
  const attempts = page.length
    ? (
        await q.query<AttemptRow>(
          `SELECT outbox_id, attempt, at, status, error, duration_ms FROM webhook_attempts
            WHERE outbox_id = ANY ($1::bigint[]) ORDER BY outbox_id, attempt, id`,
          [page.map((r) => r.id)],
        )
      ).rows
    : [];
  const byOutbox = new Map<number, AttemptView[]>();
  for (const a of attempts) {
    const list = byOutbox.get(a.outbox_id) ?? [];
    list.push({ attempt: a.attempt, at: a.at.toISOString(), status: a.status, error: a.error, durationMs: a.duration_ms });
    byOutbox.set(a.outbox_id, list);
  }
  const last = page[page.length - 1];
  return {
    items: page.map((r) => ({
      eventId: r.event_id,
      event: r.event,
      state: r.state,
      attempts: r.attempts,
      maxAttempts: r.max_attempts,
      lastStatus: r.last_status,
      lastError: r.last_error,
      createdAt: r.created_at.toISOString(),
      deliveredAt: r.delivered_at ? r.delivered_at.toISOString() : null,
      nextAttemptAt: r.state === 'pending' ? r.next_attempt_at.toISOString() : null,
      attemptLog: byOutbox.get(r.id) ?? [],
    })),
    nextCursor: rows.length > opts.limit && last ? encodeCursor(last.id) : null,
  };
}

/**
 * Retention: delete finished deliveries (delivered or failed) created before `before`, at most `batch`
 * rows a call so a large backlog does not hold one long transaction. Returns the number deleted.
 *
 * The batch is the oldest by `created_at`, read as one range of outbox_finished_age (its order), and the rows
 * are deleted by id (`= ANY (ARRAY(...))`: one outbox_pkey lookup each). Before, `id IN (SELECT ... ORDER BY
 * id ...)` was a hash semi-join over a sequential scan of the whole outbox for every batch (22 ms of outbox work
 * for 5,000 rows of 82,000 here, 5.6 ms now), and its ORDER BY id walked outbox_pkey past every row too young
 * to delete: the last, empty call of each run read the outbox from its oldest row on. Which rows a call takes
 * may differ from id order only among rows created within the same instants; a run deletes the same rows.
 */
export const PRUNE_DELIVERIES = `DELETE FROM outbox WHERE id = ANY (ARRAY(
       SELECT id FROM outbox WHERE state <> 'pending' AND created_at < $1 ORDER BY created_at LIMIT $2))`;

export async function pruneDeliveries(q: Queryable, before: Date, batch = 5_000): Promise<number> {
  const { rowCount } = await q.query(PRUNE_DELIVERIES, [before, batch]);
  return rowCount ?? 0;
}

/** What a redelivery found: the row put back to pending, or why not. */
export type RedeliverOutcome =
  | { kind: 'pending'; eventId: string }
  | { kind: 'not-found' }
  | { kind: 'still-pending' }
  | { kind: 'no-webhook'; state: Exclude<DeliveryState, 'pending'> };

export interface RedeliverOptions {
  /** when the next attempt is due (the clock's now) */
  now: number;
  /** the configured per-delivery maximum of each event (src/webhooks/events.ts maxAttemptsFor) */
  budgets: ReadonlyMap<string, number>;
  /** for an event the catalogue does not know (a row written by an older version) */
  defaultBudget: number;
}

/**
 * Put a finished delivery (`failed` or `delivered`) of the instance back to `pending`: the next attempt is due
 * now, the attempts made stay in its log and the numbering continues (the row's `attempts` is kept), and it
 * gets a fresh budget: `max_attempts` becomes the attempts made plus the event's configured maximum.
 * `delivered_at` is cleared until it is delivered again.
 *
 * One statement, conditional on the state and on an enabled webhook: two operators (or a sender) racing cannot
 * put a row back twice or touch a pending one. The same statement reads, from its snapshot, why nothing was
 * updated (no such event, still pending, no enabled webhook), so the answer needs no second read.
 */
export async function redeliver(q: Queryable, instanceId: string, eventId: string, opts: RedeliverOptions): Promise<RedeliverOutcome> {
  const { rows } = await q.query<{ state: DeliveryState | null; hooked: boolean; updated: number }>(
    `WITH target AS (
       SELECT id, state FROM outbox WHERE instance_id = $1 AND event_id = $2
     ), hook AS (
       SELECT EXISTS (SELECT 1 FROM webhooks w WHERE w.instance_id = $1 AND w.enabled) AS hooked
     ), upd AS (
       UPDATE outbox o
          SET state = 'pending', next_attempt_at = $3, delivered_at = NULL,
              max_attempts = o.attempts + COALESCE(
                (SELECT b.n FROM unnest($4::text[], $5::int[]) AS b(event, n) WHERE b.event = o.event), $6)
        WHERE o.instance_id = $1 AND o.event_id = $2 AND o.state IN ('failed', 'delivered')
          AND (SELECT hooked FROM hook)
       RETURNING o.id
     )
     SELECT (SELECT state FROM target) AS state, (SELECT hooked FROM hook) AS hooked, (SELECT count(*)::int FROM upd) AS updated`,
    [instanceId, eventId, new Date(opts.now), [...opts.budgets.keys()], [...opts.budgets.values()], opts.defaultBudget],
  );
  const r = rows[0];
  if (!r || r.state === null) return { kind: 'not-found' };
  if (r.updated > 0) return { kind: 'pending', eventId };
  if (r.state === 'pending') return { kind: 'still-pending' };
  if (!r.hooked) return { kind: 'no-webhook', state: r.state };
  // finished in this statement's snapshot, but a concurrent redelivery put it back first: it is pending now
  return { kind: 'still-pending' };
}

/**
 * Insert an acceptance batch's jobs in one statement. Returns them with their seq, in the batch's order.
 *
 * Strategy: the batch travels as the rows of src/queue/sql/job-rows.ts (one JSON document for a small batch,
 * one array per column for a large one); ORDER BY its `ord` keeps the batch's arrival order in `seq`.
 * Only `seq` comes back: everything else of the job is what was just written (a send-bulk of 5,000 does not
 * ship and parse its 5,000 rows twice).
 * The jobs' idempotency keys are remembered by the same statement (src/queue/sql/rememberIdempotencyKeys.ts
 * holds its rule): one round trip fewer for every group commit with keys.
 */
import type { Queryable } from '../../store/pool.js';
import type { Job, NewJob } from '../job.js';
import { sendPart } from '../payload.js';
import { rememberKeysFrom, keyTakenConcurrently } from './rememberIdempotencyKeys.js';
import { insertedState, perRowSource, rowSourceFor } from './job-rows.js';

/** Rows per statement: a send-bulk of 5,000 is five statements of one transaction, each far inside the store's statement deadline. */
export const ROWS_PER_STATEMENT = 1_000;

export const INSERT = `INSERT INTO jobs (id, instance_id, state, kind, origin_route, chat_id, phone, payload, payload_hash,
    idempotency_key, priority, not_before, queued_at, scheduled_at, expires_at, previous_job_id, caller_boot)
 SELECT id, inst, state, kind, route, chat, phone, payload, hash, key, prio,
        to_timestamp(nb / 1000), to_timestamp(qa / 1000), to_timestamp(sa / 1000), to_timestamp(ea / 1000), prev, boot
   FROM t ORDER BY ord
 RETURNING id, seq`;

/** Jobs without keys (built once for each form of the rows). */
export const insertUnkeyed = perRowSource((rows) => `WITH t AS (${rows.sql}) ${INSERT}`);

/** The keys of the rows of `t`, as rememberKeysFrom takes them (created at the job's queued_at). */
export const KEY_ROWS = 'SELECT inst, key, id, hash, to_timestamp(qa / 1000) FROM t WHERE key IS NOT NULL';

/**
 * Jobs of which some have keys: the keys are remembered in the same statement (created at the job's queued_at);
 * `remembered` is how many were (every row carries it; a key another node holds is not).
 */
const keyedSql = perRowSource((rows) => `WITH t AS (${rows.sql}),
  j AS (${INSERT}),
  k AS (${rememberKeysFrom(KEY_ROWS)})
 SELECT id, seq, (SELECT count(*) FROM k) AS remembered FROM j`);

/**
 * Insert the jobs and remember their idempotency keys; throws (the caller rolls back) when a key was taken
 * meanwhile. The statements run one after the other; the next one's parameters are written while PostgreSQL
 * runs the current one.
 */
export async function insertJobs(q: Queryable, jobs: NewJob[]): Promise<Job[]> {
  const seqs = new Array<number | undefined>(jobs.length).fill(undefined);
  const part = (from: number) => {
    const to = Math.min(jobs.length, from + ROWS_PER_STATEMENT);
    const source = rowSourceFor(jobs, from, to);
    return { source, params: source.values(jobs, from, to) };
  };
  let next = jobs.length > 0 ? part(0) : null;
  for (let i = 0; i < jobs.length && next; i += ROWS_PER_STATEMENT) {
    const { source, params } = next;
    const end = Math.min(jobs.length, i + ROWS_PER_STATEMENT);
    let keyed = 0;
    for (let k = i; k < end; k++) if ((jobs[k] as NewJob).idempotencyKey !== null) keyed += 1;
    const pending = q.query<{ id: string; seq: number; remembered?: number }>(keyed > 0 ? keyedSql(source) : insertUnkeyed(source), params);
    if (end < jobs.length) {
      // (were the writing to throw, the statement's own failure is not left unhandled: the caller rolls back)
      pending.catch(() => undefined);
      next = part(end);
    }
    const { rows } = await pending;
    if (keyed > 0 && Number(rows[0]?.remembered ?? 0) !== keyed) throw keyTakenConcurrently();
    // RETURNING gives the rows in the order inserted (the batch's): matched by position, by id if not
    let inOrder = rows.length === end - i;
    for (let r = 0; inOrder && r < rows.length; r++) inOrder = (rows[r] as { id: string }).id === (jobs[i + r] as NewJob).id;
    if (inOrder) rows.forEach((row, r) => (seqs[i + r] = Number(row.seq)));
    else {
      const seqOf = new Map(rows.map((row) => [row.id, Number(row.seq)]));
      for (let k = i; k < end; k++) seqs[k] = seqOf.get((jobs[k] as NewJob).id);
    }
  }
  return jobs.map((j, k) => {
    const seq = seqs[k];
    if (seq === undefined) throw new Error(`job ${j.id} was not inserted`);
    return insertedJob(j, seq);
  });
}

/**
 * A job as its insert stored it: the column defaults for everything acceptance does not write. Written out
 * field by field, the send last: a literal that starts with a spread is far slower to build (src/queue/sql/row.ts).
 */
export function insertedJob(j: NewJob, seq: number): Job {
  return {
    id: j.id,
    seq,
    instanceId: j.instanceId,
    state: insertedState(j),
    originRoute: j.originRoute,
    chatId: j.chatId,
    phone: j.phone,
    payloadHash: j.payloadHash,
    idempotencyKey: j.idempotencyKey,
    priority: j.priority,
    notBefore: j.notBefore,
    queuedAt: j.queuedAt,
    scheduledAt: j.scheduledAt,
    dispatchedAt: null,
    terminalAt: null,
    expiresAt: j.expiresAt,
    attempts: 0,
    deliveryConfidence: null,
    messageId: null,
    resultCode: null,
    errorMessage: null,
    unknownReason: null,
    previousJobId: j.previousJobId,
    ...sendPart(j),
  };
}

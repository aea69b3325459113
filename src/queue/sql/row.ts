/**
 * A `jobs` row and its mapping to a Job. The payload comes back from jsonb checked against its kind
 * (src/queue/payload.ts), never cast: a row the gateway cannot send is an error where it is read.
 */
import { isJobState } from '../../../machines/job.machine.js';
import { dateOf } from '../../clock.js';
import type { Job, JobRecord } from '../job.js';
import { checkSend, type Send } from '../payload.js';

export interface JobRow {
  id: string;
  seq: number;
  instance_id: string;
  state: string;
  kind: string;
  origin_route: string;
  chat_id: string | null;
  phone: string | null;
  payload: unknown;
  payload_hash: string | null;
  idempotency_key: string | null;
  priority: number;
  not_before: Date | null;
  queued_at: Date;
  scheduled_at: Date | null;
  dispatched_at: Date | null;
  terminal_at: Date | null;
  expires_at: Date;
  attempts: number;
  delivery_confidence: JobRecord['deliveryConfidence'];
  message_id: string | null;
  result_code: string | null;
  error_message: string | null;
  unknown_reason: string | null;
  previous_job_id: string | null;
}

/**
 * The columns of a JobRow, of `jobs` aliased `j`: for a prepared statement, whose result must keep its shape.
 * A record of every key, so that a column JobRow gains or loses fails to compile until it is listed here.
 */
const JOB_ROW_KEYS: Record<keyof JobRow, true> = {
  id: true, seq: true, instance_id: true, state: true, kind: true, origin_route: true, chat_id: true, phone: true, payload: true,
  payload_hash: true, idempotency_key: true, priority: true, not_before: true, queued_at: true, scheduled_at: true,
  dispatched_at: true, terminal_at: true, expires_at: true, attempts: true, delivery_confidence: true, message_id: true,
  result_code: true, error_message: true, unknown_reason: true, previous_job_id: true,
};
/** The columns of a JobRow (of a `jobs` row or what RETURNING gives back of one), named. */
export const JOB_ROW_NAMES = Object.keys(JOB_ROW_KEYS).join(', ');
/** The same, of `jobs` aliased `j`. */
export const JOB_ROW_COLUMNS = Object.keys(JOB_ROW_KEYS).map((c) => `j.${c}`).join(', ');

const TIMESTAMP_KEYS = ['not_before', 'queued_at', 'scheduled_at', 'dispatched_at', 'terminal_at', 'expires_at'] as const satisfies readonly (keyof JobRow)[];
const isTimestamp = (k: string): k is (typeof TIMESTAMP_KEYS)[number] => (TIMESTAMP_KEYS as readonly string[]).includes(k);

/**
 * A `jobs` row (aliased `j`) as one json value, its timestamps as epoch milliseconds: for a statement whose
 * answer is a union of row kinds, where a job's columns cannot be columns of their own. `jobRowFromJson` reads it.
 */
export const JOB_ROW_JSON = `json_build_object(${Object.keys(JOB_ROW_KEYS)
  .map((c) => `'${c}', ${isTimestamp(c) ? `(extract(epoch FROM j.${c}) * 1000)::float8` : `j.${c}`}`)
  .join(', ')})`;

/** The JobRow of a `JOB_ROW_JSON` value (as parsed by pg's json parser). */
export function jobRowFromJson(o: Record<string, unknown>): JobRow {
  const row: Record<string, unknown> = { ...o };
  for (const k of TIMESTAMP_KEYS) row[k] = dateOf(o[k] as number | null | undefined);
  for (const k of Object.keys(JOB_ROW_KEYS)) if (!(k in row)) throw new Error(`a job's json lacks ${k}`);
  return row as unknown as JobRow;
}

const ms = (d: Date | null) => (d ? d.getTime() : null);

/**
 * Map a row; `send` is given when the caller already holds the checked send. The send is spread last: V8
 * builds a literal that starts with a spread and adds many properties after it tens of times slower (a
 * few microseconds against a few tens) — it counts where thousands of jobs are mapped at once.
 */
export function rowToJob(r: JobRow, send: Send = checkSend(r.kind, r.payload)): Job {
  if (!isJobState(r.state)) throw new Error(`job ${r.id} has an unknown state`);
  return {
    id: r.id,
    seq: r.seq,
    instanceId: r.instance_id,
    state: r.state,
    originRoute: r.origin_route,
    chatId: r.chat_id,
    phone: r.phone,
    payloadHash: r.payload_hash,
    idempotencyKey: r.idempotency_key,
    priority: r.priority,
    notBefore: ms(r.not_before),
    queuedAt: r.queued_at.getTime(),
    scheduledAt: ms(r.scheduled_at),
    dispatchedAt: ms(r.dispatched_at),
    terminalAt: ms(r.terminal_at),
    expiresAt: r.expires_at.getTime(),
    attempts: r.attempts,
    deliveryConfidence: r.delivery_confidence,
    messageId: r.message_id,
    resultCode: r.result_code,
    errorMessage: r.error_message,
    unknownReason: r.unknown_reason,
    previousJobId: r.previous_job_id,
    ...send,
  };
}

/**
 * A state list of the job machine as SQL literals (`'queued','scheduled'`), for a query text fixed at load:
 * unlike a bound array, a literal list lets PostgreSQL match the partial indexes on state (sql/0001_init.sql).
 */
export function sqlStates(states: readonly string[]): string {
  if (states.length === 0 || !states.every(isJobState)) throw new Error('not a list of job states');
  return states.map((s) => `'${s}'`).join(',');
}

/**
 * The job record and its SQL. PostgreSQL is the truth; every transition is a conditional update
 * (`WHERE state = <from>`), so two actors (or nodes) can never move one job twice.
 */
import type { Queryable } from '../store/pool.js';

import type { JobState } from '../../machines/job.machine.js';

export type { JobState };

export interface Job {
  id: string;
  seq: number;
  instanceId: string;
  state: JobState;
  kind: string;
  originRoute: string;
  chatId: string | null;
  phone: string | null;
  payload: Record<string, unknown>;
  payloadHash: string;
  idempotencyKey: string | null;
  priority: number;
  notBefore: number | null;
  queuedAt: number;
  scheduledAt: number | null;
  dispatchedAt: number | null;
  terminalAt: number | null;
  expiresAt: number;
  attempts: number;
  deliveryConfidence: 'confirmed' | 'assumed' | 'unknown' | null;
  messageId: string | null;
  resultCode: string | null;
  errorMessage: string | null;
  unknownReason: string | null;
  previousJobId: string | null;
}

export interface JobRow {
  id: string;
  seq: number;
  instance_id: string;
  state: JobState;
  kind: string;
  origin_route: string;
  chat_id: string | null;
  phone: string | null;
  payload: Record<string, unknown>;
  payload_hash: string;
  idempotency_key: string | null;
  priority: number;
  not_before: Date | null;
  queued_at: Date;
  scheduled_at: Date | null;
  dispatched_at: Date | null;
  terminal_at: Date | null;
  expires_at: Date;
  attempts: number;
  delivery_confidence: Job['deliveryConfidence'];
  message_id: string | null;
  result_code: string | null;
  error_message: string | null;
  unknown_reason: string | null;
  previous_job_id: string | null;
}

const ms = (d: Date | null) => (d ? d.getTime() : null);

export function rowToJob(r: JobRow): Job {
  return {
    id: r.id,
    seq: r.seq,
    instanceId: r.instance_id,
    state: r.state,
    kind: r.kind,
    originRoute: r.origin_route,
    chatId: r.chat_id,
    phone: r.phone,
    payload: r.payload,
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
  };
}

/** What acceptance inserts: the job's own fields; state, seq and outcomes are the store's. */
export type NewJob = Pick<
  Job,
  'id' | 'instanceId' | 'kind' | 'originRoute' | 'chatId' | 'phone' | 'payload' | 'payloadHash' | 'idempotencyKey' |
  'priority' | 'notBefore' | 'queuedAt' | 'scheduledAt' | 'expiresAt' | 'previousJobId'
> & {
  /** the boot id of the process whose synchronous v1 caller waits for this job (src/queue/sync-callers.ts) */
  callerBoot?: string | null;
};

const toDate = (v: number | null) => (v === null ? null : new Date(v));

/** Insert jobs (one statement for a whole batch) and their idempotency keys. Returns the jobs with seq. */
export async function insertJobs(q: Queryable, jobs: NewJob[]): Promise<Job[]> {
  if (jobs.length === 0) return [];
  const cols = {
    id: jobs.map((j) => j.id),
    inst: jobs.map((j) => j.instanceId),
    state: jobs.map((j) => (j.scheduledAt === null ? 'queued' : 'scheduled')),
    kind: jobs.map((j) => j.kind),
    route: jobs.map((j) => j.originRoute),
    chat: jobs.map((j) => j.chatId),
    phone: jobs.map((j) => j.phone),
    payload: jobs.map((j) => JSON.stringify(j.payload)),
    hash: jobs.map((j) => j.payloadHash),
    key: jobs.map((j) => j.idempotencyKey),
    prio: jobs.map((j) => j.priority),
    nb: jobs.map((j) => toDate(j.notBefore)),
    qa: jobs.map((j) => new Date(j.queuedAt)),
    sa: jobs.map((j) => toDate(j.scheduledAt)),
    ea: jobs.map((j) => new Date(j.expiresAt)),
    prev: jobs.map((j) => j.previousJobId),
    boot: jobs.map((j) => j.callerBoot ?? null),
  };
  // unnest keeps a batch to one round trip; WITH ORDINALITY keeps the batch's arrival order in seq.
  const { rows } = await q.query<JobRow>(
    `INSERT INTO jobs (id, instance_id, state, kind, origin_route, chat_id, phone, payload, payload_hash,
        idempotency_key, priority, not_before, queued_at, scheduled_at, expires_at, previous_job_id, caller_boot)
     SELECT id, inst, state, kind, route, chat, phone, payload::jsonb, hash, key, prio, nb, qa, sa, ea, prev, boot
       FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                   $9::text[], $10::text[], $11::smallint[], $12::timestamptz[], $13::timestamptz[],
                   $14::timestamptz[], $15::timestamptz[], $16::text[], $17::text[])
            WITH ORDINALITY AS t(id, inst, state, kind, route, chat, phone, payload, hash, key, prio, nb, qa, sa, ea, prev, boot, ord)
      ORDER BY ord
     RETURNING *`,
    [cols.id, cols.inst, cols.state, cols.kind, cols.route, cols.chat, cols.phone, cols.payload, cols.hash, cols.key,
      cols.prio, cols.nb, cols.qa, cols.sa, cols.ea, cols.prev, cols.boot],
  );
  const keyed = jobs.filter((j) => j.idempotencyKey !== null);
  if (keyed.length > 0) {
    // A key remembered longer than 7 days is free again even if housekeeping has not removed it yet; a younger
    // one (another node took it meanwhile) updates nothing, and the missing row rolls the batch back.
    const { rowCount } = await q.query(
      `INSERT INTO idempotency_keys AS k (instance_id, key, job_id, payload_hash, created_at)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
       ON CONFLICT (instance_id, key) DO UPDATE
          SET job_id = EXCLUDED.job_id, payload_hash = EXCLUDED.payload_hash, created_at = EXCLUDED.created_at
        WHERE k.created_at <= EXCLUDED.created_at - interval '7 days'`,
      [keyed.map((j) => j.instanceId), keyed.map((j) => j.idempotencyKey), keyed.map((j) => j.id),
        keyed.map((j) => j.payloadHash), keyed.map((j) => new Date(j.queuedAt))],
    );
    if ((rowCount ?? 0) !== keyed.length) throw new Error('idempotency key taken concurrently');
  }
  const byId = new Map(rows.map((r) => [r.id, rowToJob(r)]));
  return jobs.map((j) => byId.get(j.id) as Job);
}

export async function getJob(q: Queryable, instanceId: string, jobId: string): Promise<Job | null> {
  const { rows } = await q.query<JobRow>('SELECT * FROM jobs WHERE id = $1 AND instance_id = $2', [jobId, instanceId]);
  return rows[0] ? rowToJob(rows[0]) : null;
}

/** The job an idempotency key names, if remembered (7 days). */
export async function findByIdempotencyKey(
  q: Queryable,
  instanceId: string,
  key: string,
  notBefore: number,
): Promise<{ job: Job; payloadHash: string } | null> {
  const { rows } = await q.query<JobRow & { key_hash: string }>(
    `SELECT j.*, k.payload_hash AS key_hash FROM idempotency_keys k JOIN jobs j ON j.id = k.job_id
      WHERE k.instance_id = $1 AND k.key = $2 AND k.created_at > $3`,
    [instanceId, key, new Date(notBefore)],
  );
  const r = rows[0];
  return r ? { job: rowToJob(r), payloadHash: r.key_hash } : null;
}

/** The jobs of several idempotency keys in one query (an acceptance batch). */
export async function findByIdempotencyKeys(
  q: Queryable,
  instanceId: string,
  keys: string[],
  notBefore: number,
): Promise<Map<string, { job: Job; payloadHash: string }>> {
  const out = new Map<string, { job: Job; payloadHash: string }>();
  if (keys.length === 0) return out;
  const { rows } = await q.query<JobRow & { key_hash: string; key: string }>(
    `SELECT j.*, k.payload_hash AS key_hash, k.key AS key FROM idempotency_keys k JOIN jobs j ON j.id = k.job_id
      WHERE k.instance_id = $1 AND k.key = ANY($2::text[]) AND k.created_at > $3`,
    [instanceId, keys, new Date(notBefore)],
  );
  for (const r of rows) out.set(r.key, { job: rowToJob(r), payloadHash: r.key_hash });
  return out;
}

/** Forget keys older than the retention (7 days); a key whose row is gone may be used again. */
export async function pruneIdempotencyKeys(q: Queryable, olderThan: number): Promise<number> {
  const r = await q.query('DELETE FROM idempotency_keys WHERE created_at <= $1', [new Date(olderThan)]);
  return r.rowCount ?? 0;
}

export async function countPending(q: Queryable, instanceId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs WHERE instance_id = $1 AND state IN ('queued','scheduled','sending')`,
    [instanceId],
  );
  return rows[0]?.n ?? 0;
}

/** Waiting jobs in planning order (priority desc, arrival asc). */
export async function listWaiting(q: Queryable, instanceId: string): Promise<Job[]> {
  const { rows } = await q.query<JobRow>(
    `SELECT * FROM jobs WHERE instance_id = $1 AND state IN ('queued','scheduled') ORDER BY priority DESC, seq`,
    [instanceId],
  );
  return rows.map(rowToJob);
}

export interface TransitionFields {
  scheduledAt?: number | null;
  dispatchedAt?: number;
  terminalAt?: number;
  deliveryConfidence?: Job['deliveryConfidence'];
  messageId?: string | null;
  resultCode?: string | null;
  errorMessage?: string | null;
  unknownReason?: string | null;
  attemptsIncrement?: boolean;
}

/**
 * Move a job from one of `from` to `to` if (and only if) it is still in `from`. Returns the updated job, or
 * null when another path moved it first.
 */
export async function transitionJob(
  q: Queryable,
  jobId: string,
  from: readonly JobState[],
  to: JobState,
  f: TransitionFields = {},
): Promise<Job | null> {
  const { rows } = await q.query<JobRow>(
    `UPDATE jobs SET state = $3,
        scheduled_at = CASE WHEN $4::boolean THEN $5::timestamptz ELSE scheduled_at END,
        dispatched_at = COALESCE($6::timestamptz, dispatched_at),
        terminal_at = COALESCE($7::timestamptz, terminal_at),
        delivery_confidence = COALESCE($8, delivery_confidence),
        message_id = COALESCE($9, message_id),
        result_code = COALESCE($10, result_code),
        error_message = COALESCE($11, error_message),
        unknown_reason = COALESCE($12, unknown_reason),
        attempts = attempts + CASE WHEN $13::boolean THEN 1 ELSE 0 END
      WHERE id = $1 AND state = ANY($2::text[])
      RETURNING *`,
    [jobId, from, to, f.scheduledAt !== undefined, toDate(f.scheduledAt ?? null), toDate(f.dispatchedAt ?? null),
      toDate(f.terminalAt ?? null), f.deliveryConfidence ?? null, f.messageId ?? null, f.resultCode ?? null,
      f.errorMessage ?? null, f.unknownReason ?? null, f.attemptsIncrement ?? false],
  );
  return rows[0] ? rowToJob(rows[0]) : null;
}

/** Write a new plan: slots for many waiting jobs in one statement (only those still waiting). */
export async function saveSlots(q: Queryable, slots: { jobId: string; scheduledAt: number }[], epoch: number): Promise<number> {
  if (slots.length === 0) return 0;
  const r = await q.query(
    `UPDATE jobs j SET scheduled_at = s.at, state = 'scheduled', plan_epoch = $3
       FROM unnest($1::text[], $2::timestamptz[]) AS s(id, at)
      WHERE j.id = s.id AND j.state IN ('queued','scheduled')`,
    [slots.map((s) => s.jobId), slots.map((s) => new Date(s.scheduledAt)), epoch],
  );
  return r.rowCount ?? 0;
}

export interface ListJobsOptions {
  state?: JobState;
  limit: number;
  /** seq of the last item of the previous page */
  afterSeq?: number;
}

export async function listJobs(q: Queryable, instanceId: string, o: ListJobsOptions): Promise<Job[]> {
  const { rows } = await q.query<JobRow>(
    `SELECT * FROM jobs WHERE instance_id = $1 AND ($2::text IS NULL OR state = $2) AND seq > $3
      ORDER BY seq LIMIT $4`,
    [instanceId, o.state ?? null, o.afterSeq ?? 0, o.limit],
  );
  return rows.map(rowToJob);
}

export interface QueueCounts {
  queued: number;
  scheduled: number;
  sending: number;
  sent: number;
  failed: number;
  unknown: number;
  sent24h: number;
  failed24h: number;
  unknown24h: number;
}

export async function queueCounts(q: Queryable, instanceId: string, now: number): Promise<QueueCounts> {
  const { rows } = await q.query<QueueCounts>(
    `SELECT count(*) FILTER (WHERE state = 'queued')::int AS queued,
            count(*) FILTER (WHERE state = 'scheduled')::int AS scheduled,
            count(*) FILTER (WHERE state = 'sending')::int AS sending,
            count(*) FILTER (WHERE state = 'sent')::int AS sent,
            count(*) FILTER (WHERE state = 'failed')::int AS failed,
            count(*) FILTER (WHERE state = 'unknown')::int AS unknown,
            count(*) FILTER (WHERE state = 'sent' AND terminal_at > $2)::int AS sent24h,
            count(*) FILTER (WHERE state = 'failed' AND terminal_at > $2)::int AS failed24h,
            count(*) FILTER (WHERE state = 'unknown' AND terminal_at > $2)::int AS unknown24h
       FROM jobs WHERE instance_id = $1`,
    [instanceId, new Date(now - 86_400_000)],
  );
  return rows[0] as QueueCounts;
}

// ---- dispatch history (the sliding windows) ----

export async function recordDispatch(q: Queryable, instanceId: string, jobId: string | null, at: number): Promise<void> {
  await q.query('INSERT INTO dispatches (instance_id, job_id, dispatched_at) VALUES ($1, $2, $3)', [instanceId, jobId, new Date(at)]);
  await q.query('UPDATE instances SET last_dispatch_at = GREATEST(COALESCE(last_dispatch_at, $2), $2) WHERE id = $1', [instanceId, new Date(at)]);
}

/** A dispatch that ended `failed` was provably not sent: it stops counting. */
export async function forgetDispatch(q: Queryable, jobId: string): Promise<void> {
  await q.query('DELETE FROM dispatches WHERE job_id = $1', [jobId]);
}

/** Dispatch instants (ms, ascending) of the last 24 h that count against the windows. */
export async function loadHistory(q: Queryable, instanceId: string, now: number): Promise<number[]> {
  const { rows } = await q.query<{ at: Date }>(
    'SELECT dispatched_at AS at FROM dispatches WHERE instance_id = $1 AND dispatched_at > $2 ORDER BY dispatched_at',
    [instanceId, new Date(now - 86_400_000)],
  );
  return rows.map((r) => r.at.getTime());
}

/** Jobs left in `sending` by a crash or a killed node: their outcome is unknowable. Never resent. */
export async function recoverSending(q: Queryable, instanceId: string, now: number): Promise<Job[]> {
  const { rows } = await q.query<JobRow>(
    `UPDATE jobs SET state = 'unknown', terminal_at = $2, delivery_confidence = 'unknown',
        unknown_reason = 'gateway stopped while the message was being dispatched; it may or may not have been sent'
      WHERE instance_id = $1 AND state = 'sending' RETURNING *`,
    [instanceId, new Date(now)],
  );
  return rows.map(rowToJob);
}

/**
 * Queue endpoints (SPEC.md "Queue endpoints"): the summary, the job list, re-plan, one job by id or by
 * idempotency key, cancel and requeue. In `/api/v2/messages/:id` only `wq_` ids are jobs; any other id is
 * passed on to the network-message routes.
 */
import Router from '@koa/router';
import { createRouter } from '../router.js';
import type { Context, Next } from 'koa';
import { enums, integer, object, optional, pattern, size, string, coerce } from 'superstruct';
import { ok } from '../envelope.js';
import { DomainError, queueStoreUnavailable } from '../../errors.js';
import { parse } from '../validate.js';
import { jobStatus } from '../../wire/job.js';
import { getJob, listJobs, queueCounts, findByIdempotencyKey } from '../../queue/jobs.js';
import { IDEMPOTENCY_RETENTION_MS, type QueueWorker } from '../../queue/worker.js';
import { sendPart } from '../../queue/payload.js';
import { JOB_STATES, canRequeue } from '../../../machines/job.machine.js';
import type { InstanceHandle } from '../../actors/handle.js';
import { DEADLINES } from '../../actors/handle.js';
import type { Pool } from '../../store/pool.js';
import type { Clock } from '../../clock.js';
import { IDEMPOTENCY_KEY } from './send-schemas.js';
import { answerAccepted, v2Gate, withGatewayDeadline, type QueueModeOf } from './queue-gate.js';

export type { QueueMode, QueueModeOf } from './queue-gate.js';

export interface QueueRouteDeps {
  pool: Pool;
  clock: Clock;
  handleOf(ctx: Context): InstanceHandle;
  workerOf(instanceId: string): QueueWorker | undefined;
  modeOf: QueueModeOf;
  degradedSince(): number | null;
}

const intString = (lo: number, hi: number) => coerce(size(integer(), lo, hi), string(), (v) => (/^\d+$/.test(v) ? Number(v) : NaN));
const ItemsQuery = object({
  state: optional(enums(JOB_STATES)),
  limit: optional(intString(1, 1_000_000)),
  // a nextCursor of an earlier page: a job's sequence number, which fits in a safe integer
  cursor: optional(pattern(string(), /^\d{1,15}$/)),
});
const KeyQuery = object({ idempotencyKey: pattern(string(), IDEMPOTENCY_KEY) });

const isJobId = (id: string) => id.startsWith('wq_');

export function queueRouter(deps: QueueRouteDeps): Router {
  const router = createRouter('/api/v2');
  const workerOrFail = (handle: InstanceHandle): QueueWorker => {
    const w = deps.workerOf(handle.id);
    if (!w) throw new DomainError('INSTANCE_UNREACHABLE', 'the instance is not running on this gateway');
    return w;
  };
  const loadJob = async (handle: InstanceHandle, jobId: string) => {
    const job = await getJob(deps.pool, handle.id, jobId);
    if (!job) throw new DomainError('JOB_NOT_FOUND', 'no such job', { jobId });
    return job;
  };

  router.get('/queue', async (ctx) => {
    const handle = deps.handleOf(ctx);
    const mode = deps.modeOf(handle.instance);
    const now = deps.clock.now();
    const worker = deps.workerOf(handle.id);
    const c = mode === 'memory-degraded' && worker
      ? worker.memoryCounts()
      : await withGatewayDeadline(deps.clock, DEADLINES.queueStatus, queueCounts(deps.pool, handle.id, now));
    const nextAt = worker?.nextAt() ?? null;
    const since = deps.degradedSince();
    ok(ctx, {
      mode,
      limitsEnforced: mode !== 'disabled',
      degradedSince: mode === 'memory-degraded' && since !== null ? new Date(since).toISOString() : null,
      counts: { queued: c.queued, scheduled: c.scheduled, sending: c.sending, sent24h: c.sent24h, failed24h: c.failed24h, unknown24h: c.unknown24h },
      nextAt: nextAt === null ? null : new Date(nextAt).toISOString(),
      limits: worker ? worker.limits(mode) : null,
    });
  });

  router.get('/queue/items', async (ctx) => {
    const handle = deps.handleOf(ctx);
    const q = parse(ctx.query, ItemsQuery);
    const limit = Math.min(q.limit ?? 50, 200);
    const items = await listJobs(deps.pool, handle.id, { state: q.state, limit: limit + 1, afterSeq: q.cursor ? Number(q.cursor) : 0 });
    const page = items.slice(0, limit);
    const now = deps.clock.now();
    ok(ctx, {
      items: page.map((j) => jobStatus(j, now)),
      nextCursor: items.length > limit && page.length > 0 ? String(page[page.length - 1]?.seq) : null,
    });
  });

  router.post('/queue/replan', async (ctx) => {
    const handle = deps.handleOf(ctx);
    const mode = deps.modeOf(handle.instance);
    if (mode !== 'pg') throw queueStoreUnavailable(mode);
    const r = await withGatewayDeadline(deps.clock, DEADLINES.queueStatus, workerOrFail(handle).replan('api'));
    ok(ctx, { replanned: true, affected: r.affected, epoch: r.epoch });
  });

  router.get('/messages', async (ctx) => {
    const handle = deps.handleOf(ctx);
    const { idempotencyKey } = parse(ctx.query, KeyQuery);
    const now = deps.clock.now();
    const found = await findByIdempotencyKey(deps.pool, handle.id, idempotencyKey, now - IDEMPOTENCY_RETENTION_MS);
    if (!found) throw new DomainError('JOB_NOT_FOUND', 'no job for this idempotency key', { idempotencyKey });
    ok(ctx, jobStatus(found.job, now));
  });

  router.get('/messages/:id', async (ctx: Context, next: Next) => {
    const id = String(ctx.params.id ?? '');
    if (!isJobId(id)) return next();
    ok(ctx, jobStatus(await loadJob(deps.handleOf(ctx), id), deps.clock.now()));
  });

  router.delete('/messages/:id', async (ctx: Context, next: Next) => {
    const id = String(ctx.params.id ?? '');
    if (!isJobId(id)) return next();
    const handle = deps.handleOf(ctx);
    await loadJob(handle, id);
    const job = await withGatewayDeadline(deps.clock, DEADLINES.queueStatus, workerOrFail(handle).cancel(id));
    ok(ctx, jobStatus(job, deps.clock.now()));
  });

  router.post('/messages/:id/requeue', async (ctx: Context, next: Next) => {
    const id = String(ctx.params.id ?? '');
    if (!isJobId(id)) return next();
    const handle = deps.handleOf(ctx);
    const old = await loadJob(handle, id);
    if (!canRequeue(old.state)) {
      throw new DomainError('JOB_NOT_REQUEUEABLE', `a job in state ${old.state} cannot be requeued; only failed, expired or cancelled jobs`, { jobId: id, state: old.state });
    }
    const worker = v2Gate(deps, handle);
    // The derived key makes a repeated requeue of the same job a replay, never a second message.
    const result = await withGatewayDeadline(deps.clock, DEADLINES.send, worker.accept({
      ...sendPart(old),
      originRoute: '/api/v2/messages/:jobId/requeue',
      chatId: old.chatId,
      phone: old.phone,
      payloadHash: old.payloadHash,
      idempotencyKey: `requeue:${old.id}`,
      priority: old.priority,
      notBefore: null,
      ttlSeconds: null,
      previousJobId: old.id,
    }));
    answerAccepted(ctx, deps, handle, worker, result, [], { previousJobId: old.id });
  });

  return router;
}

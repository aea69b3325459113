/**
 * Queue endpoints (SPEC.md "Queue endpoints"): the summary, the job list, re-plan, one job by id or by
 * idempotency key, cancel and requeue. In `/api/v2/messages/:id` only `wq_` ids are jobs; any other id is
 * passed on to the network-message routes.
 */
import Router from '@koa/router';
import { createRouter, takes } from '../router.js';
import type { Context, Next } from 'koa';
import { enums, object, optional, pattern, string } from 'superstruct';
import { ok } from '../envelope.js';
import { DomainError, queueStoreUnavailable } from '../../errors.js';
import { parse, queryInteger } from '../validate.js';
import { jobStatus } from '../../wire/job.js';
import { getJob, listJobs, findByIdempotencyKey } from '../../queue/jobs.js';
import { IDEMPOTENCY_RETENTION_MS, type AcceptRequest } from '../../queue/worker.js';
import { isMediaKind, sendPart, type Send } from '../../queue/payload.js';
import { JOB_STATES, canRequeue } from '../../../machines/job.machine.js';
import { DEADLINES, type InstancePort } from '../../actors/port.js';
import type { Pool } from '../../store/pool.js';
import type { Clock } from '../../clock.js';
import { IDEMPOTENCY_KEY, OwnNumberRefused, requeueKey } from './send-schemas.js';
import { namesPhone } from '../../phone.js';
import type { Job } from '../../queue/job.js';
import { isJobId } from './network-common.js';
import { acceptedOrReplay, answerAccepted, gatedAccept, ownNumber, requestView } from './queue-gate.js';
import { checkMediaOrReplay, payloadHash, replayOr, type SendRouteDeps } from './send.js';

export interface QueueRouteDeps {
  pool: Pool;
  clock: Clock;
  portOf(ctx: Context): InstancePort;
  degradedSince(): number | null;
  /** a requeued media job's source is checked as a send's is (src/http/routes/send.ts) */
  validateMedia: SendRouteDeps['validateMedia'];
}

export const ItemsQuery = object({
  state: optional(enums(JOB_STATES)),
  limit: optional(queryInteger(1, 1_000_000)),
  // a nextCursor of an earlier page: a job's sequence number, which fits in a safe integer
  cursor: optional(pattern(string(), /^\d{1,15}$/)),
});
/** The query parameters of the job list (its routes declare them: src/http/router.ts `takes`). */
export const ITEMS_QUERY = Object.keys(ItemsQuery.schema);
export const KeyQuery = object({ idempotencyKey: pattern(string(), IDEMPOTENCY_KEY) });

/**
 * The handlers of the summary, the job list, re-plan, cancel and requeue, given the instance's port: the v2 routes
 * (the port of the key's instance) and the operator's /admin/v1/instances/:id routes (src/http/routes/admin-queue.ts,
 * the port of the instance in the path) answer with the same code. A job is looked up within the port's
 * instance only: another instance's job is JOB_NOT_FOUND.
 */
export interface QueueHandlers {
  summary(ctx: Context, port: InstancePort): Promise<void>;
  items(ctx: Context, port: InstancePort): Promise<void>;
  cancel(ctx: Context, port: InstancePort, jobId: string): Promise<void>;
  /** `originRoute` is stored on the new job */
  requeue(ctx: Context, port: InstancePort, jobId: string, originRoute: string): Promise<void>;
  /** `reason` is the event's (`queue.replanned`): `api` with the key, `operator` with the admin token */
  replan(ctx: Context, port: InstancePort, reason: 'api' | 'operator'): Promise<void>;
}

export function queueHandlers(deps: Pick<QueueRouteDeps, 'pool' | 'clock' | 'degradedSince' | 'validateMedia'>): QueueHandlers {
  const loadJob = async (port: InstancePort, jobId: string) => {
    const job = isJobId(jobId) ? await getJob(deps.pool, port.instanceId, jobId) : null;
    if (!job) throw new DomainError('JOB_NOT_FOUND', 'no such job', { jobId });
    return job;
  };
  return {
    async summary(ctx, port) {
      const summary = await port.ask({ type: 'queue.summary' }, DEADLINES.queueStatus);
      const { mode, nextAt } = summary;
      // kept by the queue as it changes them: no query (test/integration/queue-tally.test.ts checks them)
      const c = summary.counts;
      const since = deps.degradedSince();
      ok(ctx, {
        mode,
        limitsEnforced: mode !== 'disabled',
        degradedSince: mode === 'memory-degraded' && since !== null ? new Date(since).toISOString() : null,
        counts: { queued: c.queued, scheduled: c.scheduled, sending: c.sending, sent24h: c.sent24h, failed24h: c.failed24h, unknown24h: c.unknown24h },
        nextAt: nextAt === null ? null : new Date(nextAt).toISOString(),
        limits: summary.limits,
      });
    },

    async items(ctx, port) {
      const q = parse(ctx.query, ItemsQuery);
      const limit = Math.min(q.limit ?? 50, 200);
      const items = await listJobs(deps.pool, port.instanceId, { state: q.state, limit: limit + 1, afterSeq: q.cursor ? Number(q.cursor) : 0 });
      const page = items.slice(0, limit);
      const now = deps.clock.now();
      ok(ctx, {
        items: page.map((j) => jobStatus(j, now)),
        nextCursor: items.length > limit && page.length > 0 ? String(page[page.length - 1]?.seq) : null,
      });
    },

    async cancel(ctx, port, jobId) {
      await loadJob(port, jobId);
      const job = await port.ask({ type: 'queue.cancel', jobId }, DEADLINES.queueStatus);
      ok(ctx, jobStatus(job, deps.clock.now()));
    },

    async replan(ctx, port, reason) {
      const { queueMode } = await requestView(ctx, port);
      if (queueMode !== 'pg') throw queueStoreUnavailable(queueMode);
      const r = await port.ask({ type: 'queue.replan', reason }, DEADLINES.queueStatus);
      ok(ctx, { replanned: true, affected: r.affected, epoch: r.epoch });
    },

    async requeue(ctx, port, jobId, originRoute) {
      const old = await loadJob(port, jobId);
      if (!canRequeue(old.state)) {
        throw new DomainError('JOB_NOT_REQUEUEABLE', `a job in state ${old.state} cannot be requeued; only failed, expired or cancelled jobs`, { jobId, state: old.state });
      }
      // The derived key makes a repeated requeue of the same job a replay, never a second message: also while the
      // instance is offline, paused or its queue switched off, as any keyed send (found from the outside: 503)
      const request: AcceptRequest = {
        ...sendPart(old),
        originRoute,
        chatId: old.chatId,
        phone: old.phone,
        // the derived key is compared on a repeat: a job stored without a key has no fingerprint, so it gets one
        payloadHash: old.payloadHash ?? payloadHash({ kind: old.kind, chatId: old.chatId ?? '', payload: old.payload, priority: old.priority, notBefore: null, ttlSeconds: null }),
        idempotencyKey: requeueKey(old.id),
        priority: old.priority,
        notBefore: null,
        ttlSeconds: null,
        previousJobId: old.id,
      };
      // a media job's source is checked again, as a send's (found from the outside: a requeue of a job whose stored
      // media was deleted was accepted, 202, and its new job failed at dispatch, where a send of it is 404
      // MEDIA_NOT_FOUND); a repeated requeue whose media went since is its replay. The check's warnings were the
      // first send's answer
      const kind = old.kind;
      const { accepted } = await acceptedOrReplay(gatedAccept(ctx, port, async (view) => {
        // its recipient is the instance's own number since a new link: refused as a send of it is, unless requeued before
        const refusal = requeueRefusal(old, ownNumber(ctx, view));
        if (refusal) await replayOr(refusal, port, () => request, []);
        if (isMediaKind(kind)) await checkMediaOrReplay(deps.validateMedia, port, kind, old.payload, [], () => request);
        return request;
      }));
      answerAccepted(ctx, deps.clock, accepted, [], { previousJobId: old.id });
    },
  };
}

/**
 * The refusal a requeue of `job` meets now that the instance is linked to `ownNumber` (`requeue` above): its
 * recipient, or one of a group's participants, is that number, as a send of it would be refused; null when not.
 * Found from the outside: a requeue of a job failed at the call for that reason was accepted, 202, and failed again.
 */
function requeueRefusal(job: Pick<Job, 'phone' | 'chatId'> & Send, ownNumber: string | null): OwnNumberRefused | null {
  if (!ownNumber) return null;
  if (job.kind === 'group_create') {
    return job.payload.participants.some((p) => namesPhone(p, ownNumber))
      ? new OwnNumberRefused('participants', 'cannot requeue: the instance itself is the group creator now, and the job lists it')
      : null;
  }
  // a job's phone is its chat id's number, whichever of the two its send gave
  if (job.chatId === null ? job.phone !== ownNumber : !namesPhone(job.chatId, ownNumber)) return null;
  return new OwnNumberRefused(job.kind === 'forward' ? 'toChatId' : 'phone', 'cannot requeue: the job\'s recipient is the instance\'s own number now');
}

export function queueRouter(deps: QueueRouteDeps): Router {
  const router = createRouter('/api/v2');
  const handle = queueHandlers(deps);
  const loadJob = async (port: InstancePort, jobId: string) => {
    const job = await getJob(deps.pool, port.instanceId, jobId);
    if (!job) throw new DomainError('JOB_NOT_FOUND', 'no such job', { jobId });
    return job;
  };

  // a network message id on /messages/:id is the reads' and interactions' (their routes check its query)
  const notAJob = (ctx: Context) => !isJobId(String(ctx.params.id ?? ''));

  router.get('/queue', takes(), (ctx) => handle.summary(ctx, deps.portOf(ctx)));

  router.get('/queue/items', takes({ query: ITEMS_QUERY }), (ctx) => handle.items(ctx, deps.portOf(ctx)));

  router.post('/queue/replan', takes(), (ctx) => handle.replan(ctx, deps.portOf(ctx), 'api'));

  router.get('/messages', takes({ query: ['idempotencyKey'] }), async (ctx) => {
    const { idempotencyKey } = parse(ctx.query, KeyQuery);
    const now = deps.clock.now();
    const found = await findByIdempotencyKey(deps.pool, deps.portOf(ctx).instanceId, idempotencyKey, now - IDEMPOTENCY_RETENTION_MS);
    if (!found) throw new DomainError('JOB_NOT_FOUND', 'no job for this idempotency key', { idempotencyKey });
    ok(ctx, jobStatus(found.job, now));
  });

  router.get('/messages/:id', takes({ passes: notAJob }), async (ctx: Context, next: Next) => {
    const id = String(ctx.params.id ?? '');
    if (!isJobId(id)) return next();
    ok(ctx, jobStatus(await loadJob(deps.portOf(ctx), id), deps.clock.now()));
  });

  router.delete('/messages/:id', takes({ passes: notAJob }), async (ctx: Context, next: Next) => {
    const id = String(ctx.params.id ?? '');
    if (!isJobId(id)) return next();
    await handle.cancel(ctx, deps.portOf(ctx), id);
  });

  // only jobs are requeued (no network message route has this path), so any other id is an unknown job, 404
  // JOB_NOT_FOUND as on the operator's route, not a "no route" 404 for a method the path has
  router.post('/messages/:id/requeue', takes(), async (ctx: Context) => {
    const id = String(ctx.params.id ?? '');
    await handle.requeue(ctx, deps.portOf(ctx), id, '/api/v2/messages/:jobId/requeue');
  });

  return router;
}

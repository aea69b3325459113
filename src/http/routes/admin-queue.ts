/**
 * The operator's view of an instance's queue (the console's Queue panel), mounted behind admin auth:
 *
 *   GET    /admin/v1/instances/:id/queue                        the summary of GET /api/v2/queue
 *   GET    /admin/v1/instances/:id/queue/items                  ?state&limit&cursor, as GET /api/v2/queue/items
 *   POST   /admin/v1/instances/:id/queue/replan                 as POST /api/v2/queue/replan (event reason `operator`)
 *   DELETE /admin/v1/instances/:id/messages/:jobId              cancel, as DELETE /api/v2/messages/:id
 *   POST   /admin/v1/instances/:id/messages/:jobId/requeue      as POST /api/v2/messages/:id/requeue
 *
 * Same shapes, same code: the handlers of src/http/routes/queue.ts, given the port of the instance in the path
 * instead of the key's. A job is looked up within that instance only (another instance's job is 404
 * JOB_NOT_FOUND); an unknown instance is 404 INSTANCE_NOT_FOUND. When the node that runs the instance does not
 * answer, the refusal (502 INSTANCE_UNREACHABLE, 504 INSTANCE_TIMEOUT) names that node and what happened
 * (`data.node`): the console's Queue panel says whose counts are unknown, and why.
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import { createRouter, takes } from '../router.js';
import type { InstancePort } from '../../actors/port.js';
import type { Pool } from '../../store/pool.js';
import type { Clock } from '../../clock.js';
import { ITEMS_QUERY, queueHandlers, type QueueRouteDeps } from './queue.js';
import { existingInstanceId } from '../../store/instances.js';
import { namingOwner } from '../../errors.js';

/** The handler with a refusal of the instance's node named (src/errors.ts namingOwner). */
const named = (f: (ctx: Context) => Promise<void>) => async (ctx: Context): Promise<void> => {
  try {
    await f(ctx);
  } catch (err) {
    throw namingOwner(err);
  }
};

export interface AdminQueueDeps {
  pool: Pool;
  clock: Clock;
  /** the port of an instance by id (this node's own, or one forwarding to its owner) */
  portOf(instanceId: string): InstancePort;
  degradedSince(): number | null;
  /** a requeued media job's source is checked as a send's is (src/http/routes/send.ts) */
  validateMedia: QueueRouteDeps['validateMedia'];
}

export function adminQueueRouter(deps: AdminQueueDeps): Router {
  const router = createRouter();
  const base = '/admin/v1/instances/:id';
  const handle = queueHandlers(deps);

  // the port is found by the id as the gateway keeps it: an upper-case spelling was a false 502 "being handed over"
  const portOf = async (ctx: Context): Promise<InstancePort> => deps.portOf(await existingInstanceId(deps.pool, String(ctx.params.id ?? '')));
  const jobId = (ctx: Context) => String(ctx.params.jobId ?? '');

  router.get(`${base}/queue`, takes(), named(async (ctx) => handle.summary(ctx, await portOf(ctx))));
  router.get(`${base}/queue/items`, takes({ query: ITEMS_QUERY }), named(async (ctx) => handle.items(ctx, await portOf(ctx))));
  router.post(`${base}/queue/replan`, takes(), named(async (ctx) => handle.replan(ctx, await portOf(ctx), 'operator')));
  router.delete(`${base}/messages/:jobId`, takes(), named(async (ctx) => handle.cancel(ctx, await portOf(ctx), jobId(ctx))));
  router.post(`${base}/messages/:jobId/requeue`, takes(), named(async (ctx) =>
    handle.requeue(ctx, await portOf(ctx), jobId(ctx), '/admin/v1/instances/:id/messages/:jobId/requeue')));

  return router;
}

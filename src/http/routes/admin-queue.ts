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
 * JOB_NOT_FOUND); an unknown instance is 404 INSTANCE_NOT_FOUND.
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import { createRouter, takes } from '../router.js';
import type { InstancePort } from '../../actors/port.js';
import type { Pool } from '../../store/pool.js';
import type { Clock } from '../../clock.js';
import { ITEMS_QUERY, queueHandlers } from './queue.js';
import { existingInstanceId } from '../../store/instances.js';

export interface AdminQueueDeps {
  pool: Pool;
  clock: Clock;
  /** the port of an instance by id (this node's own, or one forwarding to its owner) */
  portOf(instanceId: string): InstancePort;
  degradedSince(): number | null;
}

export function adminQueueRouter(deps: AdminQueueDeps): Router {
  const router = createRouter();
  const base = '/admin/v1/instances/:id';
  const handle = queueHandlers(deps);

  // the port is found by the id as the gateway keeps it: an upper-case spelling was a false 502 "being handed over"
  const portOf = async (ctx: Context): Promise<InstancePort> => deps.portOf(await existingInstanceId(deps.pool, String(ctx.params.id ?? '')));
  const jobId = (ctx: Context) => String(ctx.params.jobId ?? '');

  router.get(`${base}/queue`, takes(), async (ctx) => handle.summary(ctx, await portOf(ctx)));
  router.get(`${base}/queue/items`, takes({ query: ITEMS_QUERY }), async (ctx) => handle.items(ctx, await portOf(ctx)));
  router.post(`${base}/queue/replan`, takes(), async (ctx) => handle.replan(ctx, await portOf(ctx), 'operator'));
  router.delete(`${base}/messages/:jobId`, takes(), async (ctx) => handle.cancel(ctx, await portOf(ctx), jobId(ctx)));
  router.post(`${base}/messages/:jobId/requeue`, takes(), async (ctx) =>
    handle.requeue(ctx, await portOf(ctx), jobId(ctx), '/admin/v1/instances/:id/messages/:jobId/requeue'));

  return router;
}

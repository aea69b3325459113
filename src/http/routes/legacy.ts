/**
 * The v1 send routes (SPEC.md "v1 routes (synchronous, frozen)"): POST /api/send-message, /api/send-media and
 * /api/send-bulk. Their answers are frozen byte for byte: every failure is a V1Error whose body the error
 * boundary writes verbatim (`{success:false, error}`, the 504 adds `code` and `data`). GET
 * /api/check-number/:phone lives with the reading routes (reads.ts).
 *
 * Which path a send takes depends on the instance's queue mode:
 * - `pg`: through the persistent queue and wait for the outcome (legacy-queued.ts);
 * - `disabled` / `memory-degraded`: sent at once outside the queue (`queue.direct`, legacy-direct.ts).
 * The decisions SPEC.md leaves open are written down in docs/api-v1.md.
 */
import Router from '@koa/router';
import { createRouter } from '../router.js';
import { entriesApart } from '../body.js';
import type { Context, Middleware } from 'koa';
import type { Config } from '../../config.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import { v1Queues, type InstancePort, type InstanceView } from '../../actors/port.js';
import type { Instance } from '../../store/instances.js';
import type { Pool } from '../../store/pool.js';
import { parseV1Send, type V1Kind } from './legacy-parse.js';
import { keyOutlivedV1, toV1GuardError, toV1SendError } from '../translate.js';
import { requireConnectedOrRestarting, sendThroughQueue } from './legacy-queued.js';
import { sendDirect } from './legacy-direct.js';
import { sendBulk } from './legacy-bulk.js';
import type { V1Waits } from './legacy-waits.js';
import { GateStale, ownNumber, viewOf } from './queue-gate.js';

export interface LegacyRouteDeps {
  /** the port of the request's instance (the API-key guard set ctx.state.instance) */
  portOf(ctx: Context): InstancePort;
  clock: Clock;
  pool: Pool;
  config: Pick<Config, 'LEGACY_SYNC_TIMEOUT_MS' | 'LEGACY_CALLER_TIMEOUT_MS' | 'QUEUE_MAX_PENDING'>;
  /** acceptance-time media check (send.ts SendRouteDeps); v1 send-media has no rule on the source's type */
  validateMedia(instanceId: string, payload: Record<string, unknown>): Promise<unknown>;
  /** where an unexpected error of a v1 route is logged (its answer is the v1 500 `{success:false, error}`) */
  log?: Logger;
  /** a v1 route met a store connection error (the error boundary never sees it): probe the store now */
  onStoreError?: () => void;
  /** the synchronous waits of this node, which a graceful stop ends and answers (legacy-waits.ts) */
  waits?: V1Waits;
  /** the delete of an instance under way on this node (legacy-queued.ts QueuedDeps) */
  deleting?(instanceId: string): boolean;
}

export function legacyRouter(deps: LegacyRouteDeps): Router {
  const router = createRouter('/api');
  router.post('/send-message', v1Route(deps, (ctx) => send(ctx, deps, 'text', '/api/send-message')));
  router.post('/send-media', v1Route(deps, (ctx) => send(ctx, deps, 'media', '/api/send-media')));
  // SPEC.md send-bulk rule 3: an entry with a NUL or a lone surrogate is rejected alone, the others queued
  router.post('/send-bulk', entriesApart('messages'), v1Route(deps, async (ctx) => {
    const port = deps.portOf(ctx);
    const view = await viewOf(port);
    await sendBulk(ctx, deps, port, view, ownNumber(ctx, view));
  }));
  return router;
}

async function send(ctx: Context, deps: LegacyRouteDeps, kind: V1Kind, route: string): Promise<void> {
  const port = deps.portOf(ctx);
  const settings = (ctx.state.instance as Instance).settings;
  // An instance on another node whose owner gates a send itself: the send is prepared with the last view seen
  // and the owner checks, as it accepts, that it may go through the queue and the number it assumed (one ask
  // instead of a view and then the acceptance). Anything else goes the whole way below, with a view of now
  // (the owner's, when it did not take the send as prepared): the answers stay those of a local instance.
  const assumed = port.lastView?.();
  let view: InstanceView | undefined;
  if (assumed && v1Queues(assumed)) {
    const prepared = await (async () => {
      const v1 = parseV1Send(kind, ctx.request.body, ownNumber(ctx, assumed));
      if (kind === 'media') await deps.validateMedia(port.instanceId, v1.parsed.payload);
      return v1;
    })().catch(() => null);
    if (prepared) {
      try {
        return await sendThroughQueue(ctx, deps, port, settings, prepared, route, { phoneNumber: assumed.phoneNumber, v1: true });
      } catch (err) {
        if (!(err instanceof GateStale)) throw err;
        view = err.view;
      }
    }
  }
  view ??= await viewOf(port);
  const v1 = parseV1Send(kind, ctx.request.body, ownNumber(ctx, view));
  requireConnectedOrRestarting(view);
  if (kind === 'media') await deps.validateMedia(port.instanceId, v1.parsed.payload);
  if (view.queueMode !== 'pg') return sendDirect(ctx, deps, port, v1);
  await sendThroughQueue(ctx, deps, port, settings, v1, route);
}

/** Every error of a v1 route leaves as a V1Error (translate.ts): v1 has no codes, most failures collapse into 500. */
function v1Route(deps: LegacyRouteDeps, handler: (ctx: Context) => Promise<void>) {
  return async (ctx: Context): Promise<void> => {
    try {
      await handler(ctx);
    } catch (err) {
      if (keyOutlivedV1(err, ctx.state.authenticated)) throw err;
      throw toV1SendError(err, { log: deps.log, method: ctx.method, path: ctx.path, onStoreError: deps.onStoreError });
    }
  };
}

/**
 * The guard of the v1 routes: a key that cannot be verified while the store is unreachable (503
 * QUEUE_STORE_UNAVAILABLE from the key resolver) is answered in v1's frozen shape, 503 `{success:false, error}`
 * (SPEC.md "v1 send outcomes": 503 means nothing was sent). Every other answer of the guard is unchanged.
 */
export function v1Guard(guard: Middleware): Middleware {
  return async function v1Auth(ctx, next) {
    try {
      await guard(ctx, next);
    } catch (err) {
      throw toV1GuardError(err);
    }
  };
}

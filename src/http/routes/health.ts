/** GET /health: no authentication; counts only, never an instance id or customer data. */
import Router from '@koa/router';
import { createRouter } from '../router.js';

export interface HealthCounts {
  instances: { total: number; online: number; offline: number; starting: number; degraded: number; quarantined: number };
  queue: { degraded: number };
}

export function healthRouter(deps: { version: string; now: () => number; counts: () => HealthCounts }): Router {
  const router = createRouter();
  router.get('/health', (ctx) => {
    const c = deps.counts();
    // The health object is itself the body (SPEC.md "Health object"): success, service, version, timestamp, counts.
    ctx.body = {
      success: true,
      service: 'messaging-gateway',
      version: deps.version,
      timestamp: new Date(deps.now()).toISOString(),
      instances: c.instances,
      queue: c.queue,
    };
  });
  return router;
}

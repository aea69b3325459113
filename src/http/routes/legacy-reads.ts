/**
 * The v1 (frozen) number lookup, `GET /api/check-number/:phone`: the data of the v2 lookup
 * (`/api/v2/contacts/:phone/exists`, src/http/routes/reads.ts), failures as v1 bodies `{success:false, error}`
 * without code or data. It is a v1 route (the v1 family's guard: an unverifiable key is v1's 503), so an ordered
 * restart does not refuse it with v2's `503 QUEUE_PAUSED` (SPEC.md: "applies to /api/v2/* only; v1 routes are
 * accepted and wait"): it waits, within the v1 wait (LEGACY_SYNC_TIMEOUT_MS), for the restart to end, then looks
 * the number up; a restart longer than that is v1's 503, as an instance still not connected.
 */
import type { Context } from 'koa';
import type Router from '@koa/router';
import { createRouter } from '../router.js';
import { ok } from '../envelope.js';
import { keyOutlivedV1, toV1ReadError } from '../translate.js';
import { V1Error, NOT_CONNECTED } from '../errors.js';
import type { Clock } from '../../clock.js';
import type { InstancePort } from '../../actors/port.js';
import { pastRestart } from './legacy-direct.js';
import { lookUp, phoneParam } from './reads.js';

export interface LegacyReadsDeps {
  portOf: (ctx: Context) => InstancePort;
  clock: Clock;
  /** the v1 synchronous wait (config legacyWaitMs) */
  waitMs: number;
}

export function legacyReadsRouter(deps: LegacyReadsDeps): Router {
  const router = createRouter();
  router.get('/api/check-number/:phone', async (ctx) => {
    try {
      const phone = phoneParam(ctx);
      const port = deps.portOf(ctx);
      // an ordered restart longer than the v1 wait: v1's 503, as for an instance still not connected
      if (!(await pastRestart(port, deps.clock, deps.clock.now() + deps.waitMs))) throw new V1Error(503, NOT_CONNECTED);
      ok(ctx, await lookUp(port, phone));
    } catch (err) {
      if (keyOutlivedV1(err, ctx.state.authenticated)) throw err;
      throw toV1ReadError(err);
    }
  });
  return router;
}

/**
 * GET /metrics: the Prometheus exposition of the gateway's series (src/metrics/registry.ts), behind the admin
 * token or METRICS_TOKEN (a scraper need not hold the operator's token). Mounted as an `admin` family by the
 * composition root: `{ name: 'metrics', auth: 'admin', guard: requireMetricsToken(...), router: metricsRouter(...) }`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type Router from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import { createRouter } from '../http/router.js';
import { bearerToken, requireAdmin } from '../http/auth.js';
import type { ActorSystem } from '../actors/system.js';
import type { Pool } from '../store/pool.js';
import type { Clock } from '../clock.js';
import type { GatewayMetrics, InstanceSample, MetricsSources } from './registry.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * The admin token or, when set, METRICS_TOKEN. Anything else is refused as the admin guard refuses it (401,
 * or 403 for an instance key), so /metrics answers like every other operator route.
 */
export function requireMetricsToken(adminToken: string, metricsToken?: string): Middleware {
  const admin = requireAdmin(adminToken);
  const expected = metricsToken ? digest(metricsToken) : null;
  return async function metricsAuth(ctx: Context, next: Next): Promise<void> {
    if (expected && ctx.state.authenticated !== 'admin') {
      let token: string | null = null;
      try {
        token = bearerToken(ctx, 'ADMIN_TOKEN');
      } catch {
        token = null; // the admin guard below answers the missing or malformed header
      }
      if (token !== null && timingSafeEqual(digest(token), expected)) {
        ctx.state.authenticated = 'metrics';
        return next();
      }
    }
    return admin(ctx, next);
  };
}

export interface MetricsRouterDeps {
  metrics: GatewayMetrics;
  pool: Pool;
  actors: Pick<ActorSystem, 'health' | 'describeActors' | 'view'>;
  clock: Clock;
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});

/** The instances this node runs, read from the actor tree's secret-free summaries and each instance's view. */
export function instanceSamples(actors: MetricsRouterDeps['actors']): InstanceSample[] {
  const out: InstanceSample[] = [];
  for (const a of actors.describeActors()) {
    if (a.machine !== 'instance') continue;
    const c = a.context;
    const id = typeof c.instanceId === 'string' ? c.instanceId : null;
    if (!id) continue;
    const view = actors.view(id);
    out.push({
      id,
      status: view.status,
      queueMode: view.queueMode,
      failStreak: view.browser.failStreak,
      recentFailures: num(c.recentFailures),
      restarts: num(obj(c.lastRestart).count),
    });
  }
  return out;
}

export function metricsSources(deps: Omit<MetricsRouterDeps, 'metrics'>): MetricsSources {
  return {
    db: deps.pool,
    now: () => deps.clock.now(),
    health: () => deps.actors.health(),
    instances: () => instanceSamples(deps.actors),
    pool: deps.pool,
  };
}

export function metricsRouter(deps: MetricsRouterDeps): Router {
  const router = createRouter();
  const sources = metricsSources(deps);
  router.get('/metrics', async (ctx) => {
    const text = await deps.metrics.scrape(sources);
    ctx.set('Cache-Control', 'no-store');
    ctx.type = deps.metrics.registry.contentType;
    ctx.body = text;
  });
  return router;
}

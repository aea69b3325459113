/**
 * The gateway's route families, each with its authentication (the guard is the first link of each route's chain,
 * src/http/router.ts): health and the API reference open, the operator API behind the admin token (or the
 * console's cookie), every instance route behind its API key and the instance's port. The composition root
 * (src/gateway.ts) hands in what it built; nothing here starts or stops anything but the console sessions and
 * the presence keep-alives it returns for the root to stop.
 */
import type { Context, Middleware, Next } from 'koa';
import type Router from '@koa/router';
import { legacyWaitMs, type Config } from './config.js';
import type { Clock } from './clock.js';
import type { Logger } from './log.js';
import type { Pool } from './store/pool.js';
import type { RouteFamily, RouteInfo } from './http/router.js';
import type { StoreHealth } from './store/health.js';
import { keyStillValid, requireApiKey, requireKeyStillValid, type KeyResolver } from './http/auth.js';
import { queuePaused } from './errors.js';
import { healthRouter } from './http/routes/health.js';
import { adminInstancesRouter } from './http/routes/admin-instances.js';
import { sendRouter } from './http/routes/send.js';
import { deferGate, gateReached, keepView, viewOf } from './http/routes/queue-gate.js';
import { queueRouter } from './http/routes/queue.js';
import { adminQueueRouter } from './http/routes/admin-queue.js';
import { statusRouter } from './http/routes/status.js';
import { debugRouter } from './http/routes/debug.js';
import type { ActorSystem } from './actors/system.js';
import type { InstancePort, InstanceView } from './actors/port.js';
import type { InstanceAdminService } from './instances.js';
import { getInstance, type Instance } from './store/instances.js';
import type { Cluster } from './cluster/cluster.js';
import { internalRouter, requireCluster } from './http/routes/internal.js';
import { forwardedWaitDropped } from './cluster/lost-callers.js';
import { healthProbe } from './cluster/nodes.js';
import { openApiRouter } from './http/openapi/index.js';
import { cachedFor } from './memo.js';
import { ConsoleSessions, consoleApiRouter, consoleRouter, requireAdminOrConsole } from './console/index.js';
import { metricsRouter, requireMetricsToken, type GatewayMetrics } from './metrics/index.js';
import type { Sandbox } from './sandbox/embed.js';
import { createSandboxControlRouter } from './http/routes/sandbox-control.js';
import type { MediaServices } from './media/services.js';
import { createWebhookAdminRouter } from './http/routes/webhooks.js';
import { createMediaRouter } from './http/routes/media.js';
import { interactionsRouter } from './http/routes/interactions.js';
import { readsRouter } from './http/routes/reads.js';
import { legacyReadsRouter } from './http/routes/legacy-reads.js';
import { groupsRouter } from './http/routes/groups.js';
import { InteractionLimiter } from './http/rate-limit.js';
import { PresenceManager } from './actors/presence.js';
import { legacyRouter, v1Guard } from './http/routes/legacy.js';
import type { V1Waits } from './http/routes/legacy-waits.js';
import { messageMediaRouter } from './http/routes/message-media.js';

/**
 * How long the node that held a v1 caller is given to answer, once the connection of its forwarded wait closed
 * (src/cluster/lost-callers.ts): a SIGKILLed node refuses at once; one that does not answer within this is taken
 * for gone, and its waiting jobs are expired before their slot.
 */
const CALLER_PROBE_MS = 2_000;

/** The most a body of the console's own routes (its sign-in, open to everyone) may hold. */
export const CONSOLE_BODY_LIMIT_BYTES = 16 * 1024;

export interface RouteDeps {
  config: Config;
  clock: Clock;
  log: Logger;
  pool: Pool;
  rt: ActorSystem;
  cluster: Cluster;
  admin: { token: string };
  instances: InstanceAdminService;
  keys: KeyResolver;
  /** the port of an instance: this node's own, or one forwarding to the node that owns it */
  portOfInstance(instanceId: string): InstancePort;
  media: MediaServices;
  store: StoreHealth;
  sandbox: Sandbox | null;
  metrics: GatewayMetrics;
  /** wake an instance's webhook sender */
  wake(instanceId: string): void;
  /** an instance's webhook was replaced, disabled or removed (src/actors/webhook-sender.ts) */
  webhookChanged(instanceId: string): void;
  /** the mounted route table (the API reference is built from it) */
  routes(): RouteInfo[];
  version: string;
  /** the synchronous v1 waits, which the gateway's stop ends and answers first */
  v1Waits: V1Waits;
}

export interface Families {
  families: RouteFamily[];
  consoleSessions: ConsoleSessions;
  presence: PresenceManager;
}

export function gatewayFamilies(deps: RouteDeps): Families {
  const { config, clock, log, pool, rt, cluster, admin, instances, keys, portOfInstance, media, store, sandbox, metrics, wake, webhookChanged, v1Waits } = deps;
  const VERSION = deps.version;
  // the one way into an instance: the port of the instance the request's key names
  // (this node's own, or a port forwarding to the node that owns it)
  const portOf = (ctx: Context): InstancePort => portOfInstance((ctx.state.instance as Instance).id);
  // an instance another node owns: its record read from the store, kept a second (what a forwarding node needs of it)
  const recordOf = cachedFor(1_000, (id: string) => getInstance(pool, id));
  // a deleted instance's key is 401 at once, not a second of 502/503 for a record still remembered
  instances.onKeysChanged(() => recordOf.clear());
  const apiKey = requireApiKey(keys, (id) => rt.record(id) ?? recordOf(id));
  // the operator console signs in with the admin token into an HttpOnly cookie session (src/console)
  const consoleSessions = new ConsoleSessions(clock);
  const adminAuth = requireAdminOrConsole(admin.token, consoleSessions);
  const limiter = new InteractionLimiter(clock, { points: config.INTERACTION_RATE_POINTS });
  const presence = new PresenceManager(clock, { onError: (err, where) => log.warn({ err, ...where }, 'presence keep-alive failed') });
  const networkDeps = { portOf, clock, limiter, presence, fetchMessagesMax: config.FETCH_MESSAGES_MAX };

  // Every route family with its authentication: the guard is part of each route's chain (src/http/router.ts).
  // SPEC.md: during an ordered restart every /api/v2/* route answers 503 QUEUE_PAUSED (v1 routes wait)
  // (the v2 sends leave it to their gate, `sends`, which answers an idempotent retry of a send accepted before
  // as the replay it is: src/http/routes/queue-gate.ts `gatedAccept`)
  const passed = (ctx: Context, view: InstanceView, next: Next, sends: boolean) => {
    if (view.paused && !sends) throw queuePaused();
    // the send routes' gate reads the same view instead of asking again
    keepView(ctx, view);
    if (!view.paused) return next();
    // a send refused before its gate (a route's own check) is answered after the pause, like every other v2 route
    return next().catch((err: unknown) => {
      throw gateReached(ctx) ? err : queuePaused();
    });
  };
  const v2Checked = (ctx: Context, port: InstancePort, next: Next, sends = false): Promise<void> => {
    const view = viewOf(port);
    return view instanceof Promise ? view.then((v) => passed(ctx, v, next, sends)) : passed(ctx, view, next, sends);
  };
  // a requeue is a keyed send (its key derived from the job): its gate answers a repeat as the replay it is, paused or
  // not. Found from the outside: a repeated requeue during an ordered restart was 503 QUEUE_PAUSED on this route
  // and the 200 replay on the operator's
  const isRequeue = (ctx: Context) => ctx.method === 'POST' && ctx.path.endsWith('/requeue');
  const v2Key: Middleware = (ctx, next) => apiKey(ctx, () => v2Checked(ctx, portOf(ctx), next, isRequeue(ctx)));
  // The v2 sends of an instance on another node whose owner gates a send itself: no view is asked first; the
  // send is prepared with the last view seen and the owner checks the gate as it accepts (one ask instead of
  // two: src/http/routes/queue-gate.ts `gatedAccept`). A refusal before that (a route's own check) is answered
  // after the pause, as above.
  const deferredSend = async (ctx: Context, port: InstancePort, view: InstanceView, next: Next) => {
    const deferred = deferGate(ctx, view);
    try {
      await next();
    } catch (err) {
      if (!deferred.settled && (await viewOf(port)).paused) throw queuePaused();
      throw err;
    }
  };
  const v2SendKey: Middleware = (ctx, next) =>
    apiKey(ctx, () => {
      const port = portOf(ctx);
      const view = port.lastView?.();
      return view ? deferredSend(ctx, port, view, next) : v2Checked(ctx, port, next, true);
    });
  // docs/api.md "Requests and answers": these families refuse unknown query parameters and body fields
  const REFUSING = new Set(['v2-queue', 'v2-groups', 'v2-interactions', 'admin-instances', 'admin-webhooks', 'admin-queue']);
  const refusing = (name: string) => (REFUSING.has(name) ? { unknownInputs: 'refused' as const } : {});
  const instanceFamily = (name: string, router: Router, body?: 'stream'): RouteFamily => ({
    name,
    auth: 'instance',
    guard: name === 'v2-send' ? v2SendKey : name.startsWith('v2-') ? v2Key : apiKey,
    // a key rotated while the body was on its way stops the request there (a streamed body: its route checks)
    afterBody: requireKeyStillValid,
    router,
    ...(body ? { body } : {}),
    ...refusing(name),
  });
  const adminFamily = (name: string, router: Router): RouteFamily => ({ name, auth: 'admin', guard: adminAuth, router, ...refusing(name) });
  const consoleDeps = { adminToken: admin.token, sessions: consoleSessions, instances, portOf: portOfInstance, log };
  const families: RouteFamily[] = [
    {
      name: 'health',
      auth: 'none',
      guard: null,
      router: healthRouter({ version: VERSION, now: () => clock.now(), counts: () => ({ instances: rt.health(), queue: { degraded: rt.degradedCount() } }) }),
    },
    { name: 'openapi', auth: 'none', guard: null, router: openApiRouter(deps.routes, VERSION) },
    { name: 'metrics', auth: 'admin', guard: requireMetricsToken(admin.token, config.METRICS_TOKEN), router: metricsRouter({ metrics, pool, actors: rt, clock }) },
    {
      name: 'internal',
      auth: 'cluster',
      guard: requireCluster(config.CLUSTER_SECRET),
      router: internalRouter({
        localPort: (id) => rt.port(id),
        async update(instanceId, replan) {
          const instance = await getInstance(pool, instanceId);
          if (instance) await rt.update(instance, replan);
        },
        stopForDelete: (instanceId) => cluster.forget(instanceId),
        beingDeleted: (instanceId) => cluster.deleting(instanceId),
        waitDropped: (instanceId, jobId) => forwardedWaitDropped({ pool, probe: healthProbe(CALLER_PROBE_MS), localPort: (id) => rt.port(id) }, instanceId, jobId),
        log,
      }),
    },
    adminFamily('admin-instances', adminInstancesRouter(instances)),
    adminFamily('admin-webhooks', createWebhookAdminRouter({ db: pool, clock, wake, receiverChanged: webhookChanged, allowPrivate: config.WEBHOOK_ALLOW_PRIVATE })),
    adminFamily('admin-queue', adminQueueRouter({ pool, clock, portOf: portOfInstance, degradedSince: () => store.since, validateMedia: media.validateAtAcceptance })),
    adminFamily('debug', debugRouter(rt)),
    // its bodies are a sign-in's token (512 characters at most): open to everyone, it reads no more than this
    { name: 'console', auth: 'none', guard: null, router: consoleRouter(consoleDeps), bodyLimit: CONSOLE_BODY_LIMIT_BYTES },
    adminFamily('console-api', consoleApiRouter(consoleDeps)),
    instanceFamily('status', statusRouter({ pool, clock, portOf })),
    instanceFamily('v2-queue', queueRouter({ pool, clock, portOf, degradedSince: () => store.since, validateMedia: media.validateAtAcceptance })),
    instanceFamily('v2-send', sendRouter({ portOf, clock, validateMedia: media.validateAtAcceptance })),
    {
      ...instanceFamily(
        'v1',
        legacyRouter({ portOf, clock, pool, config, log, validateMedia: media.validateAtAcceptance, onStoreError: () => void store.suspect(), waits: v1Waits, deleting: (id) => instances.deleting(id) }),
      ),
      // an API key that cannot be verified while the store is unreachable: 503 in v1's shape
      guard: v1Guard(apiKey),
    },
    // the v1 number lookup: a v1 route (v1's guard; an ordered restart holds it instead of QUEUE_PAUSED)
    { ...instanceFamily('v1-reads', legacyReadsRouter({ portOf, clock, waitMs: legacyWaitMs(config) })), guard: v1Guard(apiKey) },
    instanceFamily('v2-message-media', messageMediaRouter({ portOf, store: media.store })),
    instanceFamily('v2-groups', groupsRouter(networkDeps)),
    instanceFamily('v2-interactions', interactionsRouter(networkDeps)),
    instanceFamily('v2-reads', readsRouter(networkDeps)),
    instanceFamily(
      'v2-media',
      createMediaRouter({ store: media.store, uploadMaxBytes: config.MEDIA_UPLOAD_MAX_BYTES, getInstanceId: (ctx) => (ctx.state.instance as Instance).id, keyStillValid, clock }),
      'stream',
    ),
    ...(sandbox?.network ? [adminFamily('sandbox-control', createSandboxControlRouter(sandbox.network))] : []),
  ];
  return { families, consoleSessions, presence };
}

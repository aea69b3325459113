/**
 * The composition root: store → migrations → sandbox network → actor system → HTTP. `run-main.ts` calls it with
 * the environment; tests call it with their own database, clock and port.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import type { Config } from './config.js';
import { systemClock, type Clock } from './clock.js';
import { createLogger, registerSecret, type Logger } from './log.js';
import { createPool, type Pool, type PoolConfig, type Queryable } from './store/pool.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './store/embedded.js';
import { migrate, newerMigrations } from './store/migrate.js';
import { ensureDataDir, lockDataDir, resolveAdminToken, Unshown, type DataDirLock } from './bootstrap.js';
import { createApp } from './http/app.js';
import { requestHandler } from './http/handler.js';
import { answerClientErrors, serverOptions } from './http/client-error.js';
import { routeTable, type RouteInfo } from './http/router.js';
import { gatewayFamilies } from './gateway-routes.js';
import { V1Waits } from './http/routes/legacy-waits.js';
import { StoreHealth } from './store/health.js';
import { startHousekeeping } from './store/housekeeping.js';
import { watchKeyChanges } from './store/key-changes.js';
import { KeyResolver } from './http/auth.js';
import { ActorSystem } from './actors/system.js';
import { createEventBus } from './actors/events.js';
import { DEADLINES } from './actors/port.js';
import { InstanceAdminService } from './instances.js';
import { getInstance, type Instance } from './store/instances.js';
import { DEMO_LINK_WAIT_MS, DEMO_PHONE, prepareDemo, type Demo } from './demo.js';
import { performance } from 'node:perf_hooks';
import { setTimeout as setTimeoutP } from 'node:timers/promises';
import { Cluster } from './cluster/cluster.js';
import { OWNER_CACHE_MS } from './cluster/owner-cache.js';
import { clusterPorts, defaultNodeId, defaultNodeUrl } from './cluster/wiring.js';
import { createMetrics, type GatewayMetrics } from './metrics/index.js';
import { createSandbox, type Sandbox } from './sandbox/embed.js';
import { createIncomingEvents } from './actors/network-events.js';
import { createMediaServices, type MediaServices } from './media/services.js';
import { driverFactoryFor, forgetInstanceLinks } from './drivers/factory.js';
import type { GroupCommitStats } from './queue/group-commit.js';
import { PACKAGE_ROOT } from './package-root.js';
import { DegradedJournal, journalFile, replayDegradedJournal } from './queue/degraded-journal.js';

/** What a graceful stop gives the synchronous v1 callers to get their answers before it hands the instances over. */
const V1_STOP_ANSWER_MS = 3_000;

export const VERSION: string = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

export interface GatewayOptions {
  config: Config;
  clock?: Clock;
  log?: Logger;
  /** use this database instead of DATABASE_URL / the embedded one (tests) */
  database?: PoolConfig;
  /** listen on config.PORT (default true) */
  listen?: boolean;
  /** tests shorten the instance machine's backoff and timeouts */
  instancePolicy?: Record<string, unknown>;
  /**
   * a stop asked for while starting (src/run-main.ts: SIGTERM, SIGINT): the start goes no further than the step it is
   * on, stops what it started, in reverse, and rejects with the signal's reason
   */
  signal?: AbortSignal;
  /**
   * what the gateway cannot go on from, told once (its embedded database's directory removed or replaced under
   * it): src/run-main.ts stops it and exits 1. Without it, the message is logged at `error` only.
   */
  onFatal?: (message: string) => void;
}

export interface Gateway {
  url: string;
  server: http.Server | null;
  pool: Pool;
  /** the /metrics registry */
  metrics: GatewayMetrics;
  /** the actor system: `actors.port(instanceId)` is the one way into an instance */
  actors: ActorSystem;
  sandbox: Sandbox | null;
  media: MediaServices;
  adminToken: string;
  /** set on the start that generated the admin token, and on every later one until one has shown it (`shown`) */
  adminTokenGenerated: boolean;
  /**
   * set on the start that created the demo instance, and on every later one until one has shown it (`shown`): a
   * later one with a new key (the one made before was stored hashed only, never shown), unless a key was made
   * elsewhere since. `phoneNumber`: the number it is linked as, or this node links it as (its session is here);
   * null when another node runs it unlinked (`node`: which, null when none holds it yet).
   */
  demo: Demo | null;
  /** the operator has seen the admin token and the demo key above (src/run-main.ts's banner): later starts do not show them */
  shown(): void;
  /** every mounted route with its authentication (the route × credential matrix and the fuzzer use it) */
  routes: RouteInfo[];
  /** the node-wide group commit of acceptances: transactions, the instance batches in them, their time (benchmarks) */
  groupCommitStats(): GroupCommitStats;
  log: Logger;
  stop(): Promise<void>;
  /**
   * The stage the graceful stop is waiting on now (`cluster: leaving the cluster`, `database: closing the pool`):
   * null before stop() was called, `stopped` once it finished. src/run-main.ts names it when a stop overruns
   * STOP_TIMEOUT_MS. A fixed text of this code, never a value (no secret can be in it).
   */
  stopStage(): string | null;
}


export async function startGateway(opts: GatewayOptions): Promise<Gateway> {
  await ensureDataDir(opts.config.DATA_DIR);
  // before anything in it is touched: the embedded database's files, its socket, the sandbox's state
  const dataDirLock = await lockDataDir(opts.config.DATA_DIR, { onLost: (message) => opts.log?.error(message) });
  /** what the start has started so far, stopped in reverse when a stop cuts it short */
  const started: (() => Promise<void> | void)[] = [];
  try {
    return await startInDataDir(opts, dataDirLock, started);
  } catch (err) {
    // a failed start ends the process at once (src/run-main.ts), as before; a stopped one stops what it started first
    if (opts.signal?.aborted) {
      for (const stop of started.reverse()) {
        try {
          await stop();
        } catch (e) {
          opts.log?.warn({ err: e }, 'stopping what the start began failed');
        }
      }
    }
    await dataDirLock.release();
    throw err;
  }
}

async function startInDataDir(opts: GatewayOptions, dataDirLock: DataDirLock, started: (() => Promise<void> | void)[]): Promise<Gateway> {
  const { config } = opts;
  const goOn = () => opts.signal?.throwIfAborted();
  goOn();
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger({ level: config.LOG_LEVEL });

  // ---- store
  let embedded: EmbeddedPostgres | null = null;
  let dbConfig: PoolConfig;
  if (opts.database) dbConfig = opts.database;
  else if (config.DATABASE_URL) dbConfig = { connectionString: config.DATABASE_URL };
  else {
    log.info('starting embedded PostgreSQL (a first start takes 30–40 s)');
    embedded = await startEmbeddedPostgres(config.DATA_DIR, {
      onGone: (message) => (opts.onFatal ? opts.onFatal(message) : log.error(message)),
    });
    const db = embedded;
    started.push(() => db.stop());
    goOn();
    // One connection: PGlite runs one query at a time and its socket server mixes up interleaved
    // extended-protocol messages of concurrent connections ("portal does not exist").
    dbConfig = { ...embedded.connection, max: 1 };
  }
  const pool = createPool(dbConfig);
  started.push(() => pool.end());
  log.info('migrating the database');
  await migrate(pool);
  const newer = await newerMigrations(pool);
  if (newer.length > 0) {
    log.warn({ migrations: newer }, 'the database was migrated by a newer version of the gateway: this older one runs on a schema it does not know; upgrade it (every node of a cluster runs one version)');
  }
  goOn();
  let actors: ActorSystem | null = null;
  const wake = (instanceId: string) => void actors?.webhooks.notify(instanceId);
  const webhookChanged = (instanceId: string) => actors?.webhooks.receiverChanged(instanceId);
  const events = createEventBus({ pool, clock, wake });
  // sends an earlier process made while the store was away, and outcomes it knew, that it did not get to write
  // back: into the store before any queue reads it (src/queue/degraded-journal.ts)
  const journalPath = journalFile(config.DATA_DIR);
  await replayDegradedJournal(pool, journalPath, clock.now(), log, events.emit);
  const journal = new DegradedJournal(journalPath);
  started.push(() => journal.close());
  goOn();

  const unshown = await Unshown.read(config.DATA_DIR);
  const admin = await resolveAdminToken(config.DATA_DIR, config.ADMIN_TOKEN, unshown);
  // the token is this node's own, in its DATA_DIR: the other nodes of a cluster refuse it (found from the outside:
  // two nodes started without ADMIN_TOKEN each printed its own, valid on that node alone)
  if (config.CLUSTER_SECRET && !config.ADMIN_TOKEN) {
    log.warn({ file: path.join(config.DATA_DIR, 'admin-token') }, 'ADMIN_TOKEN is not set: this node\'s admin token is its own, and the other nodes of the cluster refuse it; set the same ADMIN_TOKEN on every node');
  }
  registerSecret(admin.token);
  // the other bearer tokens are secrets as much (found from the outside: either, sent as X-Request-Id or in a
  // request's path, was written to the request's log line as it came, where the admin token was masked)
  for (const secret of [config.METRICS_TOKEN, config.CLUSTER_SECRET]) if (secret) registerSecret(secret);

  // ---- the network side
  const sandbox = config.SANDBOX === 'off' ? null : await createSandbox({ config, clock, log });
  if (sandbox) started.push(() => sandbox.close());
  goOn();
  const driverFactory = driverFactoryFor({ config, clock, log, sandbox, pool });

  const store = new StoreHealth({ pool, clock, log });

  // ---- media, events, actors
  const media = createMediaServices({ pool, clock, config, log });
  const metrics = createMetrics();
  actors = new ActorSystem({
    pool,
    clock,
    log,
    driverFactory,
    dataDir: config.DATA_DIR,
    callTimeoutMs: config.DRIVER_CALL_TIMEOUT_MS,
    maxPending: config.QUEUE_MAX_PENDING,
    orderedRestartHardMs: config.ORDERED_RESTART_HARD_MS,
    events,
    resolveMedia: media.resolveForDispatch,
    incoming: createIncomingEvents({ pool, clock, log, events, media, downloadTimeoutMs: DEADLINES.read, store, metrics: metrics.instanceEvents }),
    webhookAllowPrivate: config.WEBHOOK_ALLOW_PRIVATE,
    store,
    journal,
    ...(opts.instancePolicy ? { instancePolicy: opts.instancePolicy } : {}),
    // every write of an instance's queue is made under this node's lease of it (src/cluster/leases.ts)
    fence: (instanceId: string, q: Queryable): Promise<void> => cluster.writeFence.fence(instanceId, q),
    leaseOf: (instanceId: string) => cluster.writeFence.leaseOf(instanceId),
    fenceMany: (q: Queryable, instanceIds: readonly string[]) => cluster.writeFence.fenceMany(q, instanceIds),
    leasesOf: (instanceIds: readonly string[]) => cluster.writeFence.leasesOf(instanceIds),
    nodeId: defaultNodeId(config),
    metrics,
  });
  const rt: ActorSystem = actors;
  // membership, leases and placement: which instances this node runs (all of them when it is alone)
  // the rounds' own connection (a second pool of at most two), except on a database of one connection, the
  // embedded PostgreSQL's (here, or a test's): it takes one connection only (PGlite's socket server mixes up the
  // messages of concurrent ones), and only one node can use it anyway
  const oneNode = embedded !== null || dbConfig.max === 1;
  const leasePool = oneNode ? pool : createPool({ ...dbConfig, max: 2 });
  if (leasePool !== pool) started.push(() => leasePool.end());
  const cluster: Cluster = new Cluster({
    pool,
    leasePool,
    log,
    node: { id: defaultNodeId(config), url: '', capacity: config.NODE_CAPACITY },
    secret: config.CLUSTER_SECRET,
    ttlMs: config.LEASE_TTL_MS,
    local: rt,
    clock: () => clock.now(),
  });
  const { portOf: portOfInstance, actors: placed } = clusterPorts(rt, cluster, config.CLUSTER_SECRET, config.DRIVER_CALL_TIMEOUT_MS + DEADLINES.operator);
  rt.start();
  started.push(() => rt.stop());
  store.start();
  started.push(() => store.stop());
  const stopHousekeeping = startHousekeeping({ pool, clock, log });
  started.push(stopHousekeeping);
  goOn();
  const instances = new InstanceAdminService({ pool, actors: placed, clock, nodes: cluster, log, sandboxOff: sandbox === null, forget: (id) => forgetInstanceLinks({ config, clock, log, sandbox, pool }, id).catch((err: unknown) => {
    // the instance is deleted all the same: what is left on disk is the operator's to remove
    log.warn({ err, instanceId: id }, 'removing a deleted instance\'s link kept on this node failed');
  }) });

  // ---- demo instance on an empty store (or the one an earlier start made and did not get to show or link)
  const { demo, linkDemo } = sandbox ? await prepareDemo({ pool, unshown, log, create: config.DEMO_INSTANCE }) : { demo: null, linkDemo: null };
  // the link must be known before the instance's session first starts (cluster.start, below); a session linked
  // already (a start that failed after it) keeps its link
  if (linkDemo !== null) sandbox?.setAutoLink(linkDemo, DEMO_PHONE);

  goOn();
  // ---- HTTP
  const keys = new KeyResolver(pool, clock);
  instances.onKeysChanged((ids) => (ids ? keys.forget(ids) : keys.reverifyAll()));
  // other nodes on the same database rotate keys and delete instances too: hear of it at once. Not on a database
  // of one connection (`oneNode`): one node only, whose changes are its own
  keys.setWatched(oneNode);
  const keyWatch = oneNode ? null : watchKeyChanges({
    connection: dbConfig, clock, log,
    changed: (ids) => instances.keysChanged(ids),
    watching: (on) => keys.setWatched(on),
  });
  if (keyWatch) started.push(() => keyWatch.stop());
  const v1Waits = new V1Waits();
  const { families, consoleSessions, presence } = gatewayFamilies({
    config, clock, log, pool, rt, cluster, admin, instances, keys, portOfInstance, media, store, sandbox, metrics, wake, webhookChanged, v1Waits,
    routes: () => routes,
    version: VERSION,
  });
  const app = createApp({ log, families, onStoreError: () => void store.suspect(), storeDegraded: () => store.degraded });
  const routes = routeTable(families);

  let server: http.Server | null = null;
  let url = '';
  if (opts.listen !== false) {
    server = http.createServer(serverOptions, requestHandler(app));
    server.keepAliveTimeout = 65_000;
    answerClientErrors(server);
    await new Promise<void>((resolve, reject) => {
      server?.once('error', reject);
      server?.listen(config.PORT, config.HOST, () => resolve());
    });
    const listening = server;
    started.push(() => new Promise<void>((resolve) => {
      listening.close(() => resolve());
      listening.closeAllConnections();
    }));
    const addr = server.address() as AddressInfo;
    url = `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`;
  }
  // join (or form) the cluster: this node takes the instances placed on it
  goOn();
  started.push(() => cluster.stop());
  await cluster.start(defaultNodeUrl(config, url.replace('//0.0.0.0:', '//127.0.0.1:')));
  goOn();
  // the instances the first round found placed here, on their way in (the actors count them once they are taken;
  // found by the outside README probe: this line said 0 beside a demo instance just created)
  log.info({ instances: cluster.instancesHere, node: cluster.nodeId }, 'instances starting');
  // the banner says "linked as" only of a demo that is linked: with a shared database another node may run it,
  // unlinked, and with a sandbox network that does not answer this node's own does not link (both found by the
  // outside probes); this node's own links in a moment on a sandbox that answers: waited for, a few seconds at most
  if (demo) {
    const id = demo.instance.id;
    const node = await cluster.nodeOf(id);
    demo.node = node;
    demo.phoneNumber = (await getInstance(pool, id))?.phoneNumber ?? null;
    if (demo.phoneNumber === null && node === cluster.nodeId) {
      for (const until = performance.now() + DEMO_LINK_WAIT_MS; !rt.view(id).connected && performance.now() < until;) await setTimeoutP(50);
      const view = rt.view(id);
      if (view.connected) demo.phoneNumber = view.phoneNumber ?? DEMO_PHONE;
      else demo.notLinked = view.lastError ?? view.status;
    }
  }

  let stopped = false;
  let stage: string | null = null;
  const enter = (name: string) => {
    stage = name;
  };
  return {
    url,
    server,
    pool,
    actors: rt,
    metrics,
    sandbox,
    media,
    adminToken: admin.token,
    adminTokenGenerated: admin.generated,
    demo,
    shown: () => unshown.shown({ adminToken: admin.generated, demo: demo !== null }),
    routes,
    groupCommitStats: () => rt.groupCommit.snapshot(),
    log,
    stopStage: () => stage,
    async stop() {
      if (stopped) return;
      stopped = true;
      // keep-alive clients (other nodes, load balancers) would hold their sockets open: each answer from now on
      // closes its connection, so that the client learns it from the answer, not from a connection closed
      // under a request on its way (idle ones are closed once the server stops listening, below)
      server?.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => res.setHeader('Connection', 'close'));
      // One node alone stops accepting at once. Nodes of a cluster go on listening while they hand their
      // instances over, and until the others have looked the new owners up (OWNER_CACHE_MS): an ask another
      // node forwards here meanwhile is answered (by the instance, else "not here": it asks the new owner), never
      // refused by a closed port or lost on a connection closed as it was written.
      const clustered = config.CLUSTER_SECRET !== undefined;
      let closing = Promise.resolve();
      let idle: NodeJS.Timeout | undefined;
      const stopListening = () => {
        // stop accepting and close the idle connections (node's close does both), then the others as they idle
        closing = server ? new Promise<void>((resolve) => server?.close(() => resolve())) : Promise.resolve();
        idle = setInterval(() => server?.closeIdleConnections(), 250);
        idle.unref();
      };
      if (!clustered) stopListening();
      // every synchronous v1 caller gets its answer while the instances are still here (legacy-waits.ts)
      enter('http: answering the waiting v1 callers');
      await v1Waits.stop(V1_STOP_ANSWER_MS);
      presence.stopAll();
      // open console event streams end before the server closes
      consoleSessions.close();
      store.stop();
      stopHousekeeping();
      // hand every instance over (in-flight dispatches finish and persist), leave the cluster, stop the actors
      await cluster.stop(enter);
      if (clustered) {
        enter('cluster: letting the other nodes look the new owners up');
        await new Promise((r) => setTimeout(r, OWNER_CACHE_MS + 250));
        stopListening();
      }
      await rt.stop(enter);
      media.stop();
      // what is still open after the actors stopped is a request that can no longer be answered well: close it
      enter('http: closing the server');
      await Promise.race([closing, new Promise((r) => setTimeout(r, 2_000).unref())]);
      if (idle) clearInterval(idle);
      server?.closeAllConnections();
      await closing;
      enter('sandbox: closing the network');
      await sandbox?.close();
      enter('database: stopping the key-change watch');
      await keyWatch?.stop();
      enter('database: closing the lease pool');
      if (leasePool !== pool) await leasePool.end();
      journal.close();
      enter('database: closing the pool');
      await pool.end();
      enter('database: stopping the embedded PostgreSQL');
      await embedded?.stop();
      enter('releasing the data directory');
      await dataDirLock.release();
      enter('stopped');
    },
  };
}

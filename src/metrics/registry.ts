/**
 * The gateway's Prometheus series (prom-client), one registry per gateway (tests run several in one process).
 *
 * Two kinds of series:
 * - observed as things happen, through the hooks the queue and the webhook sender call (`queue`, `webhooks`:
 *   plain callbacks, so neither imports prom-client): acceptance latency, dispatch call time and lateness,
 *   dispatch outcomes, webhook attempts and delivery lag. These count what this process did since it started.
 * - read at each scrape (`collect`): jobs by state and the outbox from cheap SQL reads (the whole database,
 *   the same on every node), instance states, failStreak, restarts and queue modes from the actors' snapshots,
 *   and the PostgreSQL pool's use. A scrape never fails because the store is unreachable: the SQL series keep
 *   their last values and `mgw_store_up` turns 0.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { QueueMetrics } from '../queue/types.js';
import type { WebhookMetrics } from '../webhooks/deliver.js';
import type { HeldEventsMetrics } from '../actors/held-events.js';
import { storeFaults, type Queryable } from '../store/pool.js';
import { PENDING_JOB_STATES } from '../../machines/job.machine.js';

/** Job states (sql/0001_init.sql): every one is answered, 0 when no job is in it. */
export const JOB_STATES = ['queued', 'scheduled', 'sending', 'sent', 'failed', 'unknown', 'cancelled', 'expired'] as const;
const QUEUE_MODES = ['pg', 'memory-degraded', 'disabled'] as const;

/** How long after a store fault mgw_store_fault_recent stays 1 (a scrape interval or four of Prometheus's default). */
export const STORE_FAULT_RECENT_MS = 60_000;

/**
 * mgw_jobs: the jobs that ended from the totals a trigger keeps per instance and state (sql/0018_outcome_totals.sql,
 * 0020_terminal_totals.sql), the waiting and sending ones (the job machine's pending states) counted per instance
 * and state, each a range of jobs_instance_state. `SELECT state, count(*) FROM jobs GROUP BY state` read every job ever kept on every scrape:
 * 170 ms of PostgreSQL for 1,060,000 jobs, growing with each message sent; this reads the instances, their totals
 * and the jobs in flight (2.5 ms there). Each state is a constant of its own subquery, not a parameter: PostgreSQL
 * then estimates a probe from that state's share of the table (small), where with the state as a parameter it
 * took a probe for a third of one instance's jobs and, on a table where one instance holds nearly every job,
 * read the whole table once per instance and state. Jobs of an instance no longer there (left behind by a
 * version before 0012) are not counted.
 */
export const JOBS_BY_STATE = `SELECT v.state, sum(v.n)::float8 AS n
     FROM instances i CROSS JOIN LATERAL (VALUES ${PENDING_JOB_STATES.map(
       (s) => `('${s}', (SELECT count(*) FROM jobs j WHERE j.instance_id = i.id AND j.state = '${s}'))`,
     ).join(', ')}) AS v(state, n)
    GROUP BY v.state
   UNION ALL
   SELECT state, sum(n)::float8 FROM job_outcome_totals GROUP BY state`;

/** Jobs by state, every instance (mgw_jobs): a state no job is in is absent. */
export async function readJobsByState(q: Queryable): Promise<Map<string, number>> {
  const { rows } = await q.query<{ state: string; n: number }>(JOBS_BY_STATE);
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.state, (counts.get(r.state) ?? 0) + Number(r.n));
  return counts;
}

const INSTANCE_STATUSES = ['initializing', 'waiting_qr', 'authenticated', 'connected', 'disconnected', 'error'] as const;
const HEALTH = ['online', 'offline', 'starting', 'degraded', 'quarantined'] as const;

/** One instance as the scrape reads it from the actor system (secret-free). */
export interface InstanceSample {
  id: string;
  status: string;
  queueMode: string;
  failStreak: number;
  recentFailures: number;
  restarts: number;
}

/** What a scrape reads; the composition root gives it (src/metrics/router.ts builds it from the gateway's parts). */
export interface MetricsSources {
  db: Queryable;
  now(): number;
  /** health buckets of the Health object (ActorSystem.health()) */
  health(): Partial<Record<(typeof HEALTH)[number], number>> & { total: number };
  instances(): InstanceSample[];
  pool: { totalCount: number; idleCount: number; waitingCount: number } | null;
}

export interface GatewayMetrics {
  registry: Registry;
  /** the hook for WorkerDeps.metrics */
  queue: QueueMetrics;
  /** the hook for WebhookSenderOptions.metrics */
  webhooks: WebhookMetrics;
  /** the hook for the instance events held through a store outage (src/actors/held-events.ts) */
  instanceEvents: HeldEventsMetrics;
  /** bring the scrape-time series up to date, then answer the exposition text */
  scrape(sources: MetricsSources): Promise<string>;
}

/**
 * How often the event-loop lag (`nodejs_eventloop_lag_*`) is sampled. prom-client's default, 10 ms, wakes an
 * idle process 200 times a second: measured here, a bare node process with the default metrics used 0.95 % of
 * a core idle, 0.51 % with 100 ms and 0.39 % without them. A stall of the loop still shows: every sample
 * records how late its timer fired, to the nanosecond.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

const seconds = (ms: number) => Math.max(0, ms) / 1000;

export function createMetrics(opts: { prefix?: string; defaultMetrics?: boolean } = {}): GatewayMetrics {
  const p = opts.prefix ?? 'mgw_';
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  const registers = [registry];

  const acceptance = new Histogram({
    name: `${p}acceptance_seconds`,
    help: 'Acceptance of a send: from the offer to the planner to its answer (the batch committed), by outcome (accepted, replay, refused)',
    labelNames: ['outcome'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers,
  });
  const groupCommit = new Histogram({
    name: `${p}group_commit_seconds`,
    help: "A node-wide group commit of acceptances, from its start to its outcome: PostgreSQL's share of an acceptance's answer (its requests: mgw_group_commit_requests_total)",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers,
  });
  const groupRequests = new Counter({ name: `${p}group_commit_requests_total`, help: 'Acceptance requests in the node-wide group commits (committed or not)', registers });
  const dispatchCall = new Histogram({
    name: `${p}dispatch_call_seconds`,
    help: 'The network call of a dispatch, by outcome (confirmed, assumed, failed, unknown; returned: never reached the network)',
    labelNames: ['outcome'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers,
  });
  const lateness = new Histogram({
    name: `${p}dispatch_lateness_seconds`,
    help: 'How long after its planned slot a job was claimed for dispatch (queue clock)',
    buckets: [0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
    registers,
  });
  const dispatches = new Counter({
    name: `${p}dispatches_total`,
    help: 'Dispatches ended in this process, by outcome',
    labelNames: ['outcome'],
    registers,
  });
  const webhookAttempts = new Histogram({
    name: `${p}webhook_attempt_seconds`,
    help: 'Webhook delivery attempts by result (delivered, retry: failed with another attempt to come, failed: the last attempt failed)',
    labelNames: ['result'],
    buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const webhookLag = new Histogram({
    name: `${p}webhook_delivery_lag_seconds`,
    help: 'From an event to its delivery to the receiver (queue clock)',
    buckets: [0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
    registers,
  });

  const eventsHeld = new Gauge({ name: `${p}instance_events_held`, help: 'Instance events (network and lifecycle) held in memory because the store could not take them, written once it answers', registers });
  const eventsHeldBytes = new Gauge({ name: `${p}instance_events_held_bytes`, help: "The held instance events' payloads (JSON bytes)", registers });
  const eventsDropped = new Counter({ name: `${p}instance_events_dropped_total`, help: 'Instance events dropped because the store could not take them and the events held in memory reached their bound', registers });
  const jobs = new Gauge({ name: `${p}jobs`, help: 'Jobs in the database by state (all instances, all nodes)', labelNames: ['state'], registers });
  const outboxPending = new Gauge({ name: `${p}outbox_pending`, help: 'Webhook events not yet delivered or finally failed (all instances)', registers });
  const outboxOldest = new Gauge({ name: `${p}outbox_oldest_pending_seconds`, help: 'Age of the oldest pending webhook event (0: none)', registers });
  const storeUp = new Gauge({ name: `${p}store_up`, help: '1 when the last scrape could read PostgreSQL, else 0 (the SQL series keep their last values)', registers });
  const instances = new Gauge({ name: `${p}instances`, help: 'Instances run by this node, by status', labelNames: ['status'], registers });
  const health = new Gauge({ name: `${p}instances_health`, help: 'Instances run by this node, by health bucket of /health', labelNames: ['health'], registers });
  const queueMode = new Gauge({ name: `${p}queue_mode_instances`, help: 'Instances run by this node, by queue mode', labelNames: ['mode'], registers });
  const failStreak = new Gauge({ name: `${p}instance_browser_fail_streak`, help: 'Session failures in a row of an instance (reset after a stable connection)', labelNames: ['instance'], registers });
  const recentFailures = new Gauge({ name: `${p}instance_recent_failures`, help: 'Session failures of an instance within the quarantine window (each is followed by a restart)', labelNames: ['instance'], registers });
  const restarts = new Gauge({ name: `${p}instance_restarts`, help: 'Ordered restarts of an instance since its actor started', labelNames: ['instance'], registers });
  const poolConns = new Gauge({ name: `${p}pg_pool_connections`, help: 'PostgreSQL pool connections by state (total, idle)', labelNames: ['state'], registers });
  const poolWaiting = new Gauge({ name: `${p}pg_pool_waiting`, help: 'Queries waiting for a PostgreSQL pool connection', registers });
  const storeFaultsTotal = new Counter({
    name: `${p}store_faults_total`,
    help: 'Statements PostgreSQL failed for a reason of its own (a full disk, no memory, its files gone or damaged): mgw_store_up and /health do not see these, as PostgreSQL still answers',
    registers,
  });
  const storeFaultRecent = new Gauge({ name: `${p}store_fault_recent`, help: `1 when a statement failed for PostgreSQL's own reason within the last ${STORE_FAULT_RECENT_MS / 1000} s (mgw_store_faults_total), else 0`, registers });
  /** the faults counted into storeFaultsTotal so far */
  let faultsCounted = 0;

  const queue: QueueMetrics = {
    accepted: (outcome, ms) => acceptance.observe({ outcome }, seconds(ms)),
    dispatched: (outcome, callMs, lateMs) => {
      dispatches.inc({ outcome });
      dispatchCall.observe({ outcome }, seconds(callMs));
      if (outcome !== 'returned') lateness.observe(seconds(lateMs));
    },
    committed: (ms, requests) => {
      groupCommit.observe(seconds(ms));
      groupRequests.inc(requests);
    },
  };
  const webhooks: WebhookMetrics = {
    attempted: (result, ms, lagMs) => {
      webhookAttempts.observe({ result }, seconds(ms));
      if (lagMs !== null) webhookLag.observe(seconds(lagMs));
    },
  };
  const instanceEvents: HeldEventsMetrics = {
    held: (events, bytes) => {
      eventsHeld.set(events);
      eventsHeldBytes.set(bytes);
    },
    dropped: (n) => eventsDropped.inc(n),
  };
  eventsHeld.set(0);
  eventsHeldBytes.set(0);
  // the labelled series exist from the start, so that rate() and the dashboard see 0 rather than nothing
  for (const outcome of ['accepted', 'replay', 'refused']) acceptance.zero({ outcome });
  for (const outcome of ['confirmed', 'assumed', 'failed', 'unknown', 'returned']) {
    dispatchCall.zero({ outcome });
    dispatches.inc({ outcome }, 0);
  }
  for (const result of ['delivered', 'retry', 'failed']) webhookAttempts.zero({ result });

  async function readStore(sources: MetricsSources): Promise<void> {
    const counts = await readJobsByState(sources.db);
    for (const state of JOB_STATES) jobs.set({ state }, counts.get(state) ?? 0);
    const outbox = await sources.db.query<{ n: string; oldest: string | null }>(
      `SELECT count(*) AS n, (extract(epoch FROM min(created_at)) * 1000)::float8 AS oldest FROM outbox WHERE state = 'pending'`,
    );
    const row = outbox.rows[0];
    outboxPending.set(Number(row?.n ?? 0));
    outboxOldest.set(row?.oldest == null ? 0 : seconds(sources.now() - Number(row.oldest)));
  }

  function readActors(sources: MetricsSources): void {
    const h = sources.health();
    for (const bucket of HEALTH) health.set({ health: bucket }, h[bucket] ?? 0);
    const list = sources.instances();
    const byStatus = new Map<string, number>();
    const byMode = new Map<string, number>();
    // instances that went away leave no stale series behind
    failStreak.reset();
    recentFailures.reset();
    restarts.reset();
    for (const i of list) {
      byStatus.set(i.status, (byStatus.get(i.status) ?? 0) + 1);
      byMode.set(i.queueMode, (byMode.get(i.queueMode) ?? 0) + 1);
      failStreak.set({ instance: i.id }, i.failStreak);
      recentFailures.set({ instance: i.id }, i.recentFailures);
      restarts.set({ instance: i.id }, i.restarts);
    }
    for (const status of new Set<string>([...INSTANCE_STATUSES, ...byStatus.keys()])) instances.set({ status }, byStatus.get(status) ?? 0);
    for (const mode of new Set<string>([...QUEUE_MODES, ...byMode.keys()])) queueMode.set({ mode }, byMode.get(mode) ?? 0);
    if (sources.pool) {
      poolConns.set({ state: 'total' }, sources.pool.totalCount);
      poolConns.set({ state: 'idle' }, sources.pool.idleCount);
      poolWaiting.set(sources.pool.waitingCount);
      const faults = storeFaults(sources.pool);
      if (faults.total > faultsCounted) storeFaultsTotal.inc(faults.total - faultsCounted);
      faultsCounted = Math.max(faultsCounted, faults.total);
      storeFaultRecent.set(faults.lastAt !== null && performance.now() - faults.lastAt <= STORE_FAULT_RECENT_MS ? 1 : 0);
    }
  }

  return {
    registry,
    queue,
    webhooks,
    instanceEvents,
    async scrape(sources) {
      readActors(sources);
      try {
        await readStore(sources);
        storeUp.set(1);
      } catch {
        storeUp.set(0);
      }
      return registry.metrics();
    },
  };
}

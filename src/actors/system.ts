/**
 * The actor system of one gateway process: the supervisor (machines/supervisor.machine.ts) and, per instance,
 * the instance actor (machines/instance.machine.ts) with its children session, planner, dispatcher and webhook
 * sender. This module provides the machines' logics with their dependencies and gives the rest of the gateway
 * the one way in: `port(instanceId)`, an InstancePort (src/actors/port.ts). It holds no driver and no queue:
 * those live in the session and planner actors.
 *
 * What it keeps besides the actors is the registry of instance records (the settings the planner reads, the
 * number and settings incoming events are written with), so that what an operator changed is seen at once.
 */
import { createActor, type Actor, type AnyActorRef, type InspectionEvent } from 'xstate';
import { supervisorMachine, shardMachine, instanceActorId, SYSTEM_IDS } from '../../machines/supervisor.machine.js';
import { HealthTally } from './health-tally.js';
import { instanceMachine, healthCounts, viewOf, stoppedView, type InstanceSnapshot, type NotifyParams, type TraceParams, type HealthCounts, type InstanceInput, type InstanceView } from '../../machines/instance.machine.js';
import { createSessionLogic, type Sessions } from './session.js';
import { createWebhookSenders, type WebhookSenders } from './webhook-sender.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { claimPool, type Pool, type Queryable } from '../store/pool.js';
import { startCall } from '../queue/sql/startCall.js';
import type { Instance } from '../store/instances.js';
import type { DriverFactory } from '../drivers/contract.js';
import { lifecycleCommand, networkCommand, type IncomingEvents } from './network-events.js';
import { logLifecycle } from './lifecycle-log.js';
import type { MediaResolver } from '../queue/dispatch.js';
import type { EventBus } from './events.js';
import type { StoreHealth } from '../store/health.js';
import type { LeaseRef, QueueMetrics } from '../queue/types.js';
import type { WebhookMetrics } from '../webhooks/deliver.js';
import { createReplies, LocalInstancePort, type Replies } from './local-port.js';
import { createPlanners, type Planners } from './planner.js';
import { AcceptanceCommitter } from '../queue/group-commit.js';
import type { InstanceLeaseRef } from '../queue/sql/insertJobsFenced.js';
import { QUEUED_EVENT } from '../queue/acceptance.js';
import { QueueStarts } from '../queue/starts.js';
import type { DegradedJournal } from '../queue/degraded-journal.js';
import { createDispatcherLogic } from './dispatcher.js';
import { DEADLINES, type InstancePort } from './port.js';
import { describeActors, type ActorSummary } from './describe.js';

export interface ActorSystemDeps {
  pool: Pool;
  clock: Clock;
  log: Logger;
  /** the driver factory for an instance's driver kind */
  driverFactory: (kind: Instance['driver']) => DriverFactory;
  dataDir: string;
  callTimeoutMs: number;
  maxPending: number;
  orderedRestartHardMs: number;
  events: EventBus;
  resolveMedia: MediaResolver;
  /** the one way out for every network and lifecycle event of an instance (webhooks, statistics) */
  incoming: IncomingEvents;
  webhookAllowPrivate: boolean;
  /** machine policy overrides (tests shorten backoff) */
  instancePolicy?: Partial<InstanceInput>;
  inspect?: (ev: InspectionEvent) => void;
  store: StoreHealth;
  /** the write fence of an instance's lease (src/cluster/cluster.ts) */
  fence?: (instanceId: string, q: Queryable) => Promise<void>;
  /** the lease this node holds of an instance (src/cluster/cluster.ts), for a write fenced in one statement */
  leaseOf?: (instanceId: string) => LeaseRef | null;
  /** the same for many instances at once, for the node-wide group commit of acceptances */
  fenceMany?: (q: Queryable, instanceIds: readonly string[]) => Promise<Set<string>>;
  /** the leases this node holds of these instances, for the group commit's statement that fences itself */
  leasesOf?: (instanceIds: readonly string[]) => InstanceLeaseRef[];
  /** this node's id among several (shown by /debug/actors) */
  nodeId?: string;
  /** the hooks of /metrics (src/metrics) */
  metrics?: { queue: QueueMetrics; webhooks: WebhookMetrics };
  /** where sends made outside the store are kept on disk (src/queue/degraded-journal.ts) */
  journal?: DegradedJournal;
}

type InstanceLogic = ReturnType<typeof instanceMachine.provide>;

/**
 * The supervisor spawns an instance actor with `{instanceId}` only; the gateway's policy (ORDERED_RESTART_HARD_MS,
 * a test's shorter backoff) joins that input here, the instance's own fields winning. Every snapshot an
 * instance actor makes, its first and each after a transition, is shown to the health tally.
 */
function withInput(logic: InstanceLogic, policy: Partial<InstanceInput>, tally: HealthTally): InstanceLogic {
  const wrapped = Object.create(logic) as InstanceLogic;
  wrapped.getInitialSnapshot = (scope, input) => {
    const first = logic.getInitialSnapshot(scope, { ...policy, ...input } as InstanceInput);
    tally.seen(first);
    return first;
  };
  wrapped.transition = (snapshot, event, scope) => {
    const next = logic.transition(snapshot, event, scope);
    tally.seen(next);
    return next;
  };
  return wrapped;
}

export class ActorSystem {
  private readonly records = new Map<string, Instance>();
  /** the counts of /health, kept as the instance actors change */
  private readonly tally = new HealthTally((id) => this.records.has(id));
  private readonly ports = new Map<string, InstancePort>();
  /** instances added as brand-new whose planner has not started yet: their queues start empty, without reads */
  private readonly fresh = new Set<string>();
  private readonly sessions: Sessions;
  private readonly planners: Planners;
  /** acceptances of every instance of this node, committed together (src/queue/group-commit.ts) */
  readonly groupCommit: AcceptanceCommitter;
  private readonly replies: Replies;
  readonly webhooks: WebhookSenders;
  readonly supervisor: Actor<typeof supervisorMachine>;

  constructor(private readonly deps: ActorSystemDeps) {
    const records = this.records;
    const replies = (this.replies = createReplies(deps.clock));
    const events = (): AnyActorRef | undefined => this.supervisor.system.get(SYSTEM_IDS.events);
    this.sessions = createSessionLogic({
      clock: deps.clock,
      driverFactory: (opts) => {
        const record = records.get(opts.instanceId);
        if (!record) throw new Error('instance is not registered');
        return deps.driverFactory(record.driver)(opts);
      },
      driverOptions: { dataDir: deps.dataDir, callTimeoutMs: deps.callTimeoutMs },
      onNetworkEvent: (instanceId, name, args, download) => {
        const record = records.get(instanceId);
        if (record) events()?.send(networkCommand(record, name, args, download));
      },
      onError: (err, where) => deps.log.warn({ err, where }, 'session fault'),
    });
    this.webhooks = createWebhookSenders({
      db: deps.pool, clock: deps.clock, log: deps.log, allowPrivate: deps.webhookAllowPrivate,
      ...(deps.metrics ? { options: { metrics: deps.metrics.webhooks } } : {}),
    });
    this.groupCommit = new AcceptanceCommitter({
      pool: deps.pool,
      ...(deps.fenceMany ? { fence: deps.fenceMany } : {}),
      emit: (q, items) => deps.events.emitAcross(q, items),
      // a group nobody's webhook hears of is one fenced statement (src/queue/sql/insertJobsFenced.ts)
      quiet: async (ids) => !(await deps.events.wantedBy(ids, QUEUED_EVENT)),
      ...(deps.leasesOf ? { leasesOf: deps.leasesOf } : {}),
      ...(deps.metrics ? { metrics: deps.metrics.queue } : {}),
    });
    this.planners = createPlanners({
      pool: deps.pool,
      clock: deps.clock,
      log: deps.log,
      maxPending: deps.maxPending,
      callTimeoutMs: deps.callTimeoutMs,
      events: deps.events,
      replies,
      record: (id) => records.get(id),
      store: deps.store,
      wake: (id) => void this.webhooks.notify(id),
      ...(deps.fence ? { fence: deps.fence } : {}),
      ...(deps.leaseOf ? { leaseOf: deps.leaseOf } : {}),
      ...(deps.metrics ? { metrics: deps.metrics.queue } : {}),
      committer: this.groupCommit,
      ...(deps.journal ? { journal: deps.journal } : {}),
      starts: new QueueStarts(deps.pool, deps.clock),
      fresh: (id) => this.fresh.delete(id),
    });
    const dispatcher = createDispatcherLogic({
      clock: deps.clock,
      callTimeoutMs: deps.callTimeoutMs,
      resolveMedia: deps.resolveMedia,
      // on the claims' own connections, as the claim: a due job waits for it
      startCall: (job) => startCall(claimPool(deps.pool), job.instanceId, job.id),
      replies,
    });

    const instanceLogic = withInput(instanceMachine.provide({
      actors: { session: this.sessions.logic, planner: this.planners.logic, dispatcher, webhooks: this.webhooks.logic },
      actions: {
        // a command only: the events actor saves the number and writes the event (qr and code: webhook only, never a log)
        notify: ({ context }, params: NotifyParams) => {
          const record = records.get(context.instanceId);
          if (!record) return;
          const phone = params.event === 'ready' ? params.data.phoneNumber : null;
          const current = phone && phone !== record.phoneNumber ? { ...record, phoneNumber: phone } : record;
          if (current !== record) records.set(record.id, current);
          // a `ready` with the number the record (read from the store) has already: no write (a restart)
          events()?.send(lifecycleCommand(current, params, phone !== null && current === record));
          logLifecycle(deps.log, context.instanceId, params);
        },
        trace: ({ context }, params: TraceParams) => deps.log.info({ instanceId: context.instanceId, ...params }, `instance ${params.kind}`),
      },
    }), { orderedRestartHardMs: deps.orderedRestartHardMs, ...deps.instancePolicy }, this.tally);
    this.supervisor = createActor(
      supervisorMachine.provide({
        actors: { shard: shardMachine.provide({ actors: { instance: instanceLogic } }), replies: replies.logic, events: deps.incoming.logic },
      }),
      {
        clock: deps.clock,
        systemId: 'supervisor',
        // inspection costs on every event of every actor: only while someone watches (subscribe)
        ...(deps.inspect ? { inspect: deps.inspect } : {}),
      },
    );
  }

  start(): void {
    this.supervisor.start();
    this.deps.store.onChange((degraded, since) => this.supervisor.send({ type: 'STORE', degraded, since }));
  }

  /** The port of an instance this process runs, or null. */
  port(instanceId: string): InstancePort | null {
    return this.ports.get(instanceId) ?? null;
  }

  /** The record of a registered instance (the key guard accepts keys of running instances only). */
  record(instanceId: string): Instance | undefined {
    return this.records.get(instanceId);
  }

  /** Whether this process runs the instance. */
  has(instanceId: string): boolean {
    return this.records.has(instanceId);
  }

  /**
   * Register and spawn the actors of instances (one event to the supervisor for all of them). `brandNew`: those
   * never owned by any node before (just created, src/cluster/cluster.ts): nothing of theirs is in PostgreSQL yet.
   */
  add(instances: readonly Instance[], brandNew: ReadonlySet<string> = new Set()): void {
    const fresh = instances.filter((i) => !this.records.has(i.id));
    for (const instance of fresh) {
      if (brandNew.has(instance.id)) this.fresh.add(instance.id);
      this.records.set(instance.id, instance);
      this.ports.set(instance.id, new LocalInstancePort(instance.id, () => this.instanceActor(instance.id), this.replies));
    }
    if (fresh.length > 0) this.supervisor.send({ type: 'INSTANCE.START', instanceIds: fresh.map((i) => i.id) });
  }

  /** Drain (an in-flight dispatch persists), then stop and forget the actors of an instance. */
  async remove(instanceId: string): Promise<void> {
    const port = this.ports.get(instanceId);
    if (!port) return;
    this.ports.delete(instanceId);
    this.fresh.delete(instanceId);
    await port.ask({ type: 'drain' }, this.deps.callTimeoutMs + DEADLINES.operator).catch((err: unknown) => this.deps.log.warn({ err, instanceId }, 'drain failed'));
    this.supervisor.send({ type: 'INSTANCE.STOP', instanceId });
    await Promise.all([this.sessions.settled(instanceId), this.planners.settled(instanceId)]);
    this.records.delete(instanceId);
    this.tally.forget(instanceId);
  }

  /** A settings change: the planner re-plans when a limit moved (event `queue.replanned`). */
  async update(instance: Instance, replan: boolean): Promise<void> {
    if (!this.records.has(instance.id)) return;
    this.records.set(instance.id, instance);
    await this.port(instance.id)?.ask({ type: 'settings', instance, replan }, DEADLINES.send);
  }

  instanceActor(instanceId: string): AnyActorRef | undefined {
    return this.supervisor.system.get(instanceActorId(instanceId));
  }

  private snapshot(instanceId: string): InstanceSnapshot | null {
    const ref = this.instanceActor(instanceId);
    return ref ? (ref.getSnapshot() as InstanceSnapshot) : null;
  }

  /** The instance's view from its actor's snapshot (what the `view` ask answers), for /health and tests. */
  view(instanceId: string): InstanceView {
    const s = this.snapshot(instanceId);
    const phone = this.records.get(instanceId)?.phoneNumber ?? null;
    if (!s) return stoppedView(phone);
    const v = viewOf(s);
    return v.phoneNumber ? v : { ...v, phoneNumber: phone };
  }

  /** `instances` of the Health object: kept as the actors change (src/actors/health-tally.ts), read in O(1). */
  health(): HealthCounts {
    return this.tally.counts();
  }

  /** Instances whose queue runs from memory right now (`queue.degraded` of /health). */
  degradedCount(): number {
    return this.tally.degraded();
  }

  /**
   * The same two figures counted from every instance actor's snapshot as it is now, one by one (what `health`
   * and `degradedCount` did per request before the tally): for the test that holds the tally to it.
   */
  countedFromSnapshots(): { instances: HealthCounts; degraded: number } {
    const snaps: InstanceSnapshot[] = [];
    for (const id of this.records.keys()) {
      const s = this.snapshot(id);
      if (s) snaps.push(s);
    }
    return { instances: healthCounts(snaps), degraded: snaps.filter((s) => s.context.queueMode === 'memory-degraded').length };
  }

  /** Live snapshots for /debug/actors/stream. */
  subscribe(f: (ev: InspectionEvent) => void): () => void {
    const { unsubscribe } = this.supervisor.system.inspect(f);
    return unsubscribe;
  }

  /** The actor tree with secret-free summaries (/debug/actors). */
  describeActors(): ActorSummary[] {
    const snapshots = [...this.records.keys()].map((id) => this.snapshot(id));
    return describeActors(this.supervisor, snapshots, { node: this.deps.nodeId ?? null, instances: this.records.size, waitingAsks: this.replies.waiting }, (child, id) => {
      const sender = child === 'webhooks' ? this.webhooks.get(id) : undefined;
      return sender ? { ...sender.stats } : {};
    });
  }

  /**
   * Graceful stop: every instance drains (in-flight dispatches finish and persist), then the tree stops.
   * `stage` is told each part as it begins (the gateway's stop names the one a hard stop caught it in).
   */
  async stop(stage: (name: string) => void = () => undefined): Promise<void> {
    stage('actors: draining the instances (in-flight dispatches finish)');
    const drains = [...this.ports.entries()].map(([id, port]) =>
      port.ask({ type: 'drain' }, this.deps.callTimeoutMs + DEADLINES.operator).catch((err: unknown) => this.deps.log.warn({ err, instanceId: id }, 'drain failed')));
    await Promise.all(drains);
    this.ports.clear();
    this.supervisor.send({ type: 'SHUTDOWN' });
    this.supervisor.stop();
    stage('actors: sessions and planners settling');
    await Promise.all([this.sessions.settledAll(), this.planners.settledAll()]);
    stage('actors: incoming events settling (a last try for the events held through a store outage)');
    await this.deps.incoming.close();
    stage('actors: closing the webhook senders');
    await this.webhooks.close();
  }
}

/**
 * This node's part in a cluster of gateway nodes on one PostgreSQL: membership, the leases of the instances it
 * owns, placement and hand-over. One node alone is a cluster of one (every instance is placed on it).
 *
 * Every `tickMs` (a real-time timer: leases are about real time between processes, whatever clock the queue
 * uses) it renews its heartbeat and its leases; an instance whose lease it could not renew is stopped at once
 * (its writes are fenced anyway, src/cluster/leases.ts). Then it places every instance over the live nodes
 * (src/cluster/placement.ts): one placed here and free (or expired) is taken — its queue starts, and jobs a dead
 * owner left in `sending` become `unknown`, never sent again; one placed on another live node is handed over:
 * it stops taking asks, finishes an in-flight dispatch, persists, then releases its lease, and the new owner
 * takes it at its next tick. A graceful stop hands every instance over and leaves the cluster.
 *
 * Two things keep a busy node from losing its leases to its own work: the rounds run on a pool of their own
 * (`leasePool`: they never wait for a connection behind the queue's transactions), and a hand-over — which waits
 * for an in-flight dispatch, up to the call deadline — runs beside the rounds, never inside one, so the other
 * leases are renewed meanwhile.
 */
import type { Logger } from '../log.js';
import type { Pool, Queryable } from '../store/pool.js';
import { listInstances, type Instance } from '../store/instances.js';
import { acquireLease, fenceLease, fenceLeases, leaseLost, liveLeases, ownerOf, releaseLease, renewLeases, type Lease, type Owner } from './leases.js';
import { heartbeat, leaveCluster, liveNodes, registerNode, secretHash, type LiveNode, type NodeInfo } from './nodes.js';
import { placeInstance } from './placement.js';

/** What the cluster needs of this node's actor system (src/actors/system.ts). */
export interface LocalInstances {
  add(instance: Instance): void;
  remove(instanceId: string): Promise<void>;
  has(instanceId: string): boolean;
}

export interface ClusterDeps {
  /** reads on behalf of requests (the owner of an instance, the node list) */
  pool: Pool;
  /** membership, leases and placement rounds: a pool the request and queue traffic does not use (it may be
   * `pool` itself where only one connection exists, as with the embedded PostgreSQL of a single node) */
  leasePool: Pool;
  log: Logger;
  node: NodeInfo;
  secret: string | undefined;
  ttlMs: number;
  local: LocalInstances;
}

const OWNER_CACHE_MS = 1_000;

export class Cluster {
  private readonly held = new Map<string, Lease>();
  /** hand-overs under way: the instance is not taken again until it ended */
  private readonly leaving = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  /** stopping: leases are still renewed (a hand-over may take a while), nothing is taken any more */
  private stopped = false;
  /** left the cluster: no round at all */
  private left = false;
  private readonly owners = new Map<string, { owner: Owner | null; at: number }>();

  constructor(private readonly deps: ClusterDeps) {}

  get nodeId(): string {
    return this.deps.node.id;
  }

  get tickMs(): number {
    return Math.max(250, Math.floor(this.deps.ttlMs / 4));
  }

  /** Register with this node's URL (known once the server listens), take the instances placed here. */
  async start(url: string): Promise<void> {
    this.deps.node.url = url;
    await registerNode(this.deps.leasePool, this.deps.node, secretHash(this.deps.secret), this.deps.ttlMs);
    await this.tick();
    this.timer = setInterval(() => void this.tick(), this.tickMs);
    this.timer.unref();
  }

  /** The write fence of an instance's queue (WorkerDeps.fence). */
  fence = async (instanceId: string, q: Queryable): Promise<void> => {
    const lease = this.held.get(instanceId);
    if (!lease) throw leaseLost();
    await fenceLease(q, lease);
  };

  /** The same for many instances in one statement (the node-wide group commit): the ones still held. */
  fenceMany = async (q: Queryable, instanceIds: readonly string[]): Promise<Set<string>> => {
    const leases = instanceIds.map((id) => this.held.get(id)).filter((l): l is Lease => l !== undefined);
    return fenceLeases(q, leases);
  };

  /** Run one round now (after a create or a move, instead of waiting for the timer). */
  tick(): Promise<void> {
    if (this.left) return Promise.resolve();
    this.ticking ??= this.round()
      .catch((err: unknown) => this.deps.log.warn({ err }, 'cluster round failed'))
      .finally(() => (this.ticking = null));
    return this.ticking;
  }

  private async round(): Promise<void> {
    const { leasePool: pool, node, ttlMs } = this.deps;
    await heartbeat(pool, node.id);
    const kept = await renewLeases(pool, node.id, [...this.held.values()], ttlMs);
    for (const [id] of this.held) {
      if (kept.has(id)) continue;
      this.held.delete(id);
      this.deps.log.warn({ instanceId: id }, 'lease lost: the instance is stopped here (another node owns it now)');
      // its writes are fenced already; stopping it (no lease left to release) runs beside the rounds too
      void this.handOver(id).catch((err: unknown) => this.deps.log.warn({ err, instanceId: id }, 'stopping a lost instance failed'));
    }
    if (this.stopped) return;
    const nodes = await liveNodes(pool, ttlMs);
    const pins = await placements(pool);
    for (const instance of await listInstances(pool)) {
      if (this.stopped) return;
      const want = placeInstance(instance.id, nodes, pins.get(instance.id) ?? null);
      const mine = this.held.has(instance.id);
      if (want === node.id && !mine && !this.leaving.has(instance.id)) await this.take(instance);
      // beside the rounds: the next ones renew the other leases while this one drains
      else if (want !== null && want !== node.id && mine) void this.handOver(instance.id).catch((err: unknown) => this.deps.log.warn({ err, instanceId: instance.id }, 'hand-over failed'));
    }
  }

  private async take(instance: Instance): Promise<void> {
    const lease = await acquireLease(this.deps.leasePool, instance.id, this.deps.node.id, this.deps.ttlMs);
    if (!lease) return; // still held by a live owner: taken once it hands over or its lease expires
    this.held.set(instance.id, lease);
    this.owners.delete(instance.id);
    if (!this.deps.local.has(instance.id)) this.deps.local.add(instance);
  }

  /**
   * Stop taking asks for the instance, finish and persist its in-flight dispatch, release its lease. The lease
   * stays held (and renewed by the rounds) until then: the outcome of that dispatch is written under it.
   * A hand-over already under way is joined, not started twice.
   */
  handOver(instanceId: string): Promise<void> {
    const running = this.leaving.get(instanceId);
    if (running) return running;
    const done = (async () => {
      try {
        await this.deps.local.remove(instanceId);
        const lease = this.held.get(instanceId);
        if (lease) await releaseLease(this.deps.leasePool, lease);
      } finally {
        this.held.delete(instanceId);
        this.leaving.delete(instanceId);
        this.owners.delete(instanceId);
      }
    })();
    this.leaving.set(instanceId, done);
    return done;
  }

  /** A new instance: take it now when it is placed here (another node takes it at its next round). */
  async place(instance: Instance): Promise<void> {
    const nodes = await liveNodes(this.deps.leasePool, this.deps.ttlMs);
    if (placeInstance(instance.id, nodes) === this.deps.node.id) await this.take(instance);
  }

  /** The instance is being deleted: stop it here if it runs here. */
  async forget(instanceId: string): Promise<void> {
    if (this.held.has(instanceId) || this.deps.local.has(instanceId)) await this.handOver(instanceId);
  }

  /** Pin an instance to a node (POST /admin/v1/instances/:id/move); the hand-over follows at the next rounds. */
  async move(instanceId: string, nodeId: string): Promise<void> {
    await this.deps.pool.query(
      `INSERT INTO instance_placement (instance_id, node_id) VALUES ($1, $2)
       ON CONFLICT (instance_id) DO UPDATE SET node_id = EXCLUDED.node_id`,
      [instanceId, nodeId],
    );
    await this.tick();
  }

  /** The live owner of an instance (cached briefly; `fresh` reads it again). */
  async owner(instanceId: string, fresh = false): Promise<Owner | null> {
    const cached = this.owners.get(instanceId);
    const now = Date.now();
    if (!fresh && cached && now - cached.at < OWNER_CACHE_MS) return cached.owner;
    const owner = await ownerOf(this.deps.pool, instanceId);
    this.owners.set(instanceId, { owner, at: now });
    return owner;
  }

  /** Every live node with the instances it owns (GET /admin/v1/nodes). */
  async nodes(): Promise<(LiveNode & { instances: number; self: boolean })[]> {
    const [nodes, leases] = await Promise.all([liveNodes(this.deps.pool, this.deps.ttlMs), liveLeases(this.deps.pool)]);
    const counts = new Map<string, number>();
    for (const n of leases.values()) counts.set(n, (counts.get(n) ?? 0) + 1);
    return nodes.map((n) => ({ ...n, instances: counts.get(n.id) ?? 0, self: n.id === this.deps.node.id }));
  }

  /** The node that owns an instance now, or null. */
  async nodeOf(instanceId: string): Promise<string | null> {
    return (await this.owner(instanceId, true))?.nodeId ?? null;
  }

  /** /health: counts only. */
  counts(): { owned: number } {
    return { owned: this.held.size };
  }

  /** Graceful stop: hand every instance over (0 unknown), then leave. */
  async stop(): Promise<void> {
    // the rounds go on renewing the leases until every hand-over has finished: an in-flight dispatch may take
    // up to the call deadline, longer than a lease, and its outcome is written under the lease
    this.stopped = true;
    await this.ticking;
    const ids = new Set([...this.held.keys(), ...this.leaving.keys()]);
    await Promise.all([...ids].map((id) => this.handOver(id).catch((err: unknown) => this.deps.log.warn({ err, instanceId: id }, 'hand-over failed'))));
    this.left = true;
    if (this.timer) clearInterval(this.timer);
    await this.ticking;
    await leaveCluster(this.deps.leasePool, this.deps.node.id).catch((err: unknown) => this.deps.log.warn({ err }, 'leaving the cluster failed'));
  }
}

async function placements(q: Queryable): Promise<Map<string, string>> {
  const { rows } = await q.query<{ instance_id: string; node_id: string }>('SELECT instance_id, node_id FROM instance_placement');
  return new Map(rows.map((r) => [r.instance_id, r.node_id]));
}

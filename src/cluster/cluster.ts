/**
 * This node's part in a cluster of gateway nodes on one PostgreSQL: membership, the leases of the instances it
 * owns, placement and hand-over. One node alone is a cluster of one (every instance is placed on it).
 *
 * Every `tickMs` (a real-time timer: leases are about real time between processes, whatever clock the queue
 * uses) it renews its heartbeat and its leases; a lease that only ran out (the store away longer than the TTL)
 * and that nobody took is taken back at its epoch; an instance whose lease another node took is stopped at once
 * (its writes are fenced anyway, src/cluster/leases.ts). Then it places instances over the live nodes
 * (src/cluster/placement.ts): one placed here that no live node holds is taken — its queue starts, and jobs a
 * dead owner left in `sending` become `unknown`, never sent again; one it holds that is placed on another live
 * node is handed over: it stops taking asks, finishes an in-flight dispatch, persists, then releases its lease,
 * and the new owner takes it at its next tick. A graceful stop hands every instance over and leaves the cluster.
 *
 * A round costs what changed, not how many instances there are (src/cluster/candidates.ts): one statement
 * renews every lease and reads back only the lost ones; the instances it may take are read as those no live
 * node holds; the placement of the held ones is computed again only when the live nodes changed, else only for
 * those an operator pinned elsewhere. Taking is batched and runs beside the rounds, paced by the main pool
 * (src/cluster/taking.ts), so a start-up of ten thousand instances neither delays a renewal nor starves the
 * requests.
 *
 * Two things keep a busy node from losing its leases to its own work: the rounds run on a pool of their own
 * (`leasePool`: they never wait for a connection behind the queue's transactions), and a hand-over — which waits
 * for an in-flight dispatch, up to the call deadline — runs beside the rounds, never inside one (src/cluster/
 * hand-overs.ts), so the other leases are renewed meanwhile.
 */
import type { Logger } from '../log.js';
import type { Pool } from '../store/pool.js';
import type { Instance } from '../store/instances.js';
import { Batcher } from '../store/batch.js';
import { ClockOffset } from './clock-offset.js';
import { HandOvers, ReleaseNotWritten } from './hand-overs.js';
import { isConnectionError } from '../store/health.js';
import { HeldLeases, liveLeases, renewLeases, retakeLeases, type Lease, type Owner } from './leases.js';
import type { LocalInstances } from './local-instances.js';
import { databaseClock, healthProbe, heartbeat, leaveCluster, liveNodes, registerNode, secretHash, type LiveNode, type NodeInfo } from './nodes.js';
import { OwnerCache } from './owner-cache.js';
import { placeInstance } from './placement.js';
import { Taking } from './taking.js';
import { WriteFence } from './write-fence.js';
import { pinnedAway, placements, unheldInstances } from './candidates.js';

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
  /** the clock this node plans its instances by (the queue's; default the system's): compared with the database's */
  clock?: () => number;
}

/** How long a start waits for a live node registered with its NODE_ID at another address to answer. */
const NODE_PROBE_MS = 2_000;

export class Cluster {
  private readonly held = new HeldLeases();
  /** what every write of an instance's queue on this node is made under */
  readonly writeFence = new WriteFence(this.held);
  private readonly owners: OwnerCache;
  /** hand-overs under way: the instance is not taken again until it ended */
  private readonly handOvers: HandOvers;
  /** deletes through this node under way, by instance (`deleteBegins`) */
  private readonly deletesHere = new Map<string, number>();
  /** instances on their way in (taken beside the rounds, so a start-up of thousands never delays a renewal) */
  private readonly taking: Taking;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  /** stopping: leases are still renewed (a hand-over may take a while), nothing is taken any more */
  private stopped = false;
  /** left the cluster: no round at all */
  private left = false;
  /** the live nodes as the last round saw them (ids and capacities): placement is recomputed when they change */
  private nodesSeen: string | null = null;
  /** until a round went through, leases of this node's id that this process does not hold are taken back */
  private adopted = false;

  /** the address the last heartbeat found registered for this node ('gone': none) */
  private lastRegistration: string | null = null;
  /** how far this node's clock is from the database's, read at every round */
  private readonly clockOffset = new ClockOffset();

  constructor(private readonly deps: ClusterDeps) {
    const { pool, leasePool, log, node, ttlMs, local } = deps;
    const held = this.held;
    this.owners = new OwnerCache(pool);
    this.handOvers = new HandOvers({ leasePool, local, held, owners: this.owners });
    this.taking = new Taking({
      pool, leasePool, log, nodeId: node.id, ttlMs, local, held, handOvers: this.handOvers, owners: this.owners,
      stopping: () => this.stopped,
      deletingHere: (id) => this.deletesHere.has(id),
    });
  }

  get nodeId(): string {
    return this.deps.node.id;
  }

  get tickMs(): number {
    return Math.max(250, Math.floor(this.deps.ttlMs / 4));
  }

  /** Register with this node's URL (known once the server listens), start taking the instances placed here. */
  async start(url: string): Promise<void> {
    this.deps.node.url = url;
    await registerNode(this.deps.leasePool, this.deps.node, secretHash(this.deps.secret), this.deps.ttlMs, healthProbe(NODE_PROBE_MS));
    await this.tick();
    this.timer = setInterval(() => void this.tick(), this.tickMs);
    this.timer.unref();
  }

  /** The instances this node runs or is taking now (after start: what its first round found placed here). */
  get instancesHere(): number {
    return this.held.size + this.taking.size;
  }

  /** What the last heartbeat found, said once when it changes (src/cluster/nodes.ts heartbeat). */
  private registeredAt(url: string | null): void {
    const found = url ?? 'gone';
    if (found === this.lastRegistration) return;
    this.lastRegistration = found;
    const { node, log } = this.deps;
    if (url === null) log.warn({ node: node.id }, 'this node was no longer registered (removed by hand, or by another process that had its NODE_ID): registered again');
    else if (url !== node.url) log.error({ node: node.id, url }, 'another process registered this NODE_ID at another address: give every node its own NODE_ID');
  }

  /** This node's clock against the database's (src/cluster/clock-offset.ts), said in the log when it goes past the threshold and back. */
  private async readClock(): Promise<void> {
    const now = this.deps.clock ?? Date.now;
    const before = now();
    const database = await databaseClock(this.deps.leasePool);
    const after = now();
    if (!Number.isFinite(database)) return;
    this.clockOffset.readAndSay(before, database, after, this.deps.log, this.deps.node.id);
  }

  /** Run one round now (after a move, instead of waiting for the timer). */
  tick(): Promise<void> {
    if (this.left) return Promise.resolve();
    this.ticking ??= this.round()
      .catch((err: unknown) => this.deps.log.warn({ err }, 'cluster round failed'))
      .finally(() => (this.ticking = null));
    return this.ticking;
  }

  /**
   * Heartbeat, renew every held lease (one statement; only lost ones come back), hand over what is placed
   * elsewhere now, and queue for taking what no live node holds and is placed here. Its reads are sized by
   * what changed: placement over the held instances is recomputed only when the live nodes changed.
   */
  private async round(): Promise<void> {
    const { leasePool: pool, node, ttlMs } = this.deps;
    await this.readClock();
    this.registeredAt(await heartbeat(pool, node, secretHash(this.deps.secret), this.deps.ttlMs, this.clockOffset.reading?.offsetMs ?? null));
    const lost = await renewLeases(pool, node.id, this.held.all(), ttlMs);
    // ran out (the store was away longer than a lease) and nobody took them: taken back at once, not stopped
    // here to be taken again by a later round; never those handed over (released)
    const retake = [...lost].map((id) => this.held.get(id)).filter((l): l is Lease => l !== undefined && !this.handOvers.has(l.instanceId));
    const retaken = await retakeLeases(pool, node.id, retake, ttlMs);
    for (const id of retaken) lost.delete(id);
    if (retaken.size > 0) this.deps.log.warn({ instances: retaken.size }, 'leases ran out and nobody took them: taken back');
    for (const id of lost) {
      if (!this.held.delete(id)) continue;
      // held for its delete: the lease went with the row (found from the outside: every delete logged a lease lost)
      if (this.handOvers.forDelete(id) || this.deletesHere.has(id)) this.deps.log.debug({ instanceId: id }, 'deleted: its lease went with it');
      else this.deps.log.warn({ instanceId: id }, 'lease lost: the instance is stopped here (another node owns it now)');
      // its writes are fenced already; stopping it (no lease left to release) runs beside the rounds too
      void this.handOver(id).catch((err: unknown) => this.deps.log.warn({ err, instanceId: id }, 'stopping a lost instance failed'));
    }
    if (this.stopped) return;
    const nodes = await liveNodes(pool, ttlMs);
    const seen = nodes.map((n) => `${n.id}:${n.capacity}`).join(',');
    const nodesChanged = seen !== this.nodesSeen;
    // what an operator pinned elsewhere, and with other nodes come or gone, everything held
    const pins = nodesChanged ? await placements(pool) : await pinnedAway(pool, node.id);
    for (const id of nodesChanged ? [...this.held.keys()] : [...pins.keys()]) {
      const want = placeInstance(id, nodes, pins.get(id) ?? null);
      // beside the rounds: the next ones renew the other leases while this one drains
      if (want !== null && want !== node.id && this.held.has(id)) void this.handOver(id).catch((err: unknown) => this.deps.log.warn({ err, instanceId: id }, 'hand-over failed'));
    }
    this.nodesSeen = seen;
    for (const { instance, pinned } of await unheldInstances(pool, node.id, !this.adopted)) {
      if (this.stopped) return;
      const id = instance.id;
      if (placeInstance(id, nodes, pinned) !== node.id || this.held.has(id) || this.handOvers.has(id) || this.taking.has(id) || this.deletesHere.has(id)) continue;
      this.taking.found(instance);
    }
    this.adopted = true;
  }

  /**
   * Hand the instance over (src/cluster/hand-overs.ts): stop taking asks for it, finish and persist its
   * in-flight dispatch, release its lease. A hand-over already under way is joined, not started twice.
   */
  handOver(instanceId: string): Promise<void> {
    return this.handOvers.start(instanceId);
  }

  /**
   * A new instance: take it now when it is placed here (another node takes it at its next round). Creations
   * at the same moment are placed together: one read of the live nodes, one statement for their leases.
   */
  async place(instance: Instance): Promise<void> {
    if (this.stopped) return;
    const nodes = await this.placing.submit(null);
    if (placeInstance(instance.id, nodes) === this.deps.node.id) await this.taking.created(instance);
  }

  /** The live nodes, read once for all the creations placed at one moment. */
  private readonly placing = new Batcher<null, LiveNode[]>(async (calls) => {
    const nodes = await liveNodes(this.deps.leasePool, this.deps.ttlMs);
    return calls.map(() => nodes);
  });

  /**
   * The instance is being deleted: stop it here if it runs here (its in-flight dispatch finished and persisted),
   * and hold its lease for the delete (src/cluster/hand-overs.ts `start`): no node takes the instance while the
   * delete runs, the lease goes with the row, and when the delete failed the instance runs again once the hold
   * ended. Found: released, another node's round could take the instance and send before the delete removed
   * it; only the queue stopped (asked by another node), a failed delete left the instance taking messages it
   * never sent for as long as this node ran. Whether this node held or ran the instance.
   */
  async forget(instanceId: string): Promise<boolean> {
    if (!this.held.has(instanceId) && !this.deps.local.has(instanceId) && !this.handOvers.has(instanceId)) return false;
    await this.handOvers.start(instanceId, true);
    return true;
  }

  /**
   * A delete of the instance begins through this node (src/cluster/wiring.ts): it is not taken here until it
   * ended (`deleteEnded`), whatever its lease does meanwhile. Found from the outside: with the owner paused past
   * its lease, the deleting node took the instance and sent a waiting message during its own delete.
   */
  deleteBegins(instanceId: string): void {
    this.deletesHere.set(instanceId, (this.deletesHere.get(instanceId) ?? 0) + 1);
  }

  deleteEnded(instanceId: string): void {
    const n = (this.deletesHere.get(instanceId) ?? 1) - 1;
    if (n > 0) this.deletesHere.set(instanceId, n);
    else this.deletesHere.delete(instanceId);
  }

  /** Whether this node is stopping the instance for its delete, or holds its lease while the delete runs. */
  deleting(instanceId: string): boolean {
    return this.handOvers.forDelete(instanceId);
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

  /**
   * The live owner of an instance (cached briefly; `fresh` reads it again; src/cluster/owner-cache.ts). A read
   * already on its way for the instance is joined.
   */
  owner(instanceId: string, fresh = false): Promise<Owner | null> {
    return this.owners.read(instanceId, fresh);
  }

  /** Whether the instance still exists (its row): an instance no node owns may have been deleted. */
  async exists(instanceId: string): Promise<boolean> {
    const { rows } = await this.deps.pool.query('SELECT 1 FROM instances WHERE id = $1', [instanceId]);
    return rows.length > 0;
  }

  /** Every live node with the instances it owns (GET /admin/v1/nodes). */
  async nodes(): Promise<(LiveNode & { instances: number; self: boolean })[]> {
    const [nodes, leases] = await Promise.all([liveNodes(this.deps.pool, this.deps.ttlMs), liveLeases(this.deps.pool)]);
    const counts = new Map<string, number>();
    for (const n of leases.values()) counts.set(n, (counts.get(n) ?? 0) + 1);
    return nodes.map((n) => ({ ...n, instances: counts.get(n.id) ?? 0, self: n.id === this.deps.node.id }));
  }

  /**
   * The node that owns an instance now, or null (this node, without a query, while it holds the lease or is taking
   * it: right after the start's first round the demo instance is on its way in, its lease not written yet, and
   * the banner said "runs on no node yet" of the demo this very node was linking; found from the outside).
   */
  async nodeOf(instanceId: string): Promise<string | null> {
    if (this.held.has(instanceId) || this.taking.has(instanceId)) return this.deps.node.id;
    return (await this.owner(instanceId, true))?.nodeId ?? null;
  }

  /** Stopping: it hands its instances over and takes none. */
  get stopping(): boolean {
    return this.stopped;
  }

  /**
   * Graceful stop: hand every instance over (0 unknown), then leave. `stage` is told each part as it begins
   * (the gateway's stop names the one a hard stop caught it in).
   *
   * Every instance is drained and stopped here whatever the store does. Once a release failed, the others are
   * not tried (src/cluster/hand-overs.ts): their leases expire by themselves within the TTL and the other nodes
   * take the instances then, as after a crash; one line says so. A store found unreachable so is not asked to
   * remove this node either: its registration expires with its heartbeat, as its leases do. So a stop during a
   * partition waits out one store deadline for the releases, not one for each instance.
   */
  async stop(stage: (name: string) => void = () => undefined): Promise<void> {
    // the rounds go on renewing the leases until every hand-over has finished: an in-flight dispatch may take
    // up to the call deadline, longer than a lease, and its outcome is written under the lease
    this.stopped = true;
    this.handOvers.stop();
    stage('cluster: finishing its lease round');
    await this.ticking;
    stage('cluster: finishing the instances being taken');
    await this.taking.idle();
    stage('cluster: handing the instances over');
    const ids = new Set([...this.held.keys(), ...this.handOvers.ids()]);
    let unwritten = 0;
    let failure: unknown = null;
    await Promise.all([...ids].map((id) => this.handOver(id).catch((err: unknown) => {
      if (!(err instanceof ReleaseNotWritten)) return this.deps.log.warn({ err, instanceId: id }, 'hand-over failed');
      unwritten += 1;
      if (err.tried) failure ??= err.failure;
    })));
    const unreachable = unwritten > 0 && isConnectionError(failure);
    if (unwritten > 0) {
      const why = unreachable ? 'PostgreSQL is unreachable' : 'its statement failed';
      this.deps.log.warn(
        { err: failure, instances: unwritten, leaseTtlMs: this.deps.ttlMs },
        `hand-over not written (${why}): ${unwritten} instances were stopped here without releasing their leases; ` +
          `the other nodes take them when the leases expire, within LEASE_TTL_MS (${this.deps.ttlMs} ms), as after a crash` +
          (unreachable ? '; this node is not removed from the cluster either, its registration expires likewise' : ''),
      );
    }
    this.left = true;
    if (this.timer) clearInterval(this.timer);
    stage('cluster: finishing its lease round');
    await this.ticking;
    if (unreachable) return;
    stage('cluster: leaving the cluster');
    await leaveCluster(this.deps.leasePool, this.deps.node).catch((err: unknown) => this.deps.log.warn({ err }, 'leaving the cluster failed'));
  }
}

/**
 * Taking instances: the leases of instances placed on this node that no live node holds (found by a round) or
 * that its operator API just created, taken in batches of TAKE_BATCH (one statement each) and started together.
 * Apart from the rounds (src/cluster/cluster.ts) because it runs beside them, paced by the main pool: a start-up
 * of ten thousand instances neither delays a renewal nor starves the requests.
 */
import type { Logger } from '../log.js';
import type { Pool } from '../store/pool.js';
import type { Instance } from '../store/instances.js';
import { Batcher } from '../store/batch.js';
import { acquireLeases, type HeldLeases } from './leases.js';
import type { HandOvers } from './hand-overs.js';
import type { LocalInstances } from './local-instances.js';
import type { OwnerCache } from './owner-cache.js';

/**
 * Instances taken in one statement and started together. The next batch waits until at most POOL_BACKLOG queries
 * wait for a connection of the main pool: the pool stays busy with the starts (each instance's queue loads), and
 * a request arriving meanwhile waits behind a few dozen queries, not behind thousands of starts.
 */
const TAKE_BATCH = 25;
const POOL_BACKLOG = 5;

/** An instance to take; `created`: just created by this node's operator API (Cluster.place). */
interface Take {
  instance: Instance;
  created: boolean;
}

export interface TakingDeps {
  /** the main pool: the next batch waits for room in it */
  pool: Pool;
  /** the leases are taken on the rounds' pool */
  leasePool: Pool;
  log: Logger;
  nodeId: string;
  ttlMs: number;
  local: LocalInstances;
  held: HeldLeases;
  handOvers: HandOvers;
  owners: OwnerCache;
  /** the node is stopping: nothing is taken any more */
  stopping: () => boolean;
  /** a delete of the instance runs through this node: it is not taken here meanwhile */
  deletingHere: (instanceId: string) => boolean;
}

export class Taking {
  /** instances on their way in (taken beside the rounds, so a start-up of thousands never delays a renewal) */
  private readonly taking = new Set<string>();
  private readonly takes = new Batcher<Take, void>((instances) => this.takeMany(instances), TAKE_BATCH);

  constructor(private readonly deps: TakingDeps) {}

  /** How many instances are on their way in. */
  get size(): number {
    return this.taking.size;
  }

  /** Whether the instance is on its way in. */
  has(instanceId: string): boolean {
    return this.taking.has(instanceId);
  }

  /** An instance a round found placed here and held by no live node: taken beside the rounds. */
  found(instance: Instance): void {
    const id = instance.id;
    this.taking.add(id);
    // a take that failed (the store) is tried again by a later round
    void this.takes
      .submit({ instance, created: false })
      .catch((err: unknown) => this.deps.log.warn({ err, instanceId: id }, 'taking an instance failed'))
      .finally(() => this.taking.delete(id));
  }

  /** An instance just created by this node's operator API and placed here: taken now. */
  created(instance: Instance): Promise<void> {
    return this.takes.submit({ instance, created: true });
  }

  /** Resolves once no take is under way (a graceful stop). */
  idle(): Promise<void> {
    return this.takes.idle();
  }

  /**
   * Take the leases of these instances in one statement and start the ones taken; the next batch waits until
   * the pool has room again, so a start-up of thousands of instances does not starve the requests.
   */
  private async takeMany(takes: Take[]): Promise<void[]> {
    const { held, handOvers, stopping, deletingHere } = this.deps;
    // an instance both placed at its creation and found by a round is taken once
    const created = new Set(takes.filter((t) => t.created).map((t) => t.instance.id));
    const byId = new Map(takes.map((t) => [t.instance.id, t.instance]));
    const wanted = [...byId.values()].filter((i) => !stopping() && !held.has(i.id) && !handOvers.has(i.id) && !deletingHere(i.id));
    // still held by a live owner: taken once it hands over or its lease expires
    const leases = await acquireLeases(this.deps.leasePool, wanted.map((i) => i.id), this.deps.nodeId, this.deps.ttlMs);
    const brandNew = new Set<string>();
    const taken = wanted.filter((i) => {
      const lease = leases.get(i.id);
      if (!lease || stopping()) return false;
      held.set(i.id, lease);
      this.deps.owners.forget(i.id);
      // the first lease ever (epoch 1) of an instance created here: no node ever wrote anything of its queue
      if (created.has(i.id) && lease.epoch === 1) brandNew.add(i.id);
      return !this.deps.local.has(i.id);
    });
    if (taken.length > 0) this.deps.local.add(taken, brandNew);
    await this.poolRoom();
    return takes.map(() => undefined);
  }

  /** Resolves once at most POOL_BACKLOG queries wait for a connection (after the started actors issued theirs). */
  private async poolRoom(): Promise<void> {
    const { pool, stopping } = this.deps;
    await new Promise((r) => setImmediate(r));
    while (pool.waitingCount > POOL_BACKLOG && !stopping()) await new Promise((r) => pool.once('release', r));
  }
}

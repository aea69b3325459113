/**
 * Hand-overs: how this node gives an instance up (placed on another node, its lease lost, deleted, a graceful
 * stop). It stops taking asks for the instance, finishes and persists its in-flight dispatch, then releases the
 * lease; leases given up at the same moment go in one statement. Apart from src/cluster/cluster.ts because a
 * hand-over runs beside the rounds, never inside one (it may wait for a dispatch up to the call deadline), and
 * the rounds and the taking of instances (src/cluster/taking.ts) only ask whether one is under way.
 */
import type { Pool } from '../store/pool.js';
import { Batcher } from '../store/batch.js';
import { releaseLeases, type HeldLeases, type Lease } from './leases.js';
import type { LocalInstances } from './local-instances.js';
import type { OwnerCache } from './owner-cache.js';

export interface HandOverDeps {
  leasePool: Pool;
  local: LocalInstances;
  /** this node's leases: the one handed over stays held (and renewed by the rounds) until it is released */
  held: HeldLeases;
  owners: OwnerCache;
}

export class HandOvers {
  /** hand-overs under way: the instance is not taken again until it ended */
  private readonly leaving = new Map<string, Promise<void>>();
  /** leases given up at the same moment (a graceful stop hands every instance over) go in one statement */
  private readonly releases = new Batcher<Lease, void>(async (leases) => {
    await releaseLeases(this.deps.leasePool, leases);
    return leases.map(() => undefined);
  });

  constructor(private readonly deps: HandOverDeps) {}

  /** Whether a hand-over of the instance is under way. */
  has(instanceId: string): boolean {
    return this.leaving.has(instanceId);
  }

  /** The instances being handed over. */
  ids(): IterableIterator<string> {
    return this.leaving.keys();
  }

  /**
   * Stop taking asks for the instance, finish and persist its in-flight dispatch, release its lease. The lease
   * stays held (and renewed by the rounds) until then: the outcome of that dispatch is written under it.
   * A hand-over already under way is joined, not started twice.
   */
  start(instanceId: string): Promise<void> {
    const running = this.leaving.get(instanceId);
    if (running) return running;
    const { held } = this.deps;
    const done = (async () => {
      try {
        await this.deps.local.remove(instanceId);
        const lease = held.get(instanceId);
        if (lease) await this.releases.submit(lease);
      } finally {
        held.delete(instanceId);
        this.leaving.delete(instanceId);
        this.deps.owners.forget(instanceId);
      }
    })();
    this.leaving.set(instanceId, done);
    return done;
  }
}

/**
 * Hand-overs: how this node gives an instance up (placed on another node, its lease lost, deleted, a graceful
 * stop). It stops taking asks for the instance, finishes and persists its in-flight dispatch, then releases the
 * lease; leases given up at the same moment go in one statement. Apart from src/cluster/cluster.ts because a
 * hand-over runs beside the rounds, never inside one (it may wait for a dispatch up to the call deadline), and
 * the rounds and the taking of instances (src/cluster/taking.ts) only ask whether one is under way.
 *
 * A release that could not be written (the store unreachable, the statement timed out) leaves the lease to expire
 * by itself within the TTL, as a crashed node's does: the instance no longer runs here (it was drained and
 * stopped before), its lease is no longer renewed, and the next owner takes it once it expired. During a graceful
 * stop, the first release that failed ends the releases of that stop: the others are not tried (each would wait
 * out the same connect or statement deadline in turn, one batch after another, however many instances there
 * are), and their leases expire alike.
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

/**
 * The instance was drained and stopped here, but its lease could not be released (`failure`: why, the release's
 * own failure, or that of an earlier release of the same stop when this one was not tried): the lease expires by
 * itself within the TTL and the next owner takes the instance then.
 */
export class ReleaseNotWritten extends Error {
  constructor(readonly failure: unknown, readonly tried: boolean) {
    super(`the lease release was ${tried ? 'not written' : 'not tried after an earlier one failed'}: ${failure instanceof Error ? failure.message : String(failure)}`);
    this.name = 'ReleaseNotWritten';
  }
}

export class HandOvers {
  /** hand-overs under way: the instance is not taken again until it ended */
  private readonly leaving = new Map<string, Promise<void>>();
  /** a graceful stop is handing the instances over: a failed release ends the releases (`givenUp`) */
  private stopping = false;
  /** why the stop's releases ended (the first failed one), after which none is tried */
  private givenUp: unknown = null;
  /**
   * Leases given up at the same moment (a graceful stop hands every instance over) go in one statement. A failed
   * statement fails every lease in it: none can fail it alone, so none is tried again alone (the batcher's
   * fallback would try each in turn, each waiting out the same deadline).
   */
  private readonly releases = new Batcher<Lease, void>(async (leases) => {
    if (this.givenUp !== null) return leases.map(() => new ReleaseNotWritten(this.givenUp, false));
    try {
      await releaseLeases(this.deps.leasePool, leases);
      return leases.map(() => undefined);
    } catch (err) {
      if (this.stopping) this.givenUp = err;
      return leases.map(() => new ReleaseNotWritten(err, true));
    }
  });

  constructor(private readonly deps: HandOverDeps) {}

  /**
   * A graceful stop hands every instance over from now on: once a release failed, no other is tried (its lease
   * expires by itself). The drains are not affected: every instance still finishes and persists its dispatch.
   */
  stop(): void {
    this.stopping = true;
  }

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
   * A hand-over already under way is joined, not started twice. Rejects with ReleaseNotWritten when the
   * instance was stopped here but its lease was not released (it expires by itself).
   *
   * `release: false` (the instance is being deleted): the lease is only no longer renewed, not released, so that
   * no node takes the instance before its delete removes the row and the lease with it; a delete that failed
   * leaves the lease to expire within the TTL, and the instance is taken again as after a crash.
   */
  start(instanceId: string, release = true): Promise<void> {
    const running = this.leaving.get(instanceId);
    if (running) return running;
    const { held } = this.deps;
    const done = (async () => {
      try {
        await this.deps.local.remove(instanceId);
        const lease = held.get(instanceId);
        if (lease && release) await this.releases.submit(lease);
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

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
import { DELETE_HOLD_MS } from '../store/instances.js';
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

/** A lease held for a delete (`HandOvers.start`). */
interface Hold {
  timer: NodeJS.Timeout | undefined;
  /** resolved once the hold ended: the lease released, or gone with the row */
  ended: Promise<void>;
  end(): void;
}

export class HandOvers {
  /** hand-overs under way: the instance is not taken again until it ended */
  private readonly leaving = new Map<string, Promise<void>>();
  /** hand-overs asked for by a delete, the instance's lease then held (renewed) until the delete ended */
  private readonly deleting = new Set<string>();
  /** instances stopped for a delete whose leases are held until it ended: the timer that gives them up, and its end */
  private readonly holds = new Map<string, Hold>();
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

  /** Whether a hand-over of the instance is under way, or its lease is held for its delete (`start`). */
  has(instanceId: string): boolean {
    return this.leaving.has(instanceId) || this.holds.has(instanceId);
  }

  /** Whether the instance is being stopped for its delete, or its lease held while the delete runs. */
  forDelete(instanceId: string): boolean {
    return this.deleting.has(instanceId) || this.holds.has(instanceId);
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
   * `forDelete` (the instance is being deleted, src/cluster/cluster.ts `forget`): the lease is not released but
   * held, renewed by the rounds, for DELETE_HOLD_MS, so that no node takes the instance while its delete runs;
   * the delete removes the lease with the row, and a delete that failed leaves the hold to end, the lease then
   * released and the instance taken again. A hand-over already under way (a move) joined by a delete holds too.
   * Found from the outside: released, the lease of an instance being moved was taken by the next node while
   * the delete waited; left unrenewed, it expired during a slow delete when LEASE_TTL_MS was short.
   */
  start(instanceId: string, forDelete = false): Promise<void> {
    const running = this.leaving.get(instanceId);
    if (running) {
      if (forDelete) this.deleting.add(instanceId);
      return running;
    }
    const { held } = this.deps;
    const hold = this.holds.get(instanceId);
    if (hold !== undefined) {
      // stopped here already, its lease held for a delete: held on (for DELETE_HOLD_MS again when another delete
      // asks, a retry of one that failed); a graceful stop waits for the hold to end (found from the outside:
      // released at the stop, the lease was taken by another node 0.2 s later while the delete still ran)
      if (held.has(instanceId)) {
        if (this.stopping) return hold.ended;
        if (forDelete) {
          clearTimeout(hold.timer);
          hold.timer = this.holdTimer(instanceId, hold);
        }
        return Promise.resolve();
      }
      // the lease went with the row: the delete is done
      clearTimeout(hold.timer);
      this.holds.delete(instanceId);
      hold.end();
    }
    if (forDelete) this.deleting.add(instanceId);
    const done = (async () => {
      let holding = false;
      try {
        await this.deps.local.remove(instanceId);
        const lease = held.get(instanceId);
        holding = lease !== undefined && this.deleting.has(instanceId) && !this.stopping;
        if (holding) return this.holdForDelete(instanceId);
        if (lease) await this.releases.submit(lease);
      } finally {
        this.deleting.delete(instanceId);
        if (!holding) held.delete(instanceId);
        this.leaving.delete(instanceId);
        this.deps.owners.forget(instanceId);
      }
    })();
    this.leaving.set(instanceId, done);
    return done;
  }

  /** The lease of an instance stopped for its delete stays held for DELETE_HOLD_MS, then is handed over (released). */
  private holdForDelete(instanceId: string): void {
    let end = () => undefined as void;
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    const hold: Hold = { timer: undefined, ended, end };
    hold.timer = this.holdTimer(instanceId, hold);
    this.holds.set(instanceId, hold);
  }

  /** The end of a hold: it is released as any hand-over's lease (the rounds take the instance again). */
  private holdTimer(instanceId: string, hold: Hold): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.holds.delete(instanceId);
      void this.start(instanceId).catch(() => undefined).finally(hold.end);
    }, DELETE_HOLD_MS);
    timer.unref();
    return timer;
  }
}

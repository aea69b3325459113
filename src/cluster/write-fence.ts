/**
 * The write fence of the instances this node holds (src/cluster/leases.ts): every write of an instance's queue
 * is made under its lease. A transaction reads the lease row first (`fence`, or `fenceMany` for the node-wide
 * group commit of acceptances); a write that is one statement fences itself with the lease (`leaseOf`, the
 * dispatch claim of src/queue/sql/claimJob.ts).
 */
import type { Queryable } from '../store/pool.js';
import { fenceLease, fenceLeases, leaseLost, type Lease } from './leases.js';

export class WriteFence {
  /** `held`: the cluster's leases of this node, as they are renewed, lost and handed over */
  constructor(private readonly held: ReadonlyMap<string, Lease>) {}

  /** The write fence of an instance's queue (WorkerDeps.fence): throws unless the lease is still this node's. */
  fence = async (instanceId: string, q: Queryable): Promise<void> => {
    const lease = this.held.get(instanceId);
    if (!lease) throw leaseLost();
    await fenceLease(q, lease);
  };

  /** The same for many instances in one statement (the node-wide group commit): the ones still held. */
  fenceMany = async (q: Queryable, instanceIds: readonly string[]): Promise<Set<string>> => fenceLeases(q, this.leasesOf(instanceIds));

  /** The leases this node holds of these instances (the others have none here), for `fenceMany` or a statement that fences itself. */
  leasesOf = (instanceIds: readonly string[]): Lease[] => instanceIds.map((id) => this.held.get(id)).filter((l): l is Lease => l !== undefined);

  /** The lease this node holds of an instance (null: none), for a write that fences itself in its one statement. */
  leaseOf = (instanceId: string): Lease | null => this.held.get(instanceId) ?? null;
}

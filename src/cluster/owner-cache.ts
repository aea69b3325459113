/**
 * Who owns an instance, as this node answers requests for it (src/cluster/remote-port.ts forwards an ask to the
 * owner): read from the live leases (src/cluster/leases.ts `ownerOf`) and kept for OWNER_CACHE_MS, and a read
 * already on its way is joined. Apart from the cluster's rounds: it reads on the main pool for requests, and the
 * rounds only drop what they changed (a take, a hand-over).
 */
import type { Queryable } from '../store/pool.js';
import { ownerOf, type Owner } from './leases.js';

/** How long a node answers an instance's owner from what it read (another node's hand-over is seen this late). */
export const OWNER_CACHE_MS = 1_000;

export class OwnerCache {
  private readonly owners = new Map<string, { owner: Owner | null; at: number }>();
  private readonly reads = new Map<string, Promise<Owner | null>>();

  constructor(private readonly pool: Queryable) {}

  /**
   * The live owner of an instance (cached briefly; `fresh` reads it again). A read already on its way for the
   * instance is joined: the requests that wait out a hand-over (src/cluster/remote-port.ts) share one read.
   */
  async read(instanceId: string, fresh = false): Promise<Owner | null> {
    const cached = this.owners.get(instanceId);
    const now = Date.now();
    if (!fresh && cached && now - cached.at < OWNER_CACHE_MS) return cached.owner;
    const reading = this.reads.get(instanceId);
    if (reading) return reading;
    const read = ownerOf(this.pool, instanceId)
      .then((owner) => {
        this.owners.set(instanceId, { owner, at: now });
        return owner;
      })
      .finally(() => this.reads.delete(instanceId));
    this.reads.set(instanceId, read);
    return read;
  }

  /** This node took or gave up the instance: its owner is read again at the next ask. */
  forget(instanceId: string): void {
    this.owners.delete(instanceId);
  }
}

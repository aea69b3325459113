/**
 * Ownership of an instance: a lease row (node, epoch, expiry) in PostgreSQL, all times on the database's clock.
 *
 * - `acquireLeases`: take free or expired leases, or keep one's own; every take by another node bumps the epoch.
 * - `renewLeases`: extend the leases this node still holds at the epochs it knows; answers which ones it lost.
 * - `retakeLeases`: of those, take back the ones that only ran out (a partition, a pause longer than the TTL) and
 *   that no node took meanwhile, at the same epoch: nothing was written under them while they were out (every
 *   write is fenced by an unexpired lease), and a take by another node would have changed node and epoch.
 * - `fenceLease`: inside a transaction that writes an instance's queue, read the lease row FOR KEY SHARE at this
 *   node's epoch: no row means the lease was lost (expired and taken, or released) and the write is refused. The
 *   epoch is part of a unique key (sql/0006), so a takeover, which changes it, is a key update and waits until
 *   the writing transaction ends; a renewal or a release changes only the expiry and never waits for it. A node
 *   paused past its lease (GC stop, SIGSTOP, partition) therefore never plans or dispatches for that instance
 *   again, and a busy instance's own writes never hold up the renewal of its lease.
 * - `releaseLeases`: give leases up (graceful stop, hand-over), effective at once.
 */
import { DomainError } from '../errors.js';
import type { Queryable } from '../store/pool.js';
import { heldLeasesSql } from '../store/lease-fence-sql.js';

export interface Lease {
  instanceId: string;
  nodeId: string;
  epoch: number;
}

/** This node no longer owns the instance: nothing was done (502: safe to retry, at the new owner). */
export const leaseLost = () => new DomainError('INSTANCE_UNREACHABLE', 'this node no longer owns the instance; nothing was done');

/**
 * Take many leases in one statement: each free or expired one, or keep this node's own live one (its epoch
 * kept); answers the leases taken, by instance id. Rows are locked in id order, so two nodes taking overlapping
 * sets at once wait for each other instead of deadlocking.
 */
export async function acquireLeases(q: Queryable, instanceIds: readonly string[], nodeId: string, ttlMs: number): Promise<Map<string, Lease>> {
  if (instanceIds.length === 0) return new Map();
  const { rows } = await q.query<{ instance_id: string; epoch: number }>(
    `INSERT INTO instance_leases AS l (instance_id, node_id, epoch, expires_at)
       SELECT i.id, $2, 1, now() + $3 * interval '1 millisecond'
         FROM instances i WHERE i.id = ANY ($1::uuid[]) ORDER BY i.id
     ON CONFLICT (instance_id) DO UPDATE
       SET node_id = EXCLUDED.node_id,
           epoch = CASE WHEN l.node_id = EXCLUDED.node_id AND l.expires_at > now() THEN l.epoch ELSE l.epoch + 1 END,
           expires_at = EXCLUDED.expires_at
       WHERE l.node_id = EXCLUDED.node_id OR l.expires_at <= now()
     RETURNING instance_id, epoch`,
    [instanceIds, nodeId, ttlMs],
  );
  return new Map(rows.map((r) => [r.instance_id, { instanceId: r.instance_id, nodeId, epoch: Number(r.epoch) }]));
}

/** `acquireLeases` of one instance: its lease, or null while another live node holds it. */
export async function acquireLease(q: Queryable, instanceId: string, nodeId: string, ttlMs: number): Promise<Lease | null> {
  return (await acquireLeases(q, [instanceId], nodeId, ttlMs)).get(instanceId) ?? null;
}

/** The leases this node holds, with their list made once per change (a round renews them all). */
export class HeldLeases extends Map<string, Lease> {
  private list: Lease[] | null = null;

  override set(instanceId: string, lease: Lease): this {
    this.list = null;
    return super.set(instanceId, lease);
  }

  override delete(instanceId: string): boolean {
    this.list = null;
    return super.delete(instanceId);
  }

  all(): readonly Lease[] {
    return (this.list ??= [...this.values()]);
  }
}

/**
 * Every round sends all held leases: as two joined strings rather than two arrays (pg's array encoding, an
 * escape per element, cost more than the rest of an idle node's work), joined once per list (a node passes the
 * same list while what it holds does not change).
 */
const joined = new WeakMap<readonly Lease[], [string, string]>();
function joinedOf(held: readonly Lease[]): [string, string] {
  let j = joined.get(held);
  if (!j) joined.set(held, (j = [held.map((l) => l.instanceId).join(','), held.map((l) => l.epoch).join(',')]));
  return j;
}

/**
 * Extend the held leases at the epochs this node knows, in one statement; answers only the instance ids whose
 * lease it no longer holds (normally none, so a round of ten thousand leases reads nothing back).
 */
export async function renewLeases(q: Queryable, nodeId: string, held: readonly Lease[], ttlMs: number): Promise<Set<string>> {
  if (held.length === 0) return new Set();
  const { rows } = await q.query<{ instance_id: string }>(
    `WITH h AS (SELECT * FROM unnest(string_to_array($3, ',')::uuid[], string_to_array($4, ',')::bigint[]) AS h (instance_id, epoch)),
          kept AS (
            UPDATE instance_leases AS l SET expires_at = now() + $2 * interval '1 millisecond'
              FROM h
             WHERE l.instance_id = h.instance_id AND l.epoch = h.epoch AND l.node_id = $1 AND l.expires_at > now()
            RETURNING l.instance_id)
     SELECT instance_id FROM h EXCEPT SELECT instance_id FROM kept`,
    [nodeId, ttlMs, ...joinedOf(held)],
  );
  return new Set(rows.map((r) => r.instance_id));
}

/**
 * Take back, at the epochs this node knows, leases that ran out while nobody took them (still this node's, at
 * the same epoch, expired); answers the instance ids taken back. Never for a lease this node released: the
 * caller passes only leases it did not give up (a release also leaves the row expired at the same epoch).
 */
export async function retakeLeases(q: Queryable, nodeId: string, leases: readonly Lease[], ttlMs: number): Promise<Set<string>> {
  if (leases.length === 0) return new Set();
  const { rows } = await q.query<{ instance_id: string }>(
    `UPDATE instance_leases AS l SET expires_at = now() + $2 * interval '1 millisecond'
       FROM unnest($3::uuid[], $4::bigint[]) AS h (instance_id, epoch)
      WHERE l.instance_id = h.instance_id AND l.epoch = h.epoch AND l.node_id = $1 AND l.expires_at <= now()
     RETURNING l.instance_id`,
    [nodeId, ttlMs, leases.map((l) => l.instanceId), leases.map((l) => l.epoch)],
  );
  return new Set(rows.map((r) => r.instance_id));
}

export async function fenceLease(q: Queryable, lease: Lease): Promise<void> {
  if (!(await fenceLeases(q, [lease])).has(lease.instanceId)) throw leaseLost();
}

const FENCE_LEASES = heldLeasesSql(1);

/** `fenceLease` for many instances in one statement: answers the instance ids whose lease still holds. */
export async function fenceLeases(q: Queryable, leases: readonly Lease[]): Promise<Set<string>> {
  if (leases.length === 0) return new Set();
  const { rows } = await q.query<{ instance_id: string }>(
    FENCE_LEASES,
    [leases.map((l) => l.instanceId), leases.map((l) => l.nodeId), leases.map((l) => l.epoch)],
  );
  return new Set(rows.map((r) => r.instance_id));
}

/** Give leases up in one statement (a graceful stop hands every instance over at once). */
export async function releaseLeases(q: Queryable, leases: readonly Lease[]): Promise<void> {
  if (leases.length === 0) return;
  await q.query(
    `UPDATE instance_leases AS l SET expires_at = now()
       FROM unnest($1::uuid[], $2::text[], $3::bigint[]) AS h (instance_id, node_id, epoch)
      WHERE l.instance_id = h.instance_id AND l.node_id = h.node_id AND l.epoch = h.epoch`,
    [leases.map((l) => l.instanceId), leases.map((l) => l.nodeId), leases.map((l) => l.epoch)],
  );
}

export async function releaseLease(q: Queryable, lease: Lease): Promise<void> {
  await releaseLeases(q, [lease]);
}

export interface Owner {
  nodeId: string;
  url: string;
}

/** The live owner of an instance (a lease not expired, of a node that is registered), or null. */
export async function ownerOf(q: Queryable, instanceId: string): Promise<Owner | null> {
  const { rows } = await q.query<{ node_id: string; url: string }>(
    `SELECT l.node_id, n.url FROM instance_leases l JOIN nodes n ON n.id = l.node_id
      WHERE l.instance_id = $1 AND l.expires_at > now()`,
    [instanceId],
  );
  const r = rows[0];
  return r ? { nodeId: r.node_id, url: r.url } : null;
}

/** Every live lease: instance → node (placement, GET /admin/v1/nodes). */
export async function liveLeases(q: Queryable): Promise<Map<string, string>> {
  const { rows } = await q.query<{ instance_id: string; node_id: string }>('SELECT instance_id, node_id FROM instance_leases WHERE expires_at > now()');
  return new Map(rows.map((r) => [r.instance_id, r.node_id]));
}

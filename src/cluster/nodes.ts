/**
 * Membership: each node registers itself (id, internal URL, capacity, the hash of its cluster secret), renews a
 * heartbeat, and leaves on a graceful stop. A node is live while its heartbeat is younger than the lease TTL.
 * A node refuses to join live nodes of another secret (or of none, when it has one, and the reverse): two
 * clusters must never share instances by accident.
 */
import { createHash } from 'node:crypto';
import type { Queryable } from '../store/pool.js';

export interface NodeInfo {
  id: string;
  url: string;
  capacity: number;
}

export interface LiveNode extends NodeInfo {
  startedAt: number;
  heartbeatAt: number;
}

export class ClusterRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClusterRefused';
  }
}

export const secretHash = (secret: string | undefined): string | null => (secret ? createHash('sha256').update(secret).digest('hex') : null);

export async function registerNode(q: Queryable, node: NodeInfo, hash: string | null, liveMs: number): Promise<void> {
  const { rows } = await q.query<{ id: string; secret_hash: string | null }>(
    `SELECT id, secret_hash FROM nodes WHERE id <> $1 AND heartbeat_at > now() - $2 * interval '1 millisecond'`,
    [node.id, liveMs],
  );
  if (rows.length > 0 && hash === null) {
    throw new ClusterRefused('other gateway nodes use this database: set CLUSTER_SECRET (the same on every node) to join them');
  }
  if (rows.some((r) => r.secret_hash !== hash)) {
    throw new ClusterRefused('other gateway nodes use this database with a different CLUSTER_SECRET (or none): this node does not join them');
  }
  await q.query(
    `INSERT INTO nodes (id, url, capacity, secret_hash) VALUES ($1, $2, $3, $4)
     ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, capacity = EXCLUDED.capacity, secret_hash = EXCLUDED.secret_hash,
       started_at = now(), heartbeat_at = now()`,
    [node.id, node.url, node.capacity, hash],
  );
}

export async function heartbeat(q: Queryable, nodeId: string): Promise<void> {
  await q.query('UPDATE nodes SET heartbeat_at = now() WHERE id = $1', [nodeId]);
}

export async function leaveCluster(q: Queryable, nodeId: string): Promise<void> {
  await q.query('DELETE FROM nodes WHERE id = $1', [nodeId]);
}

export async function liveNodes(q: Queryable, liveMs: number): Promise<LiveNode[]> {
  const { rows } = await q.query<{ id: string; url: string; capacity: number; started_at: Date; heartbeat_at: Date }>(
    `SELECT id, url, capacity, started_at, heartbeat_at FROM nodes
      WHERE heartbeat_at > now() - $1 * interval '1 millisecond' ORDER BY id`,
    [liveMs],
  );
  return rows.map((r) => ({ id: r.id, url: r.url, capacity: r.capacity, startedAt: r.started_at.getTime(), heartbeatAt: r.heartbeat_at.getTime() }));
}

/**
 * What a cluster round reads to place instances (src/cluster/cluster.ts), sized by what changed rather than by
 * how many instances there are: a round of a node holding ten thousand instances reads nothing back when
 * nothing moved.
 */
import type { Queryable } from '../store/pool.js';
import { rowToInstance, type Instance, type InstanceRow } from '../store/instances.js';

/**
 * Instances no other live node holds (free, expired, released), with the node an operator pinned each to.
 * `withOwn`: also those whose live lease carries this node's id but that this process does not hold yet (an
 * earlier process of the same node, after a crash): the first round takes them back at once.
 */
export async function unheldInstances(q: Queryable, nodeId: string, withOwn: boolean): Promise<{ instance: Instance; pinned: string | null }[]> {
  const { rows } = await q.query<InstanceRow & { pinned_node: string | null }>(
    `SELECT i.*, p.node_id AS pinned_node FROM instances i
       LEFT JOIN instance_placement p ON p.instance_id = i.id
      WHERE NOT EXISTS (
        SELECT 1 FROM instance_leases l
         WHERE l.instance_id = i.id AND l.expires_at > now() AND (NOT $2::boolean OR l.node_id <> $1))
      ORDER BY i.created_at, i.id`,
    [nodeId, withOwn],
  );
  return rows.map((r) => ({ instance: rowToInstance(r), pinned: r.pinned_node }));
}

/** Every operator placement: instance → node. */
export async function placements(q: Queryable): Promise<Map<string, string>> {
  const { rows } = await q.query<{ instance_id: string; node_id: string }>('SELECT instance_id, node_id FROM instance_placement');
  return new Map(rows.map((r) => [r.instance_id, r.node_id]));
}

/** The placements of instances this node holds that name another node (an operator moved them). */
export async function pinnedAway(q: Queryable, nodeId: string): Promise<Map<string, string>> {
  const { rows } = await q.query<{ instance_id: string; node_id: string }>(
    `SELECT p.instance_id, p.node_id FROM instance_placement p JOIN instance_leases l ON l.instance_id = p.instance_id
      WHERE l.node_id = $1 AND p.node_id <> $1`,
    [nodeId],
  );
  return new Map(rows.map((r) => [r.instance_id, r.node_id]));
}

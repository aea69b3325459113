/**
 * The fencing rule of src/cluster/leases.ts as SQL, for every statement that fences the writes of many
 * instances: the lease rows held by the given node at the given epoch, unexpired, read FOR KEY SHARE (a
 * takeover, which changes the epoch, waits for the statement's transaction; a renewal does not). One text, so
 * that `fenceLeases` and the statements that fence themselves (src/queue/sql/insertJobsFenced.ts) cannot
 * drift apart. Its parameters are three arrays (instance ids, node ids, epochs) from `$first` on.
 */
export function heldLeasesSql(first: number): string {
  return `SELECT l.instance_id FROM instance_leases l
       JOIN unnest($${first}::uuid[], $${first + 1}::text[], $${first + 2}::bigint[]) AS h (instance_id, node_id, epoch)
         ON l.instance_id = h.instance_id AND l.node_id = h.node_id AND l.epoch = h.epoch
      WHERE l.expires_at > now()
      FOR KEY SHARE OF l`;
}

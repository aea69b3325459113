/**
 * Per-state counts of an instance's jobs, and outcomes of the last 24 h (GET /api/v2/queue, status).
 *
 * Strategy: one scan with `count(*) FILTER` per column instead of a GROUP BY whose rows would have to be
 * pivoted (and whose missing states would have to be filled with zeros) in code.
 */
import type { Queryable } from '../../store/pool.js';
import type { QueueCounts } from '../job.js';

export async function queueCounts(q: Queryable, instanceId: string, now: number): Promise<QueueCounts> {
  const { rows } = await q.query<QueueCounts>(
    `SELECT count(*) FILTER (WHERE state = 'queued')::int AS queued,
            count(*) FILTER (WHERE state = 'scheduled')::int AS scheduled,
            count(*) FILTER (WHERE state = 'sending')::int AS sending,
            count(*) FILTER (WHERE state = 'sent')::int AS sent,
            count(*) FILTER (WHERE state = 'failed')::int AS failed,
            count(*) FILTER (WHERE state = 'unknown')::int AS unknown,
            count(*) FILTER (WHERE state = 'sent' AND terminal_at > $2)::int AS sent24h,
            count(*) FILTER (WHERE state = 'failed' AND terminal_at > $2)::int AS failed24h,
            count(*) FILTER (WHERE state = 'unknown' AND terminal_at > $2)::int AS unknown24h
       FROM jobs WHERE instance_id = $1`,
    [instanceId, new Date(now - 86_400_000)],
  );
  const counts = rows[0];
  if (!counts) throw new Error('queue counts: no row');
  return counts;
}

/**
 * A dispatch was handed to the network later than its claim recorded (src/queue/outcome-writer.ts `fromTheCall`):
 * the instance's `last_dispatch_at` moves there, so that a restart measures the pause from the call as the
 * running lane did. Inside the outcome's transaction; never moves it back.
 */
import type { Queryable } from '../../store/pool.js';

export async function laterLastDispatch(q: Queryable, instanceId: string, at: number): Promise<void> {
  await q.query('UPDATE instances SET last_dispatch_at = GREATEST(COALESCE(last_dispatch_at, $2), $2) WHERE id = $1', [instanceId, new Date(at)]);
}

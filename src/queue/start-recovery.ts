/**
 * What an earlier process left of one instance's queue, settled at start before the mirror is loaded: jobs it
 * left `sending` and waiting jobs whose synchronous v1 caller died with it. Apart from the dispatch lane
 * (src/queue/dispatch-loop.ts) because it runs once, before any timer, and touches none of the lane's state.
 */
import type { QueueCore } from './core.js';
import { ORPHAN_REASON, BOOT_ID } from './sync-callers.js';
import { orphanedSyncJobs } from './sql/orphanedSyncJobs.js';
import { recoverSending } from './sql/recoverSending.js';

/**
 * Jobs left `sending` by an earlier process become `unknown` (never resent; `failed` where it was still
 * preparing its media, src/queue/sql/recoverSending.ts), and waiting jobs whose synchronous v1 caller died with
 * an earlier process are expired.
 */
export async function recoverAtStart(core: QueueCore, now: number): Promise<void> {
  const recovered = await core.transaction(async (c) => {
    const moved = await recoverSending(c, core.instanceId, now);
    for (const m of moved) if (m.step.emits) await core.emitFor(c, m.job, m.step.emits);
    for (const j of await orphanedSyncJobs(c, core.instanceId, BOOT_ID)) {
      await core.moveIn(c, j, { type: 'EXPIRE' }, { terminalAt: now }, { reason: ORPHAN_REASON });
    }
    return moved;
  });
  const ids = (state: string) => recovered.filter((m) => m.job.state === state).map((m) => m.job.id);
  const [unknown, failed] = [ids('unknown'), ids('failed')];
  if (unknown.length > 0) core.deps.log.warn({ instanceId: core.instanceId, jobs: unknown }, 'jobs found in sending at start are unknown');
  if (failed.length > 0) core.deps.log.warn({ instanceId: core.instanceId, jobs: failed }, 'jobs found in sending at start, their media not yet prepared, failed: never sent');
}

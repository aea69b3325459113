/**
 * The dispatch lane's claim of a due job (src/queue/dispatch-loop.ts): one statement in the common case
 * (src/queue/sql/claimJob.ts), the stored row read only when the claim found it not claimable, to learn why.
 */
import { CLAIMED_JOB_STATES, bulkJobEvent } from '../../machines/job.machine.js';
import { DomainError } from '../errors.js';
import type { Job } from './job.js';
import { StoredPayloadInvalid } from './payload.js';
import type { QueueCore } from './core.js';
import { claimPool } from '../store/pool.js';
import { claimJob } from './sql/claimJob.js';
import { getJob } from './sql/getJob.js';
import { orphanedSyncJobs } from './sql/orphanedSyncJobs.js';
import { BOOT_ID } from './sync-callers.js';
import { expireOrphans } from './orphans.js';

/** The states a claim (DISPATCH) moves a job from. */
const CLAIMABLE: readonly string[] = bulkJobEvent('DISPATCH').from;

const notHeld = () => new DomainError('INSTANCE_UNREACHABLE', 'the due job was not claimed: this node does not hold the instance\'s lease now; it stays in the plan');

/** A row that cannot be read as a send (a claim of it rolled back) is not dispatched: null, logged. */
export async function unlessInvalid(core: QueueCore, id: string, work: () => Promise<Job | null>): Promise<Job | null> {
  try {
    return await work();
  } catch (err) {
    if (!(err instanceof StoredPayloadInvalid)) throw err;
    core.deps.log.error({ err, jobId: id }, 'a stored job cannot be read as a send; it is not dispatched');
    return null;
  }
}

/** A waiting job as stored (null also when its payload cannot be read as a send). */
export function readStored(core: QueueCore, id: string): Promise<Job | null> {
  return unlessInvalid(core, id, () => getJob(core.deps.pool, core.instanceId, id));
}

export interface ClaimHelpers {
  /** write the job's slot (it waits without a stored one) */
  writeSlot(id: string): Promise<unknown>;
  /** put a job still claimed by an earlier claim of ours back (its call was never made) */
  putBack(job: Job, now: number): Promise<Job | null>;
}

/**
 * Claim `id`, due at `slot`, at `now`: one statement fenced by the lease inside it where the queue knows its
 * lease (WorkerDeps.lease), on the claims' own connections (src/store/pool.ts claimPool), else in a fenced
 * transaction. When the row is not claimed, the stored row says
 * why: its synchronous v1 caller is gone (expired, src/queue/orphans.ts), still claimed by an earlier claim of ours whose answer was lost (the call was never made: put back,
 * then claimed), waiting without a stored slot (written, then claimed), claimable (so the lease was not this
 * node's: refused, and it stays in the plan), or it left the queue meanwhile (null).
 */
export async function claimDue(core: QueueCore, helpers: ClaimHelpers, id: string, slot: number, now: number): Promise<Job | null> {
  const claimOnce = () => unlessInvalid(core, id, () => {
    const { deps } = core;
    if (!deps.fence || !deps.lease) return core.transaction((c) => claimJob(c, core.instanceId, id, slot, now));
    const lease = deps.lease();
    if (!lease) throw notHeld();
    // on the claims' own connections: never queued behind acceptance group commits for one of the pool's
    return claimJob(claimPool(deps.pool), core.instanceId, id, slot, now, lease);
  });
  const claimed = await claimOnce();
  if (claimed) return claimed;
  const job = await readStored(core, id);
  if (!job) return null;
  if (CLAIMED_JOB_STATES.includes(job.state)) {
    if (!(await helpers.putBack(job, now))) return null;
  } else if (job.state === 'queued' && !core.planner.isPersisted(id)) {
    await helpers.writeSlot(id);
  } else if (CLAIMABLE.includes(job.state)) {
    // claimable, and not claimed: its synchronous v1 caller is gone, or the lease is not this node's (then the
    // expiry's fenced transaction fails too, and the job stays in the plan)
    if (await expireOrphan(core, id, now).catch(() => false)) return null;
    throw notHeld();
  } else return null;
  const again = await claimOnce();
  if (!again) await expireOrphan(core, id, now).catch(() => false);
  return again;
}

/**
 * The job's synchronous v1 caller waited in a process that is gone, so the claim refused it: expired in a
 * transaction of its own, never sent (src/queue/orphans.ts). False when it is no such job.
 */
async function expireOrphan(core: QueueCore, id: string, now: number): Promise<boolean> {
  return (await expireOrphans(core, (c) => orphanedSyncJobs(c, core.instanceId, BOOT_ID, id), now)).length > 0;
}

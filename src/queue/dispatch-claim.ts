/**
 * The dispatch lane's claim of a due job (src/queue/dispatch-loop.ts): one statement in the common case
 * (src/queue/sql/claimJob.ts), the stored row read only when the claim found it not claimable, to learn why.
 */
import { statesAccepting } from '../../machines/job.machine.js';
import type { Job } from './job.js';
import { StoredPayloadInvalid } from './payload.js';
import type { QueueCore } from './core.js';
import { claimJob } from './sql/claimJob.js';
import { getJob } from './sql/getJob.js';

/** A claim whose call was never made goes back by RETURNED: the states it is allowed in are the claimed ones. */
const CLAIMED = statesAccepting('RETURNED');

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
 * Claim `id`, due at `slot`, at `now`. When the row is not claimable it says why: still claimed by an earlier
 * claim of ours whose answer was lost (the call was never made: put back, then claimed), or waiting without a
 * stored slot (written, then claimed); otherwise it left the queue meanwhile (null).
 */
export async function claimDue(core: QueueCore, helpers: ClaimHelpers, id: string, slot: number, now: number): Promise<Job | null> {
  const claimOnce = () => unlessInvalid(core, id, () => core.transaction((c) => claimJob(c, core.instanceId, id, slot, now)));
  const claimed = await claimOnce();
  if (claimed) return claimed;
  const job = await readStored(core, id);
  if (!job) return null;
  if (CLAIMED.includes(job.state)) {
    if (!(await helpers.putBack(job, now))) return null;
  } else if (job.state === 'queued' && !core.planner.isPersisted(id)) {
    await helpers.writeSlot(id);
  } else return null;
  return claimOnce();
}

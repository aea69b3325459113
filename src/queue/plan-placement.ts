/**
 * What a plan of an acceptance's new jobs means, read off its result (src/queue/planning.ts `tryAdd`): each
 * new job's slot and queue position, and the waiting jobs it placed again that land elsewhere. Pure: the
 * planner's memory is changed only when the acceptance commits.
 *
 * The new jobs are recognised by identity: the plan was given the very objects (`fresh`, seq `seq0` on) and
 * names them in `placedJobs`, so a placement of a new job needs no lookup by id.
 */
import type { Placement, PlanJob, PlanResult } from './plan.js';
import type { SlotWrite } from './planning-types.js';

export interface NewJobsPlaced {
  /** per new job (in arrival order): its slot; null accepted without a slot (past the attempt cap), undefined unreachable */
  slotOf: (number | null | undefined)[];
  /** new job id → slot, of the accepted ones */
  slots: Map<string, number | null>;
  /** new job id → 1-based queue position once committed, of the accepted ones */
  positions: Map<string, number>;
  /** waiting jobs the plan placed again whose slot changes (null: it could not place them any more) */
  moved: SlotWrite[];
}

/**
 * @param kept    the first `kept` jobs of the dispatch order stay where they are (the plan's placements follow them)
 * @param rerun   the waiting jobs the plan placed again (with the slot memory holds for each)
 */
export function placeNewJobs(
  result: PlanResult,
  kept: number,
  fresh: readonly PlanJob[],
  seq0: number,
  rerun: Iterable<{ id: string; scheduledAt: number | null }>,
): NewJobsPlaced {
  const n = fresh.length;
  const slotOf = new Array<number | null | undefined>(n).fill(undefined);
  const posOf = new Array<number>(n).fill(0);
  // slots of the waiting jobs the plan placed again
  let again: Map<string, number> | null = null;
  const { placements, placedJobs } = result;
  for (let i = 0; i < placements.length; i++) {
    const job = placedJobs[i] as PlanJob;
    const at = (placements[i] as Placement).scheduledAt;
    const k = job.seq - seq0;
    if (k >= 0 && k < n && fresh[k] === job) {
      slotOf[k] = at;
      // placements follow the kept part of the dispatch order
      posOf[k] = kept + i + 1;
    } else (again ??= new Map()).set(job.id, at);
  }
  if (result.unplaced.length > 0) {
    // jobs without a slot come after every placed one
    const last = kept + placements.length + 1;
    const index = new Map(fresh.map((j, k) => [j.id, k]));
    for (const u of result.unplaced) {
      const k = index.get(u.jobId);
      if (k === undefined) continue;
      slotOf[k] = null;
      posOf[k] = last;
    }
  }
  const moved: SlotWrite[] = [];
  for (const old of rerun) {
    const at = again?.get(old.id) ?? null;
    if (old.scheduledAt !== at) moved.push({ jobId: old.id, scheduledAt: at });
  }
  const slots = new Map<string, number | null>();
  const positions = new Map<string, number>();
  for (let k = 0; k < n; k++) {
    const slot = slotOf[k];
    if (slot === undefined) continue;
    const id = (fresh[k] as PlanJob).id;
    slots.set(id, slot);
    positions.set(id, posOf[k] as number);
  }
  return { slotOf, slots, positions, moved };
}

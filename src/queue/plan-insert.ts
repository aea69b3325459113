/**
 * New jobs that go somewhere inside an existing plan, not after its end: a priority-5 job in front of a
 * waiting priority-1 job, or a plain job in front of a reminder whose notBefore lies days ahead. `planAppend`
 * refuses those; a full plan would walk every waiting job again (thousands in a full queue) for each batch.
 *
 * The plan up to the first place a new job could change is kept as it is: up to the first placed job that a
 * new one outranks (rule 1), or before which the plan ran out of eligible jobs (a new job, allowed now, would
 * have filled that gap). Every step before it took a job that outranks every new one, so a full plan takes
 * the same steps. From there the walk runs again over the new jobs and every job not in that prefix, with
 * the cursor after the prefix and the windows counting the history and the prefix's slots. The result equals
 * `planAll` over all jobs under the same proviso as `planAppend` (a full plan now would leave the prefix where
 * it is; test/unit/plan-property.test.ts compares the two over thousands of random queues).
 *
 * Only for new jobs allowed now (no notBefore ahead): one held back would take its step further on.
 */
import { before, type PlanJob } from './plan-waiting.js';
import { planFrom, type PlanResult, type PlanSettings, type RandomDelay } from './plan.js';
import { DAY_MS } from './windows.js';

/** A placed job of the current plan, in walk order, with what its step left behind. */
export interface Planned extends PlanJob {
  scheduledAt: number | null;
  /** the cursor after its step (its slot plus the pause after it); null if not known (then: plan in full) */
  after: number | null;
  /** the plan ran (or may have run) out of eligible jobs just before this step */
  idled: boolean;
}

export interface InsertInput {
  /** the placed jobs in walk order (slot ascending, then rule 1) */
  placed: readonly Planned[];
  /** waiting jobs without a slot (unreachable or past the attempt cap when last planned) */
  unslotted: readonly PlanJob[];
  fresh: readonly PlanJob[];
  history: readonly number[];
  settings: PlanSettings;
  random: RandomDelay;
  now: number;
}

/** The plan with `fresh` inserted: `kept` placed jobs stay, `result` is the rest; null when not applicable. */
export function planInsert(input: InsertInput): { kept: number; result: PlanResult } | null {
  const { placed, fresh, now } = input;
  let best: PlanJob | null = null;
  for (const j of fresh) {
    if (j.notBefore !== null && j.notBefore > now) return null;
    if (best === null || before(j, best)) best = j;
  }
  if (best === null) return null;
  let k = 0;
  while (k < placed.length) {
    const p = placed[k] as Planned;
    if (p.idled || !before(p, best)) break;
    k++;
  }
  // nothing to keep: the caller's full plan is as cheap
  if (k === 0) return null;
  const last = placed[k - 1] as Planned;
  if (last.after === null) return null;
  // What can still count from the cursor on: the walk never looks before it, so an instant at or before
  // cursor - 24 h never counts (the walk's own window counter drops those first). The prefix's slots ascend:
  // only its last day is taken, not every slot of a plan days long (sorted again by the counter each batch).
  const cursor = Math.max(last.after, now);
  const from = cursor - DAY_MS;
  const counted: number[] = input.history.filter((d) => d > from);
  let first = k;
  while (first > 0 && ((placed[first - 1] as Planned).scheduledAt as number) > from) first--;
  for (let i = first; i < k; i++) counted.push((placed[i] as Planned).scheduledAt as number);
  const jobs: PlanJob[] = [...fresh, ...input.unslotted];
  for (let i = k; i < placed.length; i++) jobs.push(placed[i] as Planned);
  const result = planFrom(jobs, { settings: input.settings, random: input.random, cursor, counted, now });
  return { kept: k, result };
}

/**
 * The dispatch order of the planner's waiting jobs: those with a slot, ascending by slot, then by rule 1
 * (priority descending, arrival ascending) — which is the order the planner's walk placed them in (its slots
 * never go back, and jobs placed at one instant are taken best first). Kept as an array of the jobs themselves
 * (the planner's objects) so that the next due job is its head, a queue position is a binary search (positions
 * are read on every acceptance), and a plan that keeps a prefix of it (src/queue/plan-insert.ts) can take it as
 * it is.
 */
export interface Slotted {
  id: string;
  priority: number;
  seq: number;
  scheduledAt: number | null;
}

/** a before b in the order (both with a slot) */
const earlier = (a: Slotted, b: Slotted) =>
  (a.scheduledAt as number) - (b.scheduledAt as number) || b.priority - a.priority || a.seq - b.seq;

export class DispatchOrder<T extends Slotted = Slotted> {
  /** the jobs themselves (the planner's own objects, whose slots it sets in place), in order */
  private items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  /** The first job's id in the order, if any. */
  head(): string | undefined {
    return this.items[0]?.id;
  }

  /** The jobs in order (not to be changed by the caller): a plan that keeps a prefix reads it without a copy. */
  all(): readonly T[] {
    return this.items;
  }

  /** Order `jobs` afresh (after loading them). */
  rebuild(jobs: Iterable<T>): void {
    this.items = [...jobs].filter((j) => j.scheduledAt !== null).sort(earlier);
  }

  /**
   * After a plan: the jobs not in `replanned` keep their places (none when null: a full plan), `placed` follow
   * in the order given (the plan's placements, in its walk order). When the replanned jobs in the order are
   * exactly those from `kept` on (a plan that kept a prefix, src/queue/plan-insert.ts), the order is cut
   * there instead of filtered: a full queue's acceptance in front of a reminder no longer walks every id.
   */
  keepThen(replanned: ReadonlySet<string> | null, placed: readonly T[], kept = -1): void {
    if (replanned === null) this.items = [...placed];
    else if (replanned.size === 0) {
      // an append (the usual acceptance): the order grows at its end, without a copy of what it holds
      for (const j of placed) this.items.push(j);
    } else if (kept >= 0 && this.isTailFrom(kept, replanned)) {
      this.items.length = kept;
      for (const j of placed) this.items.push(j);
    } else this.items = this.items.filter((j) => !replanned.has(j.id)).concat(placed);
  }

  /**
   * Every job of the order from `kept` on is in `replanned`, the one before it is not. (The caller's other
   * replanned jobs are not in the order: jobs without a slot, src/queue/planning.ts `add`; checking the prefix
   * for them would walk it.)
   */
  private isTailFrom(kept: number, replanned: ReadonlySet<string>): boolean {
    const items = this.items;
    if (kept > items.length || items.length - kept > replanned.size) return false;
    // a job of the prefix removed since the plan (a cancel, a dispatch) moved the tail's start: filter then
    if (kept > 0 && replanned.has((items[kept - 1] as T).id)) return false;
    for (let i = kept; i < items.length; i++) if (!replanned.has((items[i] as T).id)) return false;
    return true;
  }

  /** Take a job out of the order; answers the job that followed it (undefined: it was last, or not there). */
  remove(id: string): T | undefined {
    const i = this.items.findIndex((j) => j.id === id);
    if (i < 0) return undefined;
    this.items.splice(i, 1);
    return this.items[i];
  }

  /** 1-based position of a job with a slot. */
  position(job: Slotted): number {
    let lo = 0;
    let hi = this.items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const m = this.items[mid] as T;
      if (m.scheduledAt !== null && earlier(m, job) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo + 1;
  }
}

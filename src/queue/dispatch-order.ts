/**
 * The dispatch order of the planner's waiting jobs: those with a slot, ascending by slot, then by rule 1
 * (priority descending, arrival ascending) — which is the order the planner's walk placed them in (its slots
 * never go back, and jobs placed at one instant are taken best first). Kept as an array of ids so that the
 * next due job is its head, a queue position is a binary search (positions are read on every acceptance), and
 * a plan that keeps a prefix of it (src/queue/plan-insert.ts) can take it as it is.
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

export class DispatchOrder {
  private ids: string[] = [];

  constructor(private readonly lookup: (id: string) => Slotted | undefined) {}

  get size(): number {
    return this.ids.length;
  }

  /** The first job in the order, if any. */
  head(): string | undefined {
    return this.ids[0];
  }

  /** The ids in order (not to be changed by the caller). */
  all(): readonly string[] {
    return this.ids;
  }

  /** Order `jobs` afresh (after loading them). */
  rebuild(jobs: Iterable<Slotted>): void {
    this.ids = [...jobs].filter((j) => j.scheduledAt !== null).sort(earlier).map((j) => j.id);
  }

  /**
   * After a plan: the ids not in `replanned` keep their places (none when null: a full plan), `placed` follow
   * in the order given (the plan's placements, in its walk order).
   */
  keepThen(replanned: ReadonlySet<string> | null, placed: readonly string[]): void {
    if (replanned === null) this.ids = [...placed];
    else if (replanned.size === 0) {
      // an append (the usual acceptance): the order grows at its end, without a copy of what it holds
      for (const id of placed) this.ids.push(id);
    } else this.ids = this.ids.filter((id) => !replanned.has(id)).concat(placed);
  }

  remove(id: string): void {
    const i = this.ids.indexOf(id);
    if (i >= 0) this.ids.splice(i, 1);
  }

  /** 1-based position of a job with a slot. */
  position(job: Slotted): number {
    let lo = 0;
    let hi = this.ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const m = this.lookup(this.ids[mid] as string);
      if (m && m.scheduledAt !== null && earlier(m, job) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo + 1;
  }
}

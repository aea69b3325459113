/**
 * The dispatch order of the planner's waiting jobs: those with a slot, ascending by (slot, arrival). Kept as
 * an array of ids so that the next due job is its head and a queue position is a binary search (positions
 * are read on every acceptance), not a scan.
 */
export interface Slotted {
  id: string;
  seq: number;
  scheduledAt: number | null;
}

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

  /** Order `jobs` afresh (after a full plan). */
  rebuild(jobs: Iterable<Slotted>): void {
    this.ids = [...jobs].filter((j) => j.scheduledAt !== null)
      .sort((a, b) => (a.scheduledAt as number) - (b.scheduledAt as number) || a.seq - b.seq).map((j) => j.id);
  }

  /** A job placed after every ordered one (an append to the plan). */
  append(id: string): void {
    this.ids.push(id);
  }

  remove(id: string): void {
    const i = this.ids.indexOf(id);
    if (i >= 0) this.ids.splice(i, 1);
  }

  /** 1-based position of a job with slot `at` and arrival `seq`. */
  position(at: number, seq: number): number {
    let lo = 0;
    let hi = this.ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const m = this.lookup(this.ids[mid] as string);
      const mAt = m?.scheduledAt ?? Number.POSITIVE_INFINITY;
      if (mAt < at || (mAt === at && (m?.seq ?? 0) < seq)) lo = mid + 1;
      else hi = mid;
    }
    return lo + 1;
  }
}

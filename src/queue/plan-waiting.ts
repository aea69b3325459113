/**
 * The planner's waiting jobs (plan.ts): rule 1's order and the eligible-first hand-out of the notBefore rule.
 */
/** A waiting job as the planner sees it. */
export interface PlanJob {
  id: string;
  /** 1..9, 9 first. */
  priority: number;
  /** Arrival order (jobs.seq). */
  seq: number;
  notBefore: number | null;
  expiresAt: number;
}

/** true when job a goes before job b (rule 1). */
export const before = (a: PlanJob, b: PlanJob) => a.priority > b.priority || (a.priority === b.priority && a.seq < b.seq);
const byRank = (a: PlanJob, b: PlanJob) => b.priority - a.priority || a.seq - b.seq;

/**
 * The jobs not yet planned, handing out the best eligible one. Jobs without notBefore (nearly all) are read
 * from the rank-sorted array by a pointer; jobs with one enter a min-heap of ranks when their notBefore passes.
 */
export class Waiting {
  private readonly sorted: PlanJob[];
  private readonly free: number[] = []; // ranks without notBefore, ascending
  private readonly deferred: number[]; // ranks with notBefore, by notBefore
  private readonly heap: number[] = []; // admitted deferred ranks
  private f = 0;
  private d = 0;

  constructor(jobs: readonly PlanJob[]) {
    this.sorted = [...jobs].sort(byRank);
    const deferred: number[] = [];
    this.sorted.forEach((j, i) => (j.notBefore === null ? this.free : deferred).push(i));
    this.deferred = deferred.sort((a, b) => this.sorted[a]!.notBefore! - this.sorted[b]!.notBefore!);
  }

  get last(): PlanJob | null {
    return this.sorted.length > 0 ? this.sorted[this.sorted.length - 1]! : null;
  }

  get empty(): boolean {
    return this.f >= this.free.length && this.d >= this.deferred.length && this.heap.length === 0;
  }

  /** The earliest notBefore not yet admitted, or null. */
  nextNotBefore(): number | null {
    return this.d < this.deferred.length ? this.sorted[this.deferred[this.d]!]!.notBefore : null;
  }

  /** Let in every job allowed at `t`. */
  admit(t: number): void {
    while (this.d < this.deferred.length && this.sorted[this.deferred[this.d]!]!.notBefore! <= t) this.push(this.deferred[this.d++]!);
  }

  /** The best admitted job, removed; undefined when none is eligible. */
  take(): PlanJob | undefined {
    const h = this.heap;
    const fromFree = this.f < this.free.length ? this.free[this.f]! : Infinity;
    if (h.length > 0 && h[0]! < fromFree) return this.sorted[this.popHeap()];
    return fromFree === Infinity ? undefined : this.sorted[this.free[this.f++]!];
  }

  /** Everything left, best first, eligible or not. */
  drain(): PlanJob[] {
    this.admit(Infinity);
    const out: PlanJob[] = [];
    for (let j = this.take(); j !== undefined; j = this.take()) out.push(j);
    return out;
  }

  private push(x: number): void {
    const h = this.heap;
    let i = h.push(x) - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p]! <= x) break;
      h[i] = h[p]!;
      i = p;
    }
    h[i] = x;
  }

  private popHeap(): number {
    const h = this.heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= h.length) break;
        const c = l + 1 < h.length && h[l + 1]! < h[l]! ? l + 1 : l;
        if (h[c]! >= last) break;
        h[i] = h[c]!;
        i = c;
      }
      h[i] = last;
    }
    return top;
  }
}

/**
 * The planner's dispatch history: the instants that count against the sliding windows (the last 24 h,
 * kept ascending) and the last dispatch (rule 2's pause starts from it). Loaded from PostgreSQL with the mirror,
 * then moved by every claim, a send outside the queue, and a dispatch that provably did not go out.
 */
import { DAY_MS, upperBound } from './windows.js';

export class DispatchHistory {
  private instants: number[] = [];
  /** the last actual dispatch, or null if there never was one */
  last: number | null = null;

  load(instants: readonly number[], last: number | null): void {
    this.instants = [...instants].sort((a, b) => a - b);
    this.last = last;
  }

  /**
   * Count a dispatch; answers how to take it back entirely (a claim that did not happen after all). The
   * instants stay in ascending order (`recent` drops from the front, the limits count by binary search): one
   * older than the newest (a write-back of an earlier dispatch) is inserted in its place.
   */
  record(at: number): () => void {
    const before = this.last;
    const xs = this.instants;
    if (xs.length === 0 || (xs[xs.length - 1] as number) <= at) xs.push(at);
    else xs.splice(upperBound(xs, at, 0, xs.length), 0, at);
    if (this.last === null || at > this.last) this.last = at;
    return () => {
      this.forget(at);
      if (this.last === at) this.last = before;
    };
  }

  /**
   * A dispatch counted at its claim was handed to the network at `at`, later (src/queue/outcome-writer.ts
   * `fromTheCall`): the pause to the next one runs from there. The windows keep counting it at its claim.
   */
  calledAt(at: number): void {
    if (this.last === null || at > this.last) this.last = at;
  }

  /** A dispatch that ended provably unsent stops counting. */
  forget(at: number): void {
    const i = this.instants.lastIndexOf(at);
    if (i >= 0) this.instants.splice(i, 1);
  }

  /** The instants that can still count at `now` (older ones are dropped). */
  recent(now: number): number[] {
    const cut = now - DAY_MS;
    let i = 0;
    while (i < this.instants.length && (this.instants[i] as number) <= cut) i++;
    if (i > 0) this.instants = this.instants.slice(i);
    return this.instants;
  }
}

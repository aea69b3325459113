/**
 * Freed slots: what the planner (src/queue/planning.ts) still counts of the jobs that left its plan without going
 * out (a cancel, an expiry, a claim another path won), so that it holds no new job back. Apart from the planner
 * because it is one rule with its own bound (FREED_REPLAN_MS) and its own bookkeeping: which removals the plan's
 * tail has not seen (new jobs are then not appended to it), and how much freed time the plan still counts.
 */

/**
 * How much freed time in the middle of the plan (the pauses of cancelled or expired jobs, `removed`) is left
 * counted before the next acceptance plans in full: the most any job is late for it.
 */
export const FREED_REPLAN_MS = 60_000;

export class FreedSlots {
  /**
   * Removals that leave the tail wrong (`removed`: the last placed job gone without going out, one after a
   * gap, or freed time past FREED_REPLAN_MS) so far, and how many of them the tail has seen: new jobs are not
   * appended to a tail that has not seen every one of them (src/queue/planning.ts `add`).
   */
  private freed = 0;
  private tailFreed = 0;
  /** the pauses of placed jobs removed from the middle of the plan without going out, since the last full plan */
  private freedMs = 0;

  /** Where a plan starts from: handed back to `planned` when it is applied. */
  get mark(): number {
    return this.freed;
  }

  /** The tail has seen every removal so far: new jobs may be appended to it. */
  get tailCurrent(): boolean {
    return this.tailFreed === this.freed;
  }

  /** The plan still counts freed time in its middle. */
  get counted(): boolean {
    return this.freedMs !== 0;
  }

  /** The waiting jobs were read again from PostgreSQL: the next plan is made in full. */
  loaded(): void {
    this.tailFreed = this.freed;
    this.freedMs = 0;
  }

  /**
   * A plan made at `mark` is applied (`full`: of every waiting job, which gives the freed time back). Answers
   * whether its tail holds: a job removed without going out while the plan was made (a cancel does not wait for
   * the queue's executor) is still counted by its tail, and the order's marks of the gap it left went with the
   * plan's jobs, so the next acceptance plans in full.
   */
  planned(mark: number, full: boolean): boolean {
    this.tailFreed = mark;
    if (full) this.freedMs = 0;
    return mark === this.freed;
  }

  /**
   * A job placed at `slot` left the plan without going out (`next`: the job after it in the dispatch order), so
   * its slot is free, and what the plan still counts of it must not hold new jobs back:
   * - it came after a gap (it waited for its notBefore): the job after it now comes after that gap, and is
   *   marked so (`idled`). A job allowed now was placed behind the whole gap otherwise, hours or days late, or
   *   refused TTL_UNREACHABLE with nothing in front of it;
   * - it was the last placed job: the tail counts its slot, so the next acceptance walks on from the job before
   *   it instead (src/queue/plan-insert.ts) and a new job takes the freed slot;
   * - it was in the middle of the plan: the jobs after it keep their slots (moving them all forward would
   *   rewrite every row after it, for every cancel), so its pause is still counted, late by at most
   *   FREED_REPLAN_MS for any job: past that, the next acceptance plans in full and gives the time back, as it
   *   does for a new job that the counted time would leave without a slot (src/queue/planning.ts
   *   `unlessFreedCosts`); under an hourly or daily ceiling (`windowed`) the next acceptance plans in full at
   *   once: the place the slot took in the windows made every later job late by up to a window.
   * Answers whether the tail must go at once (the freed time passed FREED_REPLAN_MS).
   */
  removed(job: { after: number | null; idled: boolean }, slot: number, next: { idled: boolean } | undefined, windowed: boolean): boolean {
    if (next === undefined) {
      this.freed++;
      return false;
    }
    if (job.idled) {
      next.idled = true;
      // a plan being committed meanwhile brings its own marks: the next acceptance then plans in full
      this.freed++;
      return false;
    }
    // Under an hourly or daily ceiling the slot also took a place in its windows: the jobs after it were placed
    // as if it went out, each up to a whole window late now, and a new job after them too (found from the
    // outside: with maxPerHour 2, a cancel in the middle put the next send an hour late). Nothing bounds that
    // by FREED_REPLAN_MS: the next acceptance plans in full (the slots that move are written by the slot writer).
    if (windowed) {
      this.freed++;
      return true;
    }
    this.freedMs += job.after === null ? 0 : Math.max(0, job.after - slot);
    if (this.freedMs >= FREED_REPLAN_MS) {
      this.freed++;
      return true;
    }
    return false;
  }
}

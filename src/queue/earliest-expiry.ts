/**
 * The earliest expiresAt of an instance's waiting jobs, kept as jobs come and go (src/queue/waiting-jobs.ts): every
 * arm of the dispatch timer and every dispatch step asks, and a scan of every waiting job per ask cost an
 * acceptance at 15,000 pending more than its plan did. A job that comes can only lower it; one that leaves may
 * have been it, and then it is found again by one scan on the next read.
 */
export class EarliestExpiry {
  /** Infinity: no waiting job; null: unknown until the next read */
  private at: number | null = null;

  added(expiresAt: number): void {
    if (this.at !== null && expiresAt < this.at) this.at = expiresAt;
  }

  removed(expiresAt: number): void {
    if (this.at !== null && expiresAt <= this.at) this.at = null;
  }

  /** Every waiting job was replaced: found again on the next read. */
  reset(): void {
    this.at = null;
  }

  /** The earliest expiresAt of `waiting` (the jobs this was told of), Infinity when there is none. */
  of(waiting: Iterable<{ expiresAt: number }>): number {
    if (this.at === null) {
      let t = Number.POSITIVE_INFINITY;
      for (const j of waiting) if (j.expiresAt < t) t = j.expiresAt;
      this.at = t;
    }
    return this.at;
  }
}

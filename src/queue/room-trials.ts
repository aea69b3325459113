import type { NewJob } from './job.js';

/**
 * Trial plans of a batch's new jobs once they fill the queue: the ones no slot fits before their expiry are
 * refused TTL_UNREACHABLE and take no room, so the requests after them are not refused QUEUE_FULL while the
 * queue has room. A trial runs only when jobs came in since the last one, at most MAX_TRIALS per batch (each
 * plans the batch's jobs again): a batch whose jobs keep freeing room past that is refused QUEUE_FULL beyond it.
 */
export class RoomTrials {
  static readonly MAX_TRIALS = 8;
  private trials = 0;
  private triedWith = 0;

  constructor(private readonly plan: (jobs: NewJob[]) => Map<string, number | null>) {}

  /** Whether a trial plan now leaves room for one more job (it adds the jobs it finds unreachable to `unreachable`). */
  freed(fresh: readonly { job: NewJob }[], unreachable: Set<NewJob>, pending: number, maxPending: number): boolean {
    if (fresh.length === this.triedWith || this.trials >= RoomTrials.MAX_TRIALS) return false;
    this.trials++;
    this.triedWith = fresh.length;
    const jobs = fresh.map((f) => f.job).filter((j) => !unreachable.has(j));
    const slots = this.plan(jobs);
    for (const j of jobs) if (!slots.has(j.id)) unreachable.add(j);
    return pending + fresh.length - unreachable.size < maxPending;
  }
}

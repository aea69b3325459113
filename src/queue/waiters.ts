/** Callers waiting for a job to end (the v1 synchronous wait), on the injectable clock. */
import type { Clock } from '../clock.js';
import type { Job } from './jobs.js';

type Waiter = (job: Job) => void;

export class TerminalWaiters {
  private readonly waiting = new Map<string, Set<Waiter>>();

  constructor(private readonly clock: Clock) {}

  /** The job once it is terminal, or null after `timeoutMs`. */
  wait(jobId: string, timeoutMs: number): Promise<Job | null> {
    return new Promise((resolve) => {
      const set = this.waiting.get(jobId) ?? new Set<Waiter>();
      const timer = this.clock.setTimeout(() => {
        set.delete(done);
        if (set.size === 0) this.waiting.delete(jobId);
        resolve(null);
      }, timeoutMs);
      const done: Waiter = (job) => {
        this.clock.clearTimeout(timer);
        resolve(job);
      };
      set.add(done);
      this.waiting.set(jobId, set);
    });
  }

  /** The job reached a terminal state: answer everyone waiting for it. */
  settle(job: Job): void {
    const set = this.waiting.get(job.id);
    if (!set) return;
    this.waiting.delete(job.id);
    for (const w of set) w(job);
  }
}

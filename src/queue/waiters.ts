/**
 * Callers waiting for a job to end (the v1 synchronous wait), on the injectable clock. When the queue stops
 * (its instance handed over to another node, or stopped here), every wait still open ends with `left`'s error:
 * the job ends elsewhere now, and the caller asks the instance's owner again (src/http/routes/legacy-queued.ts);
 * a wait that begins after that ends with it at once.
 */
import type { Clock } from '../clock.js';
import type { Job } from './jobs.js';

interface Waiter {
  done(job: Job): void;
  fail(err: Error): void;
}

export class TerminalWaiters {
  private readonly waiting = new Map<string, Set<Waiter>>();
  /** the error every wait ends with once the queue stopped */
  private gone: Error | null = null;

  constructor(private readonly clock: Clock) {}

  /** The job once it is terminal, or null after `timeoutMs`; rejected once the queue stopped. */
  wait(jobId: string, timeoutMs: number): Promise<Job | null> {
    return new Promise((resolve, reject) => {
      if (this.gone) return reject(this.gone);
      const set = this.waiting.get(jobId) ?? new Set<Waiter>();
      const forget = () => {
        set.delete(waiter);
        if (set.size === 0 && this.waiting.get(jobId) === set) this.waiting.delete(jobId);
      };
      const timer = this.clock.setTimeout(() => {
        forget();
        resolve(null);
      }, timeoutMs);
      const waiter: Waiter = {
        done: (job) => {
          this.clock.clearTimeout(timer);
          resolve(job);
        },
        fail: (err) => {
          this.clock.clearTimeout(timer);
          reject(err);
        },
      };
      set.add(waiter);
      this.waiting.set(jobId, set);
    });
  }

  /** The job reached a terminal state: answer everyone waiting for it. */
  settle(job: Job): void {
    const set = this.waiting.get(job.id);
    if (!set) return;
    this.waiting.delete(job.id);
    for (const w of set) w.done(job);
  }

  /** The queue stopped: every wait open now, and every later one, ends with `err`. */
  left(err: Error): void {
    this.gone = err;
    const sets = [...this.waiting.values()];
    this.waiting.clear();
    for (const set of sets) for (const w of set) w.fail(err);
  }
}

/**
 * The one writer of slots of waiting jobs (src/queue/sql/saveSlots.ts). The planner's memory holds the
 * current plan and, per job, the slot PostgreSQL holds (src/queue/waiting-jobs.ts); this writes the difference:
 *
 * - a re-plan writes its rows in its own transaction, with its epoch and its event (`exclusive`);
 * - the slots an acceptance moved (a higher priority went in front of waiting jobs) are written right after
 *   it, off the acceptance's path (`soon`): the acceptance commits only its own rows, and however many
 *   acceptances move slots meanwhile, one write follows with the latest plan;
 * - a job about to be claimed whose slot is not written yet is written first (`flush([id])`), so that its
 *   row is `scheduled` when the claim's conditional UPDATE looks.
 *
 * Writes run one at a time, each reading the plan when it starts, so a later plan is never overwritten by an
 * earlier one. A write that fails (the store went away) is tried again; in degraded mode none is attempted
 * until the store answers. A restart re-plans from PostgreSQL (src/queue/worker.ts `start`) and writes what
 * differs, so a slot lost with a crash is recomputed by the planner rule, never needed.
 */
import type { TimerHandle } from '../clock.js';
import type { QueueCore } from './core.js';
import { WRITE_BACK_RETRY_MS } from './write-back.js';
import { saveSlots } from './sql/saveSlots.js';

export class SlotWriter {
  private chain: Promise<unknown> = Promise.resolve();
  private queued = false;
  private retry: TimerHandle | null = null;

  constructor(private readonly core: QueueCore) {}

  /** Run `work` while no other slot write runs; writes run in the order they were asked for. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.chain.then(work);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Write the slots memory holds and PostgreSQL does not, soon (after the current turn), once. */
  soon(): void {
    if (this.queued || this.core.planner.unwrittenCount() === 0) return;
    this.queued = true;
    setImmediate(() => {
      this.queued = false;
      this.flush().catch((err: unknown) => {
        this.core.deps.log.warn({ err, instanceId: this.core.instanceId }, 'slots not written yet; trying again');
        this.retryLater();
      });
    });
  }

  /** Write the unwritten slots now (of `ids` only, when given); answers how many rows were written. */
  flush(ids?: readonly string[]): Promise<number> {
    return this.exclusive(async () => {
      const { core } = this;
      // degraded: nothing reaches the store; the recovery asks again
      if (core.degraded) return 0;
      const writes = core.planner.unpersisted(ids);
      if (writes.length === 0) return 0;
      const n = await core.transaction((c) => saveSlots(c, core.instanceId, writes, core.epoch));
      core.planner.persistedAs(writes);
      return n;
    });
  }

  /** Stop retrying (the queue stops). */
  stop(): void {
    if (this.retry !== null) this.core.deps.clock.clearTimeout(this.retry);
    this.retry = null;
  }

  private retryLater(): void {
    const { core } = this;
    if (core.stopped || this.retry !== null) return;
    this.retry = core.deps.clock.setTimeout(() => {
      this.retry = null;
      this.soon();
    }, WRITE_BACK_RETRY_MS);
  }
}

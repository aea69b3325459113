/**
 * What the queue knows but PostgreSQL does not yet: kept in memory while the store is unreachable and written
 * back when it answers again.
 *
 * - Sends made outside the queue in `memory-degraded` mode (v1): their instants go to `dispatches` on
 *   recovery, so the sliding windows stay true; they are on disk too (degraded-journal.ts), so that a killed
 *   process does not lose them.
 * - Outcomes of dispatches whose write failed (the send went out during the outage, or the connection broke
 *   at the write): without them the job would stay `sending` for good. Each is written back, with its
 *   `message.*` event, once the store answers; the write is conditional on `sending`, so a write that did
 *   commit but whose answer was lost is not repeated. They are on disk too (degraded-journal.ts): a process
 *   killed first leaves them to the next start, which writes them before any job left `sending` becomes `unknown`.
 */
import type { Job } from './job.js';
import type { DispatchOutcome, SendJournal } from './types.js';

export interface KeptOutcome {
  job: Job;
  outcome: DispatchOutcome;
  /** when the outcome was known (terminalAt) */
  at: number;
}

/** How soon an unwritten outcome or a failed recovery is tried again while the store looks reachable. */
export const WRITE_BACK_RETRY_MS = 2_000;

export class WriteBack {
  private readonly outcomes = new Map<string, KeptOutcome>();
  private dispatches: number[] = [];
  private inWrite: number[] = [];

  /** `journal`: where the kept sends are also written, so that a killed process does not lose them (degraded-journal.ts) */
  constructor(private readonly instanceId: string, private readonly journal?: SendJournal) {}

  /** An outcome the store did not take: on disk too before anyone is told it (degraded-journal.ts). */
  keepOutcome(kept: KeptOutcome): void {
    this.journalOutcome(kept);
    this.outcomes.set(kept.job.id, kept);
  }

  /** Outcomes still to write, oldest first. */
  keptOutcomes(): KeptOutcome[] {
    return [...this.outcomes.values()];
  }

  /**
   * An outcome whose write has not ended in time (the store hangs): on disk now, before the write fails or
   * succeeds (degraded-journal.ts); `outcomeStored` once it is in the store. Found from the outside: behind a
   * store that hangs rather than refuses, the write took 3-5 s to fail, and a kill meanwhile made the job unknown.
   */
  journalOutcome(kept: KeptOutcome): void {
    this.journal?.outcome(this.instanceId, kept.job.id, kept.outcome, kept.at);
  }

  /** The outcome of `jobId` is in the store (its journal line, if any, is settled). */
  outcomeStored(jobId: string, at: number): void {
    this.journal?.stored(this.instanceId, jobId, at);
  }

  /** Whether an outcome of `jobId` waits to be written. */
  keepsOutcomeOf(jobId: string): boolean {
    return this.outcomes.has(jobId);
  }

  /** The kept outcome of `jobId` is in the store now (or its job had left `sending`). */
  outcomeWritten(jobId: string): void {
    const kept = this.outcomes.get(jobId);
    if (!kept) return;
    this.outcomes.delete(jobId);
    this.outcomeStored(jobId, kept.at);
  }

  get hasOutcomes(): boolean {
    return this.outcomes.size > 0;
  }

  /** A send outside the queue while degraded. */
  keepDispatch(at: number): void {
    this.journal?.kept(this.instanceId, at);
    this.dispatches.push(at);
  }

  /** That send provably did not go out. */
  dropDispatch(at: number): void {
    const i = this.dispatches.indexOf(at);
    if (i < 0) return;
    this.dispatches.splice(i, 1);
    this.journal?.dropped(this.instanceId, at);
  }

  keptDispatches(): number[] {
    return [...this.dispatches];
  }

  /** The kept sends are in PostgreSQL now. */
  dispatchesWritten(count: number): void {
    this.journal?.written(this.instanceId, this.dispatches.slice(0, count));
    this.dispatches = this.dispatches.slice(count);
  }

  /** A send outside the queue counted in memory whose row is being written (the store reachable): not journaled. */
  writing(at: number): void {
    this.inWrite.push(at);
  }

  /** Its row is written, or it provably did not go out. */
  written(at: number): void {
    const i = this.inWrite.indexOf(at);
    if (i >= 0) this.inWrite.splice(i, 1);
  }

  /**
   * The sends memory counts that PostgreSQL does not hold yet (kept, or being written): a queue that reads its
   * history again from the store counts them on top of it. Found from the outside: a re-read during an outage
   * (after a commit of unknown outcome) replaced the history with the store's, the sends kept for write-back
   * dropped out of the windows, and the hourly ceiling was passed by as many.
   */
  uncommittedDispatches(): number[] {
    return this.inWrite.length === 0 ? [...this.dispatches] : [...this.dispatches, ...this.inWrite];
  }
}

/**
 * The re-plans of one instance's queue (src/queue/dispatch-loop.ts asks for them; each runs on the serial
 * executor, which its caller holds): of every waiting job, written in one transaction with the plan's epoch
 * and its event (`locked`: a limit change, the API's re-plan, a backlog, a start), and what follows a failed
 * re-check at a due slot (`afterFailedRecheck`): the due job waits out its spacing, or every waiting job is
 * planned again in memory and the moved slots are written right after by the slot writer. Each arms the
 * lane again afterwards (`arm`).
 */
import type { QueueCore } from './core.js';
import type { Recheck } from './plan.js';
import type { SlotWriter } from './slot-writer.js';
import { saveSlots } from './sql/saveSlots.js';
import { setPlanEpoch } from './sql/setPlanEpoch.js';

/**
 * How far past its slot a due job may wait for its spacing instead of a re-plan of every waiting job
 * (waitOutSpacing); at most half the instance's minimum pause.
 */
export const SPACING_GRACE_MS = 50;

export class Replans {
  constructor(
    private readonly core: QueueCore,
    private readonly slots: SlotWriter,
    /** set the lane's timer to the next due slot of the new plan */
    private readonly arm: () => void,
  ) {}

  /**
   * Re-plan every waiting job (on the serial executor: the caller holds it). Only the rows whose slot differs
   * from what PostgreSQL holds are written, with the epoch and the event, in one transaction; a job left
   * without a slot (none before its expiry, or past the attempt cap) waits without one until a re-plan or
   * its expiry.
   */
  async locked(reason: string, now: number, announce: boolean): Promise<{ affected: number; epoch: number }> {
    const { core } = this;
    const plan = core.planner.replan(now, core.deps.settings());
    const epoch = core.epoch + 1;
    // the jobs whose slot, as a read of the job shows it, this re-plan changes: moved, or given or taken one
    let affected = 0;
    await this.slots.exclusive(async () => {
      const writes = plan.writes();
      affected = writes.length;
      await core.transaction(async (c) => {
        await saveSlots(c, core.instanceId, writes, epoch);
        await setPlanEpoch(c, core.instanceId, epoch);
        if (announce) await core.emit(c, 'queue.replanned', { affected, epoch, reason });
      });
      core.epoch = epoch;
      plan.commit(writes);
    });
    this.arm();
    return { affected, epoch };
  }

  /**
   * The re-check at `due`'s slot failed (on the serial executor: the caller holds it): checked again now, then
   * the job waits out its spacing (waitOutSpacing) or every waiting job is planned again (atOnce). Answers
   * whether it re-planned.
   */
  afterFailedRecheck(due: string): boolean {
    const { planner, deps } = this.core;
    const now = this.core.now();
    const settings = deps.settings();
    const check = planner.recheck(now, settings);
    // it holds by now (the executor was busy meanwhile): the lane takes the job at once
    if (check.ok) return false;
    if (this.waitOutSpacing(due, check, settings.minDelayMs)) return false;
    this.atOnce(now);
    return true;
  }

  /**
   * A fixed pause (minDelayMs = maxDelayMs) leaves no slack: each dispatch goes out a few milliseconds after its
   * slot, so the next slot, exactly one pause later, is that much too close to it. A re-plan of every waiting job
   * then followed about every other dispatch, and the slot writer rewrote every waiting row: one instance with a
   * 1 s pause and 4,815 waiting rewrote 41,363 job rows in 15 s (25 with a 1.0-1.5 s pause). When the spacing
   * alone failed and the earliest instant it holds is at most SPACING_GRACE_MS (and half a pause) after the due
   * job's slot, and before the next job's, only that job waits: its slot moves there and the lane wakes then,
   * when the re-check decides again. The later jobs keep theirs; each inherits the shortfall so far, and once it
   * passes the grace the re-plan takes all of them as before. So no waiting job's slot is more than the grace
   * early, and the pause holds between the actual dispatch instants.
   */
  private waitOutSpacing(due: string, check: Exclude<Recheck, { ok: true }>, minDelayMs: number): boolean {
    if (check.exhausted || check.nextAt === null || check.failed.length !== 1 || check.failed[0] !== 'spacing') return false;
    const slot = this.core.planner.slotOf(due);
    if (slot === null || slot === undefined || check.nextAt - slot > Math.min(SPACING_GRACE_MS, minDelayMs / 2)) return false;
    return this.core.planner.postponeHead(due, check.nextAt);
  }

  /**
   * Re-plan every waiting job in memory and write the slots that moved right after (the slot writer), for a
   * failed re-check (on the serial executor: the caller holds it). The lane goes on with the new plan at once:
   * its first slot is `last dispatch + pause`, a few tens of milliseconds away, and a re-plan that waited for
   * its transaction first (a pool connection behind acceptance group commits, then its round trips) armed the
   * lane for slots already past — the next dispatch late by the write, and so the next re-check failing too.
   * Like the slots an acceptance moved, these are written with the current epoch and no event (a re-check's
   * re-plan announces none); a claim before the write writes its own slot (src/queue/dispatch-claim.ts), and a
   * slot lost with a crash is planned again at start.
   */
  private atOnce(now: number): void {
    this.core.planner.replan(now, this.core.deps.settings()).commit([]);
    this.slots.soon();
  }
}

/**
 * The planner's memory of one instance: its waiting jobs with their slots (src/queue/waiting-jobs.ts), its
 * dispatch history (src/queue/dispatch-history.ts) and the tail of the current plan. The decisions are the pure
 * functions of plan.ts; this class only keeps their inputs and outputs so that an acceptance appends to the plan
 * in O(new jobs) and a re-plan rebuilds it.
 *
 * Every mutating call returns a proposal that takes effect on `commit()`, once PostgreSQL committed what it
 * is about (the inserted jobs, the re-plan's epoch): memory never runs ahead of what exists and in which order.
 * Slots are the exception: each job also remembers the slot PostgreSQL holds (`persisted`); a re-plan writes
 * the rows that differ, the slot writer (src/queue/slot-writer.ts) those an acceptance moved. A restart
 * re-plans from PostgreSQL, so a slot not yet written is never needed to decide anything.
 */
import { planAll, planAppend, recheck, stableRandomDelay, type PlanJob, type PlanResult, type PlanTail, type RandomDelay, type Recheck } from './plan.js';
import { planInsert } from './plan-insert.js';
import { placeNewJobs } from './plan-placement.js';
import type { AddProposal, MirrorJob, ReplanProposal, SlotWrite } from './planning-types.js';
import type { InstanceSettings } from './settings.js';
import { DispatchHistory } from './dispatch-history.js';
import { FreedSlots } from './freed-slots.js';
import { WaitingJobs, held, type Held } from './waiting-jobs.js';

export type { AddProposal, MirrorJob, PlanJob, ReplanProposal, SlotWrite } from './planning-types.js';

const samePlanSettings = (a: InstanceSettings, b: InstanceSettings) =>
  a.maxPerHour === b.maxPerHour && a.maxPer24h === b.maxPer24h && a.minDelayMs === b.minDelayMs &&
  a.maxDelayMs === b.maxDelayMs && JSON.stringify(a.quietHours) === JSON.stringify(b.quietHours);

/**
 * A plan of some jobs: the first `kept` of the dispatch order stay where they are, the waiting jobs `rerun`
 * (all of them: null) were planned again with the new ones.
 */
interface Step {
  result: PlanResult;
  kept: number;
  rerun: Held[] | null;
}

export class Planner {
  private readonly waiting = new WaitingJobs();
  private readonly history = new DispatchHistory();
  private tail: PlanTail | null = null;
  private tailSettings: InstanceSettings | null = null;
  /** the removals without a dispatch that the tail has not seen, and the freed time the plan still counts */
  private readonly freed = new FreedSlots();
  private retryAt: number | null = null;
  private nextSeq = 1;
  /** re-plans proposed and loads so far: a proposal whose number is the latest marks the jobs' slots (`replan`) */
  private proposals = 0;
  private readonly random: RandomDelay;

  constructor(opts: { random?: ((min: number, max: number) => number) | undefined; salt?: string }) {
    const random = opts.random;
    this.random = random ? (min, max) => random(min, max) : stableRandomDelay(opts.salt ?? '');
  }

  load(input: { history: number[]; lastDispatchAt: number | null; waiting: MirrorJob[] }): void {
    this.history.load(input.history, input.lastDispatchAt);
    this.waiting.load(input.waiting);
    // a re-plan proposed before this load marked the objects it replaced: it reads its slots by id (`replan`)
    this.proposals++;
    this.nextSeq = input.waiting.reduce((m, j) => Math.max(m, j.seq), 0) + 1;
    this.tail = null;
    this.freed.loaded();
  }

  private full(now: number, settings: InstanceSettings, extra: PlanJob[] = []): Step {
    const jobs = [...this.waiting.values(), ...extra];
    const result = planAll({ jobs, history: this.history.recent(now), settings, lastDispatchAt: this.history.last, now, random: this.random });
    return { result, kept: 0, rerun: null };
  }

  /**
   * How new jobs go into the plan: after its end (planAppend), inside it from the first step they can change
   * (planInsert), or in a full plan; each equals the full plan (src/queue/plan-insert.ts).
   */
  private add(jobs: PlanJob[], now: number, settings: InstanceSettings): Step {
    const tail = this.tail;
    if (!tail || !this.tailSettings || !samePlanSettings(this.tailSettings, settings) || this.retryAt !== null) return this.full(now, settings, jobs);
    // after a removal the tail has not seen, the walk runs again from the jobs still placed (planInsert)
    const appended = this.freed.tailCurrent ? planAppend(tail, jobs, now) : null;
    if (appended) return this.unlessFreedCosts({ result: appended, kept: this.waiting.placed, rerun: [] }, jobs, now, settings);
    if (tail.exhaustedAt !== null || now < tail.plannedAt) return this.full(now, settings, jobs);
    const placed = this.waiting.ordered();
    // every waiting job with a slot is in the order: with as many as there are jobs, none is without one
    const unslotted = this.waiting.size === this.waiting.placed ? [] : [...this.waiting.values()].filter((j) => j.scheduledAt === null);
    const ins = planInsert({ placed, unslotted, fresh: jobs, history: this.history.recent(now), settings, random: this.random, now });
    if (!ins) return this.full(now, settings, jobs);
    return this.unlessFreedCosts({ result: ins.result, kept: ins.kept, rerun: [...placed.slice(ins.kept), ...unslotted] }, jobs, now, settings);
  }

  /**
   * `step`, unless freed time the plan still counts (src/queue/freed-slots.ts) costs a new job its slot: a job
   * the kept slots leave without one before its expiry may have one in a full plan, which gives the freed time back.
   */
  private unlessFreedCosts(step: Step, jobs: PlanJob[], now: number, settings: InstanceSettings): Step {
    const { unreachable, unplaced } = step.result;
    if (!this.freed.counted || (unreachable.length === 0 && unplaced.length === 0)) return step;
    return this.full(now, settings, jobs);
  }

  /**
   * Plan new jobs (in arrival order) into the current plan. The plan is given the very objects memory will
   * hold once committed (filled in by `commit`, never before), so its result names them by identity
   * (src/queue/plan-placement.ts).
   */
  tryAdd(newJobs: Omit<PlanJob, 'seq'>[], now: number, settings: InstanceSettings): AddProposal {
    if (newJobs.length === 0) return { slots: new Map(), moved: [], positions: new Map(), commit: null };
    const seq0 = this.nextSeq;
    const n = newJobs.length;
    const jobs: Held[] = new Array<Held>(n);
    for (let i = 0; i < n; i++) jobs[i] = held(newJobs[i] as Omit<PlanJob, 'seq'>, seq0 + i, null, null);
    const freedAt = this.freed.mark;
    const { result, kept, rerun } = this.add(jobs, now, settings);
    const { slotOf, slots, positions, moved } = placeNewJobs(result, kept, jobs, seq0, rerun ?? this.waiting.values());
    // a method, not an arrow bound to `commit`: tsx (keepNames) names such an arrow each time it is made
    const planner = this;
    return {
      slots,
      moved,
      positions,
      commit() {
        const { waiting } = planner;
        planner.nextSeq = seq0 + n;
        for (const m of moved) {
          const j = waiting.get(m.jobId);
          if (j) waiting.setSlot(j, m.scheduledAt);
        }
        // new jobs are inserted with their slot
        for (let k = 0; k < n; k++) {
          const slot = slotOf[k];
          if (slot === undefined) continue;
          const j = jobs[k] as Held;
          j.scheduledAt = slot;
          j.persisted = slot;
          waiting.insert(j);
        }
        planner.applyPlan(result, rerun, settings, freedAt, seq0, jobs, kept);
      },
    };
  }

  /**
   * After a plan's slots are in memory: what each step left behind, the dispatch order (the jobs not planned
   * again keep their places, then the plan's; a job cancelled meanwhile is in neither), the tail. `fresh`
   * are the new jobs of an acceptance (seq from `seq0` on), already in memory: placed ones need no lookup.
   */
  private applyPlan(result: PlanResult, rerun: Held[] | null, settings: InstanceSettings, freedAt: number, seq0 = 0, fresh: readonly Held[] = [], kept = -1): void {
    const placedHeld: Held[] = [];
    const { placements, placedJobs } = result;
    for (let i = 0; i < placements.length; i++) {
      const pj = placedJobs[i] as PlanJob;
      const k = pj.seq - seq0;
      const j = k >= 0 && k < fresh.length && fresh[k] === pj ? (fresh[k] as Held) : this.waiting.get(pj.id);
      if (!j) continue;
      j.after = result.after[i] as number;
      j.idled = result.idled[i] as boolean;
      placedHeld.push(j);
    }
    this.waiting.reorder(rerun, placedHeld, kept);
    let retryAt: number | null = null;
    for (const u of result.unplaced) if (retryAt === null || u.retryAt < retryAt) retryAt = u.retryAt;
    this.retryAt = retryAt;
    // a removal while this plan was made leaves its tail wrong (src/queue/freed-slots.ts `planned`)
    this.tail = this.freed.planned(freedAt, rerun === null) ? result.tail : null;
    this.tailSettings = settings;
  }

  /**
   * A plan of every waiting job, applied by `commit` once its `writes` are in PostgreSQL. The plan's result
   * names the very objects memory holds (`full` plans them), so each placed job is given its proposed slot in
   * place, numbered by the proposal, rather than through a map by id: a re-plan of 5,000 looked each job up by
   * its id four times (the placements' map, the jobs left without a slot, the rows to write, the plan taken).
   * A proposal made after this one, or a load that replaced the objects (never while one is written: both run
   * on the queue's serial executor), leaves this one reading its slots from a map by id, as before.
   */
  replan(now: number, settings: InstanceSettings): ReplanProposal {
    const freedAt = this.freed.mark;
    const { result } = this.full(now, settings);
    const { placements, placedJobs } = result;
    const proposal = ++this.proposals;
    for (let i = 0; i < placements.length; i++) {
      const j = placedJobs[i] as Held;
      j.proposed = (placements[i] as { scheduledAt: number }).scheduledAt;
      j.proposedBy = proposal;
    }
    let byId: Map<string, number> | null = null;
    const slotIn = (j: Held): number | null => {
      if (this.proposals === proposal) return j.proposedBy === proposal ? j.proposed : null;
      byId ??= new Map(placements.map((pl) => [pl.jobId, pl.scheduledAt]));
      return byId.get(j.id) ?? null;
    };
    const unslotted: string[] = [];
    for (const j of this.waiting.values()) if (j.proposedBy !== proposal) unslotted.push(j.id);
    /** the last rows `writes` answered, and their jobs: `commit` of those very rows needs no lookup */
    let lastWrites: SlotWrite[] | null = null;
    let lastJobs: Held[] = [];
    return {
      slots: placements,
      unslotted,
      writes: () => {
        const out: SlotWrite[] = [];
        const jobs: Held[] = [];
        for (const j of this.waiting.values()) {
          const at = slotIn(j);
          if (at !== j.persisted) {
            out.push({ jobId: j.id, scheduledAt: at });
            jobs.push(j);
          }
        }
        lastWrites = out;
        lastJobs = jobs;
        return out;
      },
      commit: (written) => {
        if (written === lastWrites) {
          // the slots of the jobs still held are set below, from the proposal and what is now persisted
          for (let k = 0; k < written.length; k++) (lastJobs[k] as Held).persisted = (written[k] as SlotWrite).scheduledAt;
        } else this.waiting.persistedAs(written);
        for (const j of this.waiting.values()) this.waiting.setSlot(j, slotIn(j));
        this.applyPlan(result, null, settings, freedAt);
      },
    };
  }

  /** Slots memory holds and PostgreSQL does not (of `ids` only, when given). */
  unpersisted(ids?: readonly string[]): SlotWrite[] {
    return this.waiting.unpersisted(ids);
  }

  unwrittenCount(): number { return this.waiting.unwrittenCount(); }

  /** True when PostgreSQL holds the job's slot in the current plan (or the job is not waiting). */
  isPersisted(jobId: string): boolean {
    return this.waiting.isPersisted(jobId);
  }

  /** `written` are committed: PostgreSQL holds these slots now. */
  persistedAs(written: readonly SlotWrite[]): void {
    this.waiting.persistedAs(written);
  }

  /**
   * Take a job out of the plan. A dispatch (`freed` false) used its slot: the plan after it holds. Otherwise
   * (a cancel, an expiry, a claim another path won) its slot is free, and what the plan still counts of it
   * must not hold new jobs back (src/queue/freed-slots.ts `removed`).
   */
  remove(jobId: string, freed = true): void {
    const removed = this.waiting.remove(jobId);
    if (!removed) return;
    const { job, next } = removed;
    if (!freed || job.scheduledAt === null) return;
    const s = this.tailSettings;
    const windowed = s !== null && (s.maxPerHour !== null || s.maxPer24h !== null);
    if (this.freed.removed(job, job.scheduledAt, next, windowed)) this.tail = null;
  }

  /** 1-based position in dispatch order; jobs without a slot come after; 0 when not waiting. */
  position(jobId: string): number {
    return this.waiting.position(jobId);
  }

  /** A waiting job's slot in the current plan (null: none; undefined: not waiting). */
  slotOf(jobId: string): number | null | undefined {
    return this.waiting.slotOf(jobId);
  }

  /** Move the next due job's slot later, to `at` (src/queue/waiting-jobs.ts `postponeHead`); answers whether it moved. */
  postponeHead(jobId: string, at: number): boolean {
    return this.waiting.postponeHead(jobId, at);
  }

  nextAt(): number | null {
    return this.waiting.nextAt();
  }

  /** The last plan stopped at the attempt cap and the instant it reached has come: plan again. */
  retryDue(now: number): boolean {
    return this.retryAt !== null && this.retryAt <= now;
  }

  /**
   * When the worker must look again: the next slot, the next expiry, or a re-plan after the attempt cap.
   * Without `includeSlots` (the session cannot send) only expiries and re-plans matter.
   */
  nextWake(includeSlots = true): number | null {
    let t = (includeSlots ? this.nextAt() : null) ?? Number.POSITIVE_INFINITY;
    // a job may still go out at exactly its expiresAt (the planner allows that slot): it expires after it
    const expiry = this.waiting.earliestExpiry();
    if (expiry + 1 < t) t = expiry + 1;
    if (this.retryAt !== null && this.retryAt < t) t = this.retryAt;
    return Number.isFinite(t) ? t : null;
  }

  /** When the next waiting job expires (a job may still go out at exactly its expiresAt), or null. */
  nextExpiry(): number | null {
    const expiry = this.waiting.earliestExpiry();
    return Number.isFinite(expiry) ? expiry + 1 : null;
  }

  /** Waiting jobs whose validity ended before they could go. */
  expiredAt(now: number): string[] {
    return this.waiting.expiredAt(now);
  }

  /** The job due now (earliest slot ≤ now), if any. */
  due(now: number): string | null {
    return this.waiting.due(now);
  }

  /** True when the plan fell behind (an outage): the backlog must be spread again at the configured rate. */
  hasOverdue(now: number): boolean {
    const at = this.nextAt();
    return (at !== null && at < now - 1_000) || (this.retryAt !== null && this.retryAt <= now);
  }

  recheck(now: number, settings: InstanceSettings): Recheck {
    return recheck(now, this.history.recent(now), settings, this.history.last);
  }

  /** Count a dispatch at `at`; answers how to take it back if it did not happen after all. */
  recordDispatch(at: number): () => void {
    return this.history.record(at);
  }

  forgetDispatch(at: number): void {
    this.history.forget(at);
  }

  /** A dispatch was handed to the network at `at`, after its claim: the pause to the next one runs from there. */
  dispatchCalledAt(at: number): void {
    this.history.calledAt(at);
  }

  historySnapshot(now: number): number[] { return this.history.recent(now); }
  waitingCount(): number { return this.waiting.size; }
  scheduledCount(): number { return this.waiting.placed; }
}

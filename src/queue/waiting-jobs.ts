/**
 * The planner's waiting jobs in memory (src/queue/planning.ts): each with its slot in the current plan and the one
 * PostgreSQL holds, the dispatch order of those with a slot (src/queue/dispatch-order.ts) with each job's place in
 * it, and their earliest expiry. Apart from the planner because this is what it keeps, not how it plans: every
 * read of a job's slot, its place in the queue, what is due or expired, and what PostgreSQL does not hold yet is
 * answered here, and the planner changes it only through `insert`, `setSlot`, `reorder` and `remove`.
 */
import type { PlanJob } from './plan.js';
import type { Planned } from './plan-insert.js';
import type { MirrorJob, SlotWrite } from './planning-types.js';
import { DispatchOrder } from './dispatch-order.js';
import { EarliestExpiry } from './earliest-expiry.js';

/**
 * A waiting job in memory: its slot in the current plan, the one PostgreSQL holds, and what its step left.
 * `pos` is its 1-based place in the dispatch order as of order version `posAt` (a hint: valid while the
 * order has not changed since). `proposed` is the slot the re-plan numbered `proposedBy` gives it (`replan`).
 */
export interface Held extends MirrorJob, Planned {
  persisted: number | null;
  pos: number;
  posAt: number;
  proposed: number | null;
  proposedBy: number;
}

/** Written out rather than spread: thousands are made at once (a literal starting with a spread is slow, src/queue/sql/row.ts). */
export const held = (j: Omit<PlanJob, 'seq'>, seq: number, scheduledAt: number | null, persisted: number | null): Held =>
  ({ id: j.id, priority: j.priority, seq, notBefore: j.notBefore, expiresAt: j.expiresAt, scheduledAt, persisted, after: null, idled: true, pos: 0, posAt: -1, proposed: null, proposedBy: 0 });

const NO_IDS: ReadonlySet<string> = new Set();

export class WaitingJobs {
  private jobs = new Map<string, Held>();
  /** jobs whose slot in memory is not the one PostgreSQL holds */
  private readonly unwritten = new Set<string>();
  private readonly order = new DispatchOrder<Held>();
  private readonly expiry = new EarliestExpiry();
  /** bumped whenever the dispatch order changes: a job's `pos` hint holds while its `posAt` equals it */
  private orderVersion = 0;

  /** Hold these jobs (read from PostgreSQL) instead of all held so far, each at the slot PostgreSQL holds. */
  load(waiting: readonly MirrorJob[]): void {
    this.jobs = new Map(waiting.map((j) => [j.id, held(j, j.seq, j.scheduledAt, j.scheduledAt)]));
    this.expiry.reset();
    this.unwritten.clear();
    this.order.rebuild(this.jobs.values());
    this.orderVersion++;
  }

  get size(): number {
    return this.jobs.size;
  }

  /** How many waiting jobs have a slot (the dispatch order's length). */
  get placed(): number {
    return this.order.size;
  }

  get(jobId: string): Held | undefined {
    return this.jobs.get(jobId);
  }

  values(): IterableIterator<Held> {
    return this.jobs.values();
  }

  /** The jobs with a slot, in dispatch order (not to be changed by the caller). */
  ordered(): readonly Held[] {
    return this.order.all();
  }

  /** A new job, inserted in PostgreSQL with its slot. */
  insert(j: Held): void {
    this.jobs.set(j.id, j);
    this.expiry.added(j.expiresAt);
  }

  /** Give a job its slot in the current plan, noting whether PostgreSQL holds another. */
  setSlot(j: Held, at: number | null): void {
    j.scheduledAt = at;
    if (at === j.persisted) this.unwritten.delete(j.id);
    else this.unwritten.add(j.id);
  }

  /**
   * After a plan: the dispatch order (the jobs not planned again, `rerun`, keep their places, then the plan's
   * `placed`; a full plan when `rerun` is null), and each placed job's place in it.
   */
  reorder(rerun: readonly Held[] | null, placed: readonly Held[], kept: number): void {
    // the placed jobs that were not planned again are new: they are in neither part of the order yet
    this.order.keepThen(rerun === null ? null : rerun.length === 0 ? NO_IDS : new Set(rerun.map((j) => j.id)), placed, kept);
    const version = ++this.orderVersion;
    // the plan's jobs are the order's end, in the plan's order
    const base = this.order.size - placed.length;
    placed.forEach((j, k) => {
      j.pos = base + k + 1;
      j.posAt = version;
    });
  }

  /** Take a job out; answers it and the job that followed it in the order (undefined: none), or null when not waiting. */
  remove(jobId: string): { job: Held; next: Held | undefined } | null {
    this.unwritten.delete(jobId);
    const job = this.jobs.get(jobId);
    if (!job) return null;
    this.jobs.delete(jobId);
    this.expiry.removed(job.expiresAt);
    const next = this.order.remove(jobId);
    this.orderVersion++;
    return { job, next };
  }

  /** Slots memory holds and PostgreSQL does not (of `ids` only, when given). */
  unpersisted(ids?: readonly string[]): SlotWrite[] {
    const out: SlotWrite[] = [];
    for (const id of ids ?? this.unwritten) {
      const j = this.jobs.get(id);
      if (j && this.unwritten.has(id)) out.push({ jobId: id, scheduledAt: j.scheduledAt });
    }
    return out;
  }

  unwrittenCount(): number { return this.unwritten.size; }

  /** True when PostgreSQL holds the job's slot in the current plan (or the job is not waiting). */
  isPersisted(jobId: string): boolean {
    return !this.unwritten.has(jobId);
  }

  /** `written` are committed: PostgreSQL holds these slots now. */
  persistedAs(written: readonly SlotWrite[]): void {
    for (const w of written) {
      const j = this.jobs.get(w.jobId);
      if (!j) continue;
      j.persisted = w.scheduledAt;
      this.setSlot(j, j.scheduledAt);
    }
  }

  /** 1-based position in dispatch order; jobs without a slot come after; 0 when not waiting. */
  position(jobId: string): number {
    const job = this.jobs.get(jobId);
    if (!job) return 0;
    if (job.scheduledAt === null) return this.order.size + 1;
    // placed by the last change of the order: its place is known (a binary search would find the same)
    return job.posAt === this.orderVersion ? job.pos : this.order.position(job);
  }

  /** A waiting job's slot in the current plan (null: none; undefined: not waiting). */
  slotOf(jobId: string): number | null | undefined {
    return this.jobs.get(jobId)?.scheduledAt;
  }

  /**
   * Move the next due job's slot later, to `at`, when it stays first (before the next job's slot) and within its
   * validity: the lane waits out a shortfall of its spacing there (src/queue/replans.ts waitOutSpacing).
   * Answers whether it moved. PostgreSQL gets the slot with the job's claim, or from the slot writer.
   */
  postponeHead(jobId: string, at: number): boolean {
    const order = this.order.all();
    const head = order[0];
    if (!head || head.id !== jobId || head.scheduledAt === null || at <= head.scheduledAt || at > head.expiresAt) return false;
    const next = order[1];
    if (next && next.scheduledAt !== null && at >= next.scheduledAt) return false;
    this.setSlot(head, at);
    return true;
  }

  nextAt(): number | null {
    const first = this.order.head();
    return first ? (this.jobs.get(first)?.scheduledAt ?? null) : null;
  }

  /** The earliest expiresAt of the waiting jobs, Infinity when there is none. */
  earliestExpiry(): number {
    return this.expiry.of(this.jobs.values());
  }

  /** Waiting jobs whose validity ended before they could go. */
  expiredAt(now: number): string[] {
    const out: string[] = [];
    if (this.earliestExpiry() >= now) return out;
    for (const j of this.jobs.values()) if (j.expiresAt < now) out.push(j.id);
    return out;
  }

  /** The job due now (earliest slot ≤ now), if any. */
  due(now: number): string | null {
    const first = this.order.head();
    if (!first) return null;
    const at = this.jobs.get(first)?.scheduledAt;
    return at !== null && at !== undefined && at <= now ? first : null;
  }
}

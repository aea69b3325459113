/**
 * The planner's memory of one instance: its waiting jobs with their slots, its dispatch history and the tail
 * of the current plan. The decisions are the pure functions of plan.ts; this class only keeps their inputs and
 * outputs so that an acceptance appends to the plan in O(new jobs) and a re-plan rebuilds it.
 *
 * Every mutating call returns a proposal that takes effect on `commit()`, called once PostgreSQL committed
 * the same change, so memory never runs ahead of the truth.
 */
import { planAll, planAppend, recheck, stableRandomDelay, type PlanJob, type PlanResult, type PlanTail, type RandomDelay, type Recheck } from './plan.js';
import type { InstanceSettings } from './settings.js';
import { DAY_MS } from './windows.js';

export type { PlanJob };
export interface MirrorJob extends PlanJob {
  scheduledAt: number | null;
}

export interface AddProposal {
  /** new job id → slot (null: accepted without a slot yet); absent: unreachable (TTL_UNREACHABLE) */
  slots: Map<string, number | null>;
  /** existing jobs whose slot this acceptance moved */
  moved: { jobId: string; scheduledAt: number }[];
  /** 1-based queue position of each new job once committed (for `message.queued`, written before the commit) */
  positions: Map<string, number>;
  commit: (() => void) | null;
}

export interface ReplanProposal {
  slots: { jobId: string; scheduledAt: number }[];
  /** jobs left without a slot (unreachable now, or past the attempt cap): they wait for expiry or a re-plan */
  unslotted: string[];
  commit: () => void;
}

const samePlanSettings = (a: InstanceSettings, b: InstanceSettings) =>
  a.maxPerHour === b.maxPerHour && a.maxPer24h === b.maxPer24h && a.minDelayMs === b.minDelayMs &&
  a.maxDelayMs === b.maxDelayMs && JSON.stringify(a.quietHours) === JSON.stringify(b.quietHours);

export class Planner {
  private jobs = new Map<string, MirrorJob>();
  /** waiting jobs with a slot, ascending by slot: the dispatch order */
  private order: string[] = [];
  private history: number[] = [];
  private lastDispatchAt: number | null = null;
  private tail: PlanTail | null = null;
  private tailSettings: InstanceSettings | null = null;
  private retryAt: number | null = null;
  private nextSeq = 1;
  private readonly random: RandomDelay;

  constructor(opts: { random?: ((min: number, max: number) => number) | undefined; salt?: string }) {
    const random = opts.random;
    this.random = random ? (min, max) => random(min, max) : stableRandomDelay(opts.salt ?? '');
  }

  load(input: { history: number[]; lastDispatchAt: number | null; waiting: MirrorJob[] }): void {
    this.history = [...input.history].sort((a, b) => a - b);
    this.lastDispatchAt = input.lastDispatchAt;
    this.jobs = new Map(input.waiting.map((j) => [j.id, { ...j }]));
    this.nextSeq = Math.max(0, ...input.waiting.map((j) => j.seq)) + 1;
    this.rebuildOrder();
    this.tail = null;
  }

  private rebuildOrder(): void {
    this.order = [...this.jobs.values()].filter((j) => j.scheduledAt !== null).sort((a, b) => (a.scheduledAt as number) - (b.scheduledAt as number) || a.seq - b.seq).map((j) => j.id);
  }

  private input(now: number, settings: InstanceSettings, extra: PlanJob[] = []) {
    return {
      jobs: [...this.jobs.values(), ...extra],
      history: this.historySnapshot(now),
      settings,
      lastDispatchAt: this.lastDispatchAt,
      now,
      random: this.random,
    };
  }

  /** Plan new jobs (in arrival order) into the current plan. */
  tryAdd(newJobs: Omit<PlanJob, 'seq'>[], now: number, settings: InstanceSettings): AddProposal {
    if (newJobs.length === 0) return { slots: new Map(), moved: [], positions: new Map(), commit: null };
    const seq0 = this.nextSeq;
    const jobs: PlanJob[] = newJobs.map((j, i) => ({ ...j, seq: seq0 + i }));
    let result: PlanResult | null = null;
    let full = false;
    if (this.tail && this.tailSettings && samePlanSettings(this.tailSettings, settings) && this.retryAt === null) {
      result = planAppend(this.tail, jobs, now);
    }
    if (!result) {
      result = planAll(this.input(now, settings, jobs));
      full = true;
    }
    const slots = new Map<string, number | null>();
    const placed = new Map(result.placements.map((p) => [p.jobId, p.scheduledAt]));
    for (const j of jobs) {
      if (placed.has(j.id)) slots.set(j.id, placed.get(j.id) as number);
      else if (result.unplaced.some((u) => u.jobId === j.id)) slots.set(j.id, null);
    }
    const moved: { jobId: string; scheduledAt: number }[] = [];
    if (full) {
      for (const p of result.placements) {
        const old = this.jobs.get(p.jobId);
        if (old && old.scheduledAt !== p.scheduledAt) moved.push({ jobId: p.jobId, scheduledAt: p.scheduledAt });
      }
    }
    // placements come in dispatch order: after an append they follow the current order, after a full plan
    // they are the whole order; jobs without a slot come after every placed one
    const positions = new Map<string, number>();
    const base = full ? 0 : this.order.length;
    result.placements.forEach((p, i) => positions.set(p.jobId, base + i + 1));
    const after = base + result.placements.length + 1;
    for (const [id, slot] of slots) if (slot === null) positions.set(id, after);
    const r = result;
    return {
      slots,
      moved,
      positions,
      commit: () => {
        this.nextSeq = seq0 + jobs.length;
        for (const j of jobs) {
          const slot = slots.get(j.id);
          if (slot !== undefined) this.jobs.set(j.id, { ...j, scheduledAt: slot });
        }
        if (full) {
          for (const p of r.placements) {
            const m = this.jobs.get(p.jobId);
            if (m) m.scheduledAt = p.scheduledAt;
          }
          this.retryAt = r.unplaced.length > 0 ? Math.min(...r.unplaced.map((u) => u.retryAt)) : null;
          this.rebuildOrder();
        } else {
          // an append places every new job after every planned one: the dispatch order only grows at its end
          for (const p of r.placements) this.order.push(p.jobId);
        }
        this.tail = r.tail;
        this.tailSettings = settings;
      },
    };
  }

  replan(now: number, settings: InstanceSettings): ReplanProposal {
    const result = planAll(this.input(now, settings));
    const placed = new Map(result.placements.map((p) => [p.jobId, p.scheduledAt]));
    const unslotted = [...this.jobs.keys()].filter((id) => !placed.has(id));
    return {
      slots: result.placements,
      unslotted,
      commit: () => {
        for (const j of this.jobs.values()) j.scheduledAt = placed.get(j.id) ?? null;
        this.retryAt = result.unplaced.length > 0 ? Math.min(...result.unplaced.map((u) => u.retryAt)) : null;
        this.tail = result.tail;
        this.tailSettings = settings;
        this.rebuildOrder();
      },
    };
  }

  remove(jobId: string): void {
    if (!this.jobs.delete(jobId)) return;
    const i = this.order.indexOf(jobId);
    if (i >= 0) this.order.splice(i, 1);
    // the tail still counts the removed job's slot: conservative (never over the limits); next re-plan frees it
  }

  /** 1-based position in dispatch order; jobs without a slot come after; 0 when not waiting. */
  position(jobId: string): number {
    const job = this.jobs.get(jobId);
    if (!job) return 0;
    if (job.scheduledAt === null) return this.order.length + 1;
    // `order` is sorted by (slot, seq): binary search instead of a scan (positions are read on every acceptance)
    const key = job.scheduledAt;
    let lo = 0;
    let hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const m = this.jobs.get(this.order[mid] as string);
      const at = m?.scheduledAt ?? Number.POSITIVE_INFINITY;
      if (at < key || (at === key && (m?.seq ?? 0) < job.seq)) lo = mid + 1;
      else hi = mid;
    }
    return lo + 1;
  }

  nextAt(): number | null {
    const first = this.order[0];
    return first ? (this.jobs.get(first)?.scheduledAt ?? null) : null;
  }

  /**
   * When the worker must look again: the next slot, the next expiry, or a re-plan after the attempt cap.
   * Without `includeSlots` (the session cannot send) only expiries and re-plans matter.
   */
  /** The last plan stopped at the attempt cap and the instant it reached has come: plan again. */
  retryDue(now: number): boolean {
    return this.retryAt !== null && this.retryAt <= now;
  }

  nextWake(includeSlots = true): number | null {
    let t = (includeSlots ? this.nextAt() : null) ?? Number.POSITIVE_INFINITY;
    // a job may still go out at exactly its expiresAt (the planner allows that slot): it expires after it
    for (const j of this.jobs.values()) if (j.expiresAt + 1 < t) t = j.expiresAt + 1;
    if (this.retryAt !== null && this.retryAt < t) t = this.retryAt;
    return Number.isFinite(t) ? t : null;
  }

  /** Waiting jobs whose validity ended before they could go. */
  expiredAt(now: number): string[] {
    const out: string[] = [];
    for (const j of this.jobs.values()) if (j.expiresAt < now) out.push(j.id);
    return out;
  }

  /** The job due now (earliest slot ≤ now), if any. */
  due(now: number): string | null {
    const first = this.order[0];
    if (!first) return null;
    const at = this.jobs.get(first)?.scheduledAt;
    return at !== null && at !== undefined && at <= now ? first : null;
  }

  /** True when the plan fell behind (an outage): the backlog must be spread again at the configured rate. */
  hasOverdue(now: number): boolean {
    const at = this.nextAt();
    return (at !== null && at < now - 1_000) || (this.retryAt !== null && this.retryAt <= now);
  }

  recheck(now: number, settings: InstanceSettings): Recheck {
    return recheck(now, this.historySnapshot(now), settings, this.lastDispatchAt);
  }

  recordDispatch(at: number): void {
    this.history.push(at);
    if (this.lastDispatchAt === null || at > this.lastDispatchAt) this.lastDispatchAt = at;
  }

  forgetDispatch(at: number): void {
    const i = this.history.lastIndexOf(at);
    if (i >= 0) this.history.splice(i, 1);
  }

  historySnapshot(now: number): number[] {
    const cut = now - DAY_MS;
    let i = 0;
    while (i < this.history.length && (this.history[i] as number) <= cut) i++;
    if (i > 0) this.history = this.history.slice(i);
    return this.history;
  }

  waitingCount(): number {
    return this.jobs.size;
  }

  scheduledCount(): number {
    return this.order.length;
  }
}

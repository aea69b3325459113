/** What the planner's memory (src/queue/planning.ts) takes and proposes. */
import type { PlanJob } from './plan.js';

export type { PlanJob };
export interface MirrorJob extends PlanJob {
  scheduledAt: number | null;
}

/** A slot to write: null takes the job back to waiting without one. */
export interface SlotWrite {
  jobId: string;
  scheduledAt: number | null;
}

export interface AddProposal {
  /** new job id → slot (null: accepted without a slot yet); absent: unreachable (TTL_UNREACHABLE) */
  slots: Map<string, number | null>;
  /** existing jobs whose slot this acceptance moved (null: no slot any more); written later, not by the acceptance */
  moved: SlotWrite[];
  /** 1-based queue position of each new job once committed (for `message.queued`, written before the commit) */
  positions: Map<string, number>;
  commit: (() => void) | null;
}

export interface ReplanProposal {
  slots: { jobId: string; scheduledAt: number }[];
  /** jobs left without a slot (unreachable now, or past the attempt cap): they wait for expiry or a re-plan */
  unslotted: string[];
  /** the rows to write: the jobs whose new slot is not the one PostgreSQL holds (read when called) */
  writes(): SlotWrite[];
  /** apply the plan once `written` are committed */
  commit(written: readonly SlotWrite[]): void;
}

/**
 * What the queues of many instances start from, read together (src/queue/starts.ts): one statement per kind of
 * read for all of them instead of one per instance, so a start-up of ten thousand instances costs a few
 * hundred statements, not a hundred thousand. The same reads as QueueCore.reload (src/queue/core.ts) makes for
 * one instance — plan state, dispatch history, waiting jobs, pending count, outcomes — plus whether an instance
 * has anything for the recovery at start (jobs left `sending`, waiting jobs of a dead synchronous caller).
 *
 * Strategy: `instance_id = ANY($1)` over the indexes the one-instance reads use (jobs_instance_state,
 * jobs_terminal, dispatches_window, jobs_caller_boot); rows come back sorted by instance
 * and are split in one pass.
 *
 * The rows a batch reads are bounded: a first statement counts, per instance, the rows its reads would bring
 * (waiting jobs, the last 24 h of dispatches and of ended jobs: the same index ranges, counted), and the reads run
 * for groups of instances of at most START_READ_ROWS rows (an instance with more is read alone). A restart of
 * a node whose 200 instances held 5,000 waiting jobs each read a million rows in one statement, past the
 * statement deadline (4 s), so every start of the batch failed alike, and their retries, due at the same
 * moments, were batched and failed again: 45 s after the start 30 of the 200 queues had loaded, the others
 * answering 503 QUEUE_STORE_UNAVAILABLE (queue_not_loaded). Grouped, every queue had loaded 21 s after the start.
 */
import { CALLER_GONE } from '../sync-callers.js';
import { OUTCOME_JOB_STATES, PENDING_JOB_STATES, WAITING_JOB_STATES, bulkJobEvent, statesAccepting } from '../../../machines/job.machine.js';
import type { Queryable } from '../../store/pool.js';
import type { MirrorJob } from '../planning-types.js';
import type { LoadedOutcomes, Outcome } from './loadOutcomes.js';
import { sqlStates } from './row.js';
import { mirrorJobOf, type WaitingRow } from './listWaiting.js';

const DAY_MS = 86_400_000;

/**
 * The most rows the reads of one group of a start bring (an instance with more is read alone): four full queues
 * at the default QUEUE_MAX_PENDING. A start of a million waiting jobs is about fifty groups.
 */
export const START_READ_ROWS = 20_000;

/** One instance's queue as PostgreSQL holds it when the queue starts. */
export interface StartState {
  epoch: number;
  lastDispatchAt: number | null;
  history: number[];
  waiting: MirrorJob[];
  pending: number;
  outcomes: LoadedOutcomes;
  /** jobs left `sending` or orphaned synchronous jobs: the recovery at start has work (then the queue reads again) */
  needsRecovery: boolean;
}

const PLAN = 'SELECT id, last_dispatch_at AS last, plan_epoch AS epoch FROM instances WHERE id = ANY ($1::uuid[])';
const HISTORY = `SELECT instance_id, dispatched_at AS at FROM dispatches
                  WHERE instance_id = ANY ($1::uuid[]) AND dispatched_at > $2 ORDER BY instance_id, dispatched_at`;
const WAITING = `SELECT instance_id, id, priority, seq, not_before, expires_at, scheduled_at FROM jobs
                  WHERE instance_id = ANY ($1::uuid[]) AND state IN (${sqlStates(WAITING_JOB_STATES)})
                  ORDER BY instance_id, priority DESC, seq`;
const COUNTS = `SELECT instance_id, state, count(*)::int AS n FROM jobs
                 WHERE instance_id = ANY ($1::uuid[]) AND state IN (${sqlStates(PENDING_JOB_STATES)})
                 GROUP BY instance_id, state
                UNION ALL
                SELECT instance_id, state, n::float8 FROM job_outcome_totals
                 WHERE instance_id = ANY ($1::uuid[]) AND state IN (${sqlStates(OUTCOME_JOB_STATES)})`;
const RECENT = `SELECT instance_id, state, terminal_at FROM jobs
                 WHERE instance_id = ANY ($1::uuid[]) AND state = ANY ($2::text[]) AND terminal_at > $3
                 ORDER BY instance_id, terminal_at`;
// the two selections of recoverAtStart (src/queue/start-recovery.ts: recoverSending.ts, orphanedSyncJobs.ts), as a yes/no
const RECOVERY = `SELECT DISTINCT instance_id FROM jobs
                   WHERE instance_id = ANY ($1::uuid[])
                     AND (state IN (${sqlStates(bulkJobEvent('RECOVERED_SENDING').from)})
                          OR (caller_boot IS NOT NULL AND caller_boot <> $2 AND state IN (${sqlStates(statesAccepting('EXPIRE'))})
                              AND ${CALLER_GONE}))`;


// what each instance's reads below would bring: its waiting jobs, its dispatches and its ended jobs of the window,
// each counted up to $3 (the budget and one: an instance past it is read alone, however far past)
const SIZES = `SELECT i.id,
                      (SELECT count(*) FROM (SELECT 1 FROM jobs j WHERE j.instance_id = i.id AND j.state IN (${sqlStates(WAITING_JOB_STATES)}) LIMIT $3) AS w)
                    + (SELECT count(*) FROM (SELECT 1 FROM dispatches d WHERE d.instance_id = i.id AND d.dispatched_at > $2 LIMIT $3) AS h)
                    + (SELECT count(*) FROM (SELECT 1 FROM jobs t WHERE t.instance_id = i.id AND t.terminal_at > $2 LIMIT $3) AS r) AS n
                 FROM unnest($1::uuid[]) AS i (id)`;

/**
 * `ids` in order, cut into groups whose `rows` sum to at most `limit` (an id with more is a group alone; one with
 * none adds nothing).
 */
export function groupsWithin(ids: readonly string[], rows: (id: string) => number, limit: number): string[][] {
  const groups: string[][] = [];
  let group: string[] = [];
  let sum = 0;
  for (const id of ids) {
    const n = rows(id);
    if (group.length > 0 && sum + n > limit) {
      groups.push(group);
      group = [];
      sum = 0;
    }
    group.push(id);
    sum += n;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}

export interface LoadStartsOptions {
  /** the most rows one group's reads bring (START_READ_ROWS; Infinity: one group, no count first) */
  readRows?: number;
  /**
   * Each group as soon as it is read (its states), or its failure: a failed group's instances get the error and
   * the next groups are read all the same (without it, the first failure fails the whole call).
   */
  onGroup?: (ids: readonly string[], read: Map<string, StartState> | Error) => void;
}

/**
 * The start state of each instance (by id) at `now`; `bootId`: this process's (sync-callers.ts). The reads run
 * for groups of instances of at most `readRows` rows; with `onGroup`, the states of the groups that were read
 * (the others were handed their error).
 */
export async function loadStarts(q: Queryable, instanceIds: readonly string[], now: number, bootId: string, opts: LoadStartsOptions = {}): Promise<Map<string, StartState>> {
  const { readRows = START_READ_ROWS, onGroup } = opts;
  const groups = !Number.isFinite(readRows) || instanceIds.length <= 1
    ? [[...instanceIds]]
    : await sizedGroups(q, instanceIds, now, readRows);
  const out = new Map<string, StartState>();
  for (const group of groups) {
    let read: Map<string, StartState> | Error;
    try {
      read = await loadGroup(q, group, now, bootId);
    } catch (err) {
      if (!onGroup) throw err;
      read = err instanceof Error ? err : new Error(String(err));
    }
    onGroup?.(group, read);
    if (!(read instanceof Error)) for (const [id, state] of read) out.set(id, state);
  }
  return out;
}

/** `instanceIds` in groups of at most `readRows` rows, from the counts of what each instance's reads bring. */
async function sizedGroups(q: Queryable, instanceIds: readonly string[], now: number, readRows: number): Promise<string[][]> {
  const sizes = await q.query<{ id: string; n: string }>(SIZES, [[...instanceIds], new Date(now - DAY_MS), readRows + 1]);
  const rowsOf = new Map(sizes.rows.map((r) => [r.id, Number(r.n)]));
  return groupsWithin(instanceIds, (id) => rowsOf.get(id) ?? 0, readRows);
}

/** `loadStarts` of one group, each read one statement. */
async function loadGroup(q: Queryable, instanceIds: readonly string[], now: number, bootId: string): Promise<Map<string, StartState>> {
  const ids = [...instanceIds];
  const since = new Date(now - DAY_MS);
  // one after another: a start-up's batches already keep the pool busy, and this takes one connection at a time
  const plan = await q.query<{ id: string; last: Date | null; epoch: number }>(PLAN, [ids]);
  const history = await q.query<{ instance_id: string; at: Date }>(HISTORY, [ids, since]);
  const waiting = await q.query<WaitingRow & { instance_id: string }>(WAITING, [ids]);
  const counts = await q.query<{ instance_id: string; state: string; n: number }>(COUNTS, [ids]);
  const recent = await q.query<{ instance_id: string; state: Outcome; terminal_at: Date }>(RECENT, [ids, OUTCOME_JOB_STATES, since]);
  const recovery = await q.query<{ instance_id: string }>(RECOVERY, [ids, bootId]);

  const out = new Map<string, StartState>();
  for (const id of ids) {
    out.set(id, {
      epoch: 0, lastDispatchAt: null, history: [], waiting: [], pending: 0,
      outcomes: { totals: { sent: 0, failed: 0, unknown: 0 }, recent: [] }, needsRecovery: false,
    });
  }
  const of = (id: string): StartState | undefined => out.get(id);
  for (const r of plan.rows) {
    const s = of(r.id);
    if (s) {
      s.epoch = r.epoch;
      s.lastDispatchAt = r.last ? r.last.getTime() : null;
    }
  }
  for (const r of history.rows) of(r.instance_id)?.history.push(r.at.getTime());
  for (const r of waiting.rows) of(r.instance_id)?.waiting.push(mirrorJobOf(r));
  const pendingStates = new Set<string>(PENDING_JOB_STATES);
  const outcomeStates = new Set<string>(OUTCOME_JOB_STATES);
  for (const r of counts.rows) {
    const s = of(r.instance_id);
    if (!s) continue;
    if (pendingStates.has(r.state)) s.pending += r.n;
    if (outcomeStates.has(r.state)) s.outcomes.totals[r.state as Outcome] += r.n;
  }
  for (const r of recent.rows) of(r.instance_id)?.outcomes.recent.push({ state: r.state, at: r.terminal_at.getTime() });
  for (const r of recovery.rows) {
    const s = of(r.instance_id);
    if (s) s.needsRecovery = true;
  }
  return out;
}

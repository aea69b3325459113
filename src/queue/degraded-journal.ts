/**
 * What a queue knows that PostgreSQL does not have yet, kept on disk until the store has it: the sends it made
 * outside PostgreSQL (v1 sends in `memory-degraded` mode, and the count of a disabled queue's send the store did
 * not take), and the outcomes of dispatches whose write the store did not take. In memory alone (WriteBack) they
 * were lost with a killed process: found from the outside, a gateway SIGKILLed while the store was away forgot
 * the three sends it had made in the last hour, and after its restart the hourly limit let three more through
 * (six against a ceiling of three). Each kept send is appended here before it goes out; one that provably did
 * not go out, and the ones a recovery wrote to PostgreSQL, are appended as such; a start writes what is left
 * to `dispatches` before any queue starts (`replayDegradedJournal`), so that the windows count it.
 *
 * An outcome kept for write-back (src/queue/write-back.ts) is appended before a caller waiting for it is told
 * (a v1 send answered 200 "sent" during an outage), and so is one whose write has not ended within
 * OUTCOME_ON_DISK_AFTER_MS (src/queue/outcome-writer.ts: a store that hangs fails the write only at its deadline): in memory alone, a process killed before the store came back
 * left the job `sending`, and the next start made it `unknown`, contradicting what the caller had been told. A
 * start moves each such job from `sending` as its outcome says, with its `message.*` event, before any queue
 * makes what is left `unknown`.
 *
 * One file per process (DATA_DIR/run/degraded-sends.jsonl: one process per DATA_DIR holds it, src/bootstrap.ts),
 * written synchronously (a line is in the kernel before the send it counts is made, so a killed process never
 * loses it; a power loss can), removed once nothing in it is still unwritten. Outages are rare and short, so
 * the file stays small and its cost is nothing in normal operation: it is not even opened.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log.js';
import { withTransaction, type Pool, type Queryable } from '../store/pool.js';
import { queueEventData } from '../wire/queue-events.js';
import { outcomeStep } from './outcome.js';
import { forgetDispatch } from './sql/forgetDispatch.js';
import { transitionJob } from './sql/transitionJob.js';
import type { DispatchOutcome } from './types.js';

interface SendLine {
  /** instance id */
  i: string;
  /** the send's instant (ms) */
  at: number;
  /** kept: made outside the store; dropped: provably did not go out; written: in `dispatches` now */
  op: 'kept' | 'dropped' | 'written';
}

interface OutcomeLine {
  i: string;
  /** when the outcome was known (the job's terminalAt) */
  at: number;
  /** outcome: known, not in the store; stored: in the store now (or the job was no longer `sending`) */
  op: 'outcome' | 'stored';
  /** the job */
  j: string;
  /** the outcome (op `outcome` only) */
  o?: DispatchOutcome;
}

type Line = SendLine | OutcomeLine;

/** Writes a `message.*` event inside the caller's transaction (src/actors/events.ts `EventBus.emit`). */
export type EmitEvent = (q: Queryable, instanceId: string, event: string, data: unknown) => Promise<boolean>;

/** An outcome the store did not take, kept on disk. */
export interface JournaledOutcome {
  instanceId: string;
  jobId: string;
  outcome: DispatchOutcome;
  at: number;
}

export const journalFile = (dataDir: string): string => path.join(dataDir, 'run', 'degraded-sends.jsonl');

/** Sends older than this count in no window (the longest is 24 h): not written back at a start. */
const WINDOW_MS = 24 * 3_600_000;
/** A send dated later than this after the start is not one this process's clock made: skipped, else it would hold the pause for that long. */
const FUTURE_SKEW_MS = 60_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_INSTANT = 253_402_300_799_999;
/** a job id (`wq_…`, src/ids.ts), or any id of the same alphabet an older process gave */
const JOB_ID = /^[A-Za-z0-9_-]{1,100}$/;

export class DegradedJournal {
  private fd: number | null = null;
  /** kept sends not yet dropped or written, over all instances: the file goes when none is left (nor an outcome) */
  private open = 0;
  /** jobs whose outcome is journaled and not yet stored */
  private readonly outcomes = new Set<string>();

  constructor(private readonly file: string) {}

  kept(instanceId: string, at: number): void {
    this.append({ i: instanceId, at, op: 'kept' });
    this.open += 1;
  }

  dropped(instanceId: string, at: number): void {
    this.append({ i: instanceId, at, op: 'dropped' });
    this.settled(1);
  }

  written(instanceId: string, ats: readonly number[]): void {
    if (ats.length === 0) return;
    for (const at of ats) this.append({ i: instanceId, at, op: 'written' });
    this.settled(ats.length);
  }

  /** The outcome of a job's call, known and not in the store; appended before anyone is told it. */
  outcome(instanceId: string, jobId: string, outcome: DispatchOutcome, at: number): void {
    if (this.outcomes.has(jobId)) return;
    this.append({ i: instanceId, at, op: 'outcome', j: jobId, o: outcome });
    this.outcomes.add(jobId);
  }

  /** That outcome is in the store now (or its job had left `sending` otherwise). */
  stored(instanceId: string, jobId: string, at: number): void {
    if (!this.outcomes.delete(jobId)) return;
    this.append({ i: instanceId, at, op: 'stored', j: jobId });
    this.settled(0);
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private settled(n: number): void {
    this.open = Math.max(0, this.open - n);
    if (this.open > 0 || this.outcomes.size > 0) return;
    this.close();
    rmSync(this.file, { force: true });
  }

  private append(line: Line): void {
    this.fd ??= openSync(this.file, 'a', 0o600);
    writeSync(this.fd, `${JSON.stringify(line)}\n`);
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInstant = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_INSTANT;
const text = (v: unknown): v is string => typeof v === 'string';

/** An outcome as this module writes it, nothing else (null: not one). */
function readOutcome(v: unknown): DispatchOutcome | null {
  if (!isRecord(v)) return null;
  const callAt = isInstant(v.callAt) ? { callAt: v.callAt } : {};
  switch (v.kind) {
    case 'confirmed':
      return text(v.messageId) ? { kind: 'confirmed', messageId: v.messageId, ...callAt } : null;
    case 'assumed':
      return text(v.messageId) || v.messageId === null ? { kind: 'assumed', messageId: v.messageId, ...callAt } : null;
    case 'failed':
      return text(v.resultCode) && text(v.errorMessage) ? { kind: 'failed', resultCode: v.resultCode, errorMessage: v.errorMessage, ...callAt } : null;
    case 'unknown':
      return text(v.unknownReason) ? { kind: 'unknown', unknownReason: v.unknownReason, ...callAt } : null;
    default:
      return null;
  }
}

/** The lines of a journal this module wrote (a torn last line, from a kill mid-write, and anything else is skipped). */
function* lines(text: string): Generator<Line> {
  for (const raw of text.split('\n')) {
    let line: unknown;
    try {
      line = JSON.parse(raw);
    } catch {
      continue;
    }
    // an instance id, an instant between 1970 and 9999
    if (!isRecord(line) || typeof line.i !== 'string' || !UUID.test(line.i) || !isInstant(line.at)) continue;
    const { i, at, op } = line;
    if (op === 'kept' || op === 'dropped' || op === 'written') yield { i, at, op };
    else if ((op === 'outcome' || op === 'stored') && typeof line.j === 'string' && JOB_ID.test(line.j)) {
      const o = op === 'outcome' ? readOutcome(line.o) : undefined;
      if (op === 'stored' || o) yield { i, at, op, j: line.j, ...(o ? { o } : {}) };
    }
  }
}

/** The outcomes of a journal (its text, or its lines read already) not stored, oldest first. */
export function unstoredOutcomes(journal: string | readonly Line[]): JournaledOutcome[] {
  const known = new Map<string, JournaledOutcome>();
  for (const line of typeof journal === 'string' ? lines(journal) : journal) {
    if (line.op === 'outcome' && line.o) known.set(line.j, { instanceId: line.i, jobId: line.j, outcome: line.o, at: line.at });
    else if (line.op === 'stored') known.delete(line.j);
  }
  return [...known.values()];
}

/**
 * The kept sends of a journal (its text, or its lines read already) not written or dropped, by instance (a torn
 * last line, from a kill mid-write, is skipped).
 */
export function unwrittenSends(journal: string | readonly Line[]): Map<string, number[]> {
  const kept = new Map<string, number[]>();
  for (const line of typeof journal === 'string' ? lines(journal) : journal) {
    if (line.op === 'outcome' || line.op === 'stored') continue;
    const ats = kept.get(line.i) ?? [];
    if (line.op === 'kept') ats.push(line.at);
    else {
      const k = ats.indexOf(line.at);
      if (k >= 0) ats.splice(k, 1);
    }
    kept.set(line.i, ats);
  }
  for (const [id, ats] of kept) if (ats.length === 0) kept.delete(id);
  return kept;
}

/**
 * The kept sends one instance's history lacks, each once (a start after a recovery that committed but did not
 * get to append `written` finds them there already), of an instance that still exists, moving
 * `last_dispatch_at` forward as src/queue/sql/insertDispatches.ts does.
 */
const REPLAY = `WITH d AS (
       INSERT INTO dispatches (instance_id, job_id, dispatched_at)
       SELECT $1, NULL, t.at FROM unnest($2::timestamptz[]) AS t(at)
        WHERE EXISTS (SELECT 1 FROM instances WHERE id = $1)
          AND NOT EXISTS (SELECT 1 FROM dispatches x WHERE x.instance_id = $1 AND x.job_id IS NULL AND x.dispatched_at = t.at)
       RETURNING dispatched_at)
     UPDATE instances SET last_dispatch_at = GREATEST(COALESCE(last_dispatch_at, m.at), m.at)
       FROM (SELECT max(dispatched_at) AS at FROM d) AS m
      WHERE id = $1 AND m.at IS NOT NULL`;

/**
 * At start, before any queue reads its history or recovers its jobs: write the sends an earlier process made
 * outside the store and the outcomes it knew, neither of which it got to write back, then remove the journal.
 * Returns how many instances had some.
 */
export async function replayDegradedJournal(pool: Pool, file: string, now: number, log: Logger, emit: EmitEvent): Promise<number> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 0;
    // the start cannot go on without knowing what was sent, and says what to look at (found from the outside:
    // a directory in the file's place ended the start with a bare EISDIR)
    throw new Error(`the journal of sends made while the store was away, ${file}, cannot be read (${code ?? 'error'}): ` +
      'move it away to start without it (its sends then do not count against the limits, and the jobs whose outcomes it holds become unknown)', { cause: err });
  }
  const read = [...lines(text)];
  const kept = unwrittenSends(read);
  let skipped = 0;
  for (const [instanceId, ats] of kept) {
    // within a window, and not from the future: a clock that was ahead must not hold the instance's pause for that long
    const recent = ats.filter((at) => at > now - WINDOW_MS && at <= now + FUTURE_SKEW_MS);
    skipped += ats.length - recent.length;
    if (recent.length > 0) await pool.query(REPLAY, [instanceId, recent.map((at) => new Date(at))]);
  }
  if (kept.size > 0) log.warn({ instances: kept.size, skipped }, 'sends made while the store was away, kept on disk by an earlier process, written to the history');
  const outcomes = unstoredOutcomes(read);
  const instances = new Set([...kept.keys(), ...outcomes.map((o) => o.instanceId)]);
  // lines this module did not write (a torn last line of a kill, or anything else put there): said, not silently
  // dropped with the file (found from the outside)
  const unreadable = text.split('\n').filter((l) => l.trim() !== '').length - read.length;
  if (unreadable > 0) log.warn({ file, unreadable, read: read.length }, 'lines of the journal of sends made while the store was away could not be read; skipped');
  if (outcomes.length > 0) await storeOutcomes(pool, outcomes, now, log, emit);
  rmSync(file, { force: true });
  return instances.size;
}

/**
 * Each journaled outcome whose job is still `sending` moves it as a written outcome would (src/queue/
 * outcome-writer.ts), with its event, one transaction each; the move is conditional on `sending`, so a job that
 * had its outcome written, or was made `unknown` by a node that took its instance over, is left as it is.
 */
async function storeOutcomes(pool: Pool, outcomes: readonly JournaledOutcome[], now: number, log: Logger, emit: EmitEvent): Promise<void> {
  const stored: string[] = [];
  const settled: string[] = [];
  for (const { instanceId, jobId, outcome, at } of outcomes) {
    const step = outcomeStep(outcome, at);
    const moved = await withTransaction(pool, async (c) => {
      const m = await transitionJob(c, jobId, step.event, step.fields);
      if (!m) return false;
      if (step.forgetDispatch) await forgetDispatch(c, jobId);
      if (m.step.emits) await emit(c, instanceId, m.step.emits, queueEventData(m.step.emits, m.job, { now, position: 0 }));
      return true;
    });
    (moved ? stored : settled).push(jobId);
  }
  if (stored.length > 0) log.warn({ jobs: stored }, 'outcomes known to an earlier process while the store was away, kept on disk, written');
  if (settled.length > 0) log.warn({ jobs: settled }, 'outcomes kept on disk by an earlier process whose jobs were no longer sending: left as they are');
}

/**
 * The sends a queue made outside PostgreSQL (v1 sends in `memory-degraded` mode, and the count of a disabled
 * queue's send the store did not take), kept on disk until the store has them. In memory alone (WriteBack) they
 * were lost with a killed process: found from the outside, a gateway SIGKILLed while the store was away forgot
 * the three sends it had made in the last hour, and after its restart the hourly limit let three more through
 * (six against a ceiling of three). Each kept send is appended here before it goes out; one that provably did
 * not go out, and the ones a recovery wrote to PostgreSQL, are appended as such; a start writes what is left
 * to `dispatches` before any queue starts (`replayDegradedJournal`), so that the windows count it.
 *
 * One file per process (DATA_DIR/run/degraded-sends.jsonl: one process per DATA_DIR holds it, src/bootstrap.ts),
 * written synchronously (a line is in the kernel before the send it counts is made, so a killed process never
 * loses it; a power loss can), removed once nothing in it is still unwritten. Outages are rare and short, so
 * the file stays small and its cost is nothing in normal operation: it is not even opened.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log.js';
import type { Pool } from '../store/pool.js';

interface Line {
  /** instance id */
  i: string;
  /** the send's instant (ms) */
  at: number;
  /** kept: made outside the store; dropped: provably did not go out; written: in `dispatches` now */
  op: 'kept' | 'dropped' | 'written';
}

export const journalFile = (dataDir: string): string => path.join(dataDir, 'run', 'degraded-sends.jsonl');

/** Sends older than this count in no window (the longest is 24 h): not written back at a start. */
const WINDOW_MS = 24 * 3_600_000;
/** A send dated later than this after the start is not one this process's clock made: skipped, else it would hold the pause for that long. */
const FUTURE_SKEW_MS = 60_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_INSTANT = 253_402_300_799_999;

export class DegradedJournal {
  private fd: number | null = null;
  /** kept sends not yet dropped or written, over all instances: the file goes when none is left */
  private open = 0;

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

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private settled(n: number): void {
    this.open = Math.max(0, this.open - n);
    if (this.open > 0) return;
    this.close();
    rmSync(this.file, { force: true });
  }

  private append(line: Line): void {
    this.fd ??= openSync(this.file, 'a', 0o600);
    writeSync(this.fd, `${JSON.stringify(line)}\n`);
  }
}

/** The kept sends of a journal not written or dropped, by instance (a torn last line, from a kill mid-write, is skipped). */
export function unwrittenSends(text: string): Map<string, number[]> {
  const kept = new Map<string, number[]>();
  for (const raw of text.split('\n')) {
    let line: Partial<Line>;
    try {
      line = JSON.parse(raw) as Partial<Line>;
    } catch {
      continue;
    }
    // what this module writes, nothing else: an instance id, an instant between 1970 and 9999
    if (typeof line.i !== 'string' || !UUID.test(line.i) || typeof line.at !== 'number' || !Number.isInteger(line.at)) continue;
    if (line.at < 0 || line.at > MAX_INSTANT) continue;
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
 * At start, before any queue reads its history: write the sends an earlier process made outside the store and
 * did not get to write back, then remove the journal. Returns how many instances had some.
 */
export async function replayDegradedJournal(pool: Pool, file: string, now: number, log: Logger): Promise<number> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 0;
    // the start cannot go on without knowing what was sent, and says what to look at (found from the outside:
    // a directory in the file's place ended the start with a bare EISDIR)
    throw new Error(`the journal of sends made while the store was away, ${file}, cannot be read (${code ?? 'error'}): ` +
      'move it away to start without it (its sends then do not count against the limits)', { cause: err });
  }
  const kept = unwrittenSends(text);
  let skipped = 0;
  for (const [instanceId, ats] of kept) {
    // within a window, and not from the future: a clock that was ahead must not hold the instance's pause for that long
    const recent = ats.filter((at) => at > now - WINDOW_MS && at <= now + FUTURE_SKEW_MS);
    skipped += ats.length - recent.length;
    if (recent.length > 0) await pool.query(REPLAY, [instanceId, recent.map((at) => new Date(at))]);
  }
  if (kept.size > 0) log.warn({ instances: kept.size, skipped }, 'sends made while the store was away, kept on disk by an earlier process, written to the history');
  rmSync(file, { force: true });
  return kept.size;
}

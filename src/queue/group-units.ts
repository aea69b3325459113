/**
 * The units of the node-wide group commit (src/queue/group-commit.ts): what one instance's acceptance batch hands
 * over (`AcceptUnit`), what it writes (`UnitWrites`) and is answered (`UnitResult`), and the rules both ways of
 * writing a group share (the transaction, src/queue/group-commit.ts, and the one statement, src/queue/
 * one-statement-group.ts): a unit whose lease is gone is refused alone, a group that fails as a whole for one
 * unit is tried again unit by unit, and a lost connection or an unknown commit fails every unit of it.
 */
import { CommitOutcomeUnknown, type Queryable } from '../store/pool.js';
import { isConnectionError } from '../store/health.js';
import { DomainError } from '../errors.js';
import type { Job, NewJob } from './job.js';
import { findKeysAcross, type KeyedJob } from './sql/findByIdempotencyKeys.js';

/** What one instance's acceptance batch writes, decided inside the group's transaction. */
export interface UnitWrites {
  jobs: NewJob[];
  /** the events of the inserted jobs (in their order) */
  events(inserted: Job[]): { event: string; data: unknown }[];
}

export interface AcceptUnit<D extends UnitWrites = UnitWrites> {
  instanceId: string;
  /** idempotency keys to look up, remembered if younger than `since` */
  keys: readonly string[];
  since: number;
  /** requests in the unit (default 1): a group holds units of at most `maxRows` requests together */
  size?: number;
  /** Decide the batch from what its keys name. Pure: it may run again if the group is retried. */
  decide(known: Map<string, KeyedJob>): D;
}

export interface UnitResult<D extends UnitWrites = UnitWrites> {
  decided: D;
  /** the inserted jobs, in the order of `decided.jobs` */
  jobs: Job[];
  /** an event of this unit reached the outbox (its instance's webhook sender has something new to deliver) */
  evented: boolean;
}

/** A unit waiting for its group's outcome. */
export interface Waiting {
  unit: AcceptUnit;
  resolve: (r: UnitResult) => void;
  reject: (err: unknown) => void;
}

export const notOwned = () => new DomainError('INSTANCE_UNREACHABLE', 'this node no longer owns the instance; nothing was accepted');

/**
 * What `write` gives each of `units`. When it fails as a whole: that failure for each, if it was a lost
 * connection or an unknown commit (as each alone would have failed) or there is one unit; else (one unit failed
 * the others, a key another node took meanwhile) each unit written alone, so that it fails only itself.
 * `write` is told whether it writes a unit alone after such a failure (`alone`).
 */
export async function outcomes(
  units: Waiting[],
  write: (units: Waiting[], alone: boolean) => Promise<Map<Waiting, UnitResult | Error> | null>,
  alone = false,
): Promise<Map<Waiting, UnitResult | Error>> {
  const out = new Map<Waiting, UnitResult | Error>();
  try {
    const written = await write(units, alone);
    for (const w of units) out.set(w, written?.get(w) ?? lost());
  } catch (err) {
    if (units.length === 1 || isConnectionError(err) || err instanceof CommitOutcomeUnknown) {
      for (const w of units) out.set(w, asError(err));
    } else {
      for (const w of units) out.set(w, (await outcomes([w], write, true)).get(w) ?? lost());
    }
  }
  return out;
}

export const lost = () => new Error('the group commit lost a unit');
const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

/** Look up the units' keys (one statement; none when no unit has keys) and let each decide from what they name. */
export async function lookUpAndDecide(q: Queryable, units: readonly Waiting[]): Promise<UnitWrites[]> {
  const known = await findKeysAcross(q, units.map((w) => ({ instanceId: w.unit.instanceId, keys: w.unit.keys, since: w.unit.since })));
  return units.map((w) => w.unit.decide(known.get(w.unit.instanceId) ?? new Map()));
}

export function settle(w: Waiting, r: UnitResult | Error | undefined): void {
  if (r === undefined) w.reject(lost());
  else if (r instanceof Error) w.reject(r);
  else w.resolve(r);
}

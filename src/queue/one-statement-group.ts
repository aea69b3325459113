/**
 * The one-statement way of writing a group commit (src/queue/group-commit.ts): for a group whose events no
 * webhook wants, ONE statement, its own transaction, fenced inside it, writes the jobs, remembers their keys
 * and looks those keys up itself (src/queue/sql/insertJobsFenced.ts). The units decide as if none of their
 * keys were known; only the instances of which the statement finds one remembered (a replay) decide again,
 * from the keys and jobs it answers, and a second statement writes what they still write.
 */
import type { Job } from './job.js';
import type { KeyedJob } from './sql/findByIdempotencyKeys.js';
import { ROWS_PER_STATEMENT } from './sql/insertJobs.js';
import { insertJobsFenced, type FencedInsert, type InstanceLeaseRef, type KeyCheck, type RememberedKey } from './sql/insertJobsFenced.js';
import type { Pool, Queryable } from '../store/pool.js';
import { lookUpAndDecide, lost, notOwned, outcomes, settle, type AcceptUnit, type UnitResult, type UnitWrites, type Waiting } from './group-units.js';

/** What the one statement needs of the committer's deps (src/queue/group-commit.ts CommitterDeps extends it). */
export interface OneStatementDeps {
  pool: Pool;
  /** the instances (of `instanceIds`) whose lease this node holds, read FOR KEY SHARE in the transaction */
  fence?: (q: Queryable, instanceIds: readonly string[]) => Promise<Set<string>>;
  /** the leases this node holds of the instances, with which the one statement fences itself (required with `fence`) */
  leasesOf?: (instanceIds: readonly string[]) => InstanceLeaseRef[];
}

/**
 * A quiet group (src/queue/group-commit.ts CommitterDeps.quiet: no webhook wants its events) of `instanceIds`
 * as one statement that writes the jobs and remembers their keys, fenced inside it; null when it cannot be
 * (more rows than one statement takes), and the transaction writes it, without building events nobody wants.
 *
 * Optimistic about keys: every unit decides as if none of its keys were remembered (the usual case: a retry
 * is rare), and the statement itself looks them up. An instance of which it finds one writes nothing in it
 * (`known`) and answers its remembered keys with their jobs; those units decide again from that answer, and a
 * second statement writes what they still write. So a group is one round trip, replays or not (not two, as a
 * read before the write would make it); a unit that mixes replays with fresh requests costs a second
 * statement, which the group's other units do not wait for: they are answered once the first commits.
 *
 * The keys the first statement found are all the replays' units need, and so is a look-up outside any write
 * (a unit retried alone reads its keys again): an instance's keys are written only by the node that holds its
 * lease, one batch after the other (a batch is decided once the one before it is committed), and a previous
 * holder's writes were committed before its lease could be taken over (they hold it FOR KEY SHARE). A key
 * written in between anyway fails the statement whole (insertJobsFenced), and the units are then tried again
 * one by one.
 */
export async function commitAsOneStatement(deps: OneStatementDeps, group: Waiting[], instanceIds: readonly string[]): Promise<Map<Waiting, UnitResult | Error> | null> {
  const { fence, leasesOf } = deps;
  if (fence && !leasesOf) return null;
  let rows = 0;
  for (const w of group) rows += w.unit.size ?? 1;
  if (rows > ROWS_PER_STATEMENT) return null;
  const none = new Map<string, KeyedJob>();
  const first = await writeOne(deps, group, instanceIds, group.map((w) => w.unit.decide(none)), keyCheck(group));
  if (!first) return null;
  const { out, remembered } = first;
  const again = group.filter((w) => !out.has(w));
  if (again.length > 0) {
    // The other units' outcomes are final (committed, or refused): answered now, not after the replays'
    // statement (settling them again with the group does nothing). Whatever befalls the replays from here is
    // theirs alone: a failure of their statement must never send a committed unit round again.
    for (const [w, r] of out) settle(w, r);
    const retried = await outcomes(again, async (units, alone) => {
      // A key of these instances is remembered: decided again from what the keys name. The statement answered
      // them (under the group's oldest retention: each unit keeps the keys younger than its own). A retry
      // one by one (the second statement failed for another unit) reads them again: they may have changed.
      const decided = alone
        ? await lookUpAndDecide(deps.pool, units)
        : units.map((w) => w.unit.decide(rememberedFor(w.unit, remembered.get(w.unit.instanceId))));
      // units that now write nothing (every request a replay, or refused) are answered from their keys: the
      // first statement found their lease held, and there is nothing to fence. The others: a second statement.
      const writing = units.filter((_, i) => (decided[i] as UnitWrites).jobs.length > 0);
      const second = writing.length > 0
        ? await writeOne(deps, writing, [...new Set(writing.map((w) => w.unit.instanceId))], decided.filter((d) => d.jobs.length > 0), null)
        : { out: new Map<Waiting, UnitResult | Error>() };
      if (!second) return null;
      const written = second.out;
      units.forEach((w, i) => {
        const d = decided[i] as UnitWrites;
        if (d.jobs.length === 0) written.set(w, { decided: d, jobs: [], evented: false });
      });
      return written;
    });
    for (const w of again) out.set(w, retried.get(w) ?? lost());
  }
  return out;
}

/**
 * The units' decisions written by one statement (null: more rows than it takes); a unit of an instance named
 * `known` by `check` is left out of the answer (its decision assumed its keys unknown).
 */
async function writeOne(deps: OneStatementDeps, group: Waiting[], instanceIds: readonly string[], decided: UnitWrites[], check: KeyCheck | null): Promise<{ out: Map<Waiting, UnitResult | Error>; remembered: FencedInsert['remembered'] } | null> {
  const { fence, leasesOf } = deps;
  const all = decided.flatMap((d) => d.jobs);
  if (all.length > ROWS_PER_STATEMENT) return null;
  const { held, known, remembered, jobs } = await insertJobsFenced(deps.pool, all, fence && leasesOf ? leasesOf(instanceIds) : null, check);
  const out = new Map<Waiting, UnitResult | Error>();
  let at = 0;
  group.forEach((w, i) => {
    const d = decided[i] as UnitWrites;
    const mine = jobs.slice(at, at + d.jobs.length);
    at += d.jobs.length;
    if (held && !held.has(w.unit.instanceId)) out.set(w, notOwned());
    else if (!known.has(w.unit.instanceId)) out.set(w, { decided: d, jobs: mine.filter((j): j is Job => j !== null), evented: false });
  });
  return { out, remembered };
}

/** The keys of the units, for the statement to look up itself (null: none has keys). */
function keyCheck(group: readonly Waiting[]): KeyCheck | null {
  const check: KeyCheck = { instanceIds: [], keys: [], since: Infinity };
  for (const { unit } of group) {
    for (const k of unit.keys) (check.instanceIds.push(unit.instanceId), check.keys.push(k));
    // the oldest retention of the group: a key a unit would count as expired may count as known, and that
    // unit is decided again from an exact look-up
    if (unit.keys.length > 0) check.since = Math.min(check.since, unit.since);
  }
  return check.keys.length > 0 ? check : null;
}

/** What a unit decides from: its keys among those the statement found remembered, younger than its own retention. */
function rememberedFor(unit: AcceptUnit, found: ReadonlyMap<string, RememberedKey> | undefined): Map<string, KeyedJob> {
  const known = new Map<string, KeyedJob>();
  if (!found) return known;
  for (const key of unit.keys) {
    const r = found.get(key);
    if (r && r.at > unit.since) known.set(key, { job: r.job, payloadHash: r.payloadHash });
  }
  return known;
}

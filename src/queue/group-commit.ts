/**
 * The node-wide group commit of acceptances: the batches of many instances committed in one transaction.
 *
 * Each instance still decides its own batch, in its own order, on its own serial executor (src/queue/
 * acceptance.ts): idempotency, QUEUE_FULL, its plan and TTL_UNREACHABLE. What it hands over here is a unit:
 * the keys to look up and a `decide` that turns what they name into the rows to write. A group of units is
 * then one transaction of a fixed number of statements, however many instances it holds:
 *
 *   fence every instance's lease (one statement; a unit whose lease is gone is refused alone) → look up every
 *   unit's keys (one; none without keys) → each unit decides (in memory) → insert every job and remember every
 *   key (one) → every `message.queued` event (one, none when no webhook wants them; each instance's in its
 *   order) → COMMIT.
 *
 * A group whose `message.queued` no webhook wants (the usual send, and what an operator's many instances
 * send) is instead ONE statement, its own transaction, fenced inside it, that remembers the jobs' idempotency
 * keys too and looks them up itself (src/queue/sql/insertJobsFenced.ts): its units decide as if no key were
 * known, and only the instances of which it finds a key remembered (a replay) decide again, from the keys and
 * jobs it answers for them, and a second statement when they still write something. One round trip instead
 * of four or five, which is most of what an acceptance waits for. Its price: a connection that breaks while
 * that statement is on its way leaves the outcome unknown (CommitOutcomeUnknown) where BEGIN would have
 * failed first, and the instance's queue then reads itself again from PostgreSQL (src/queue/acceptance.ts
 * `reconcile`).
 *
 * Only the new rows: slots of waiting jobs a priority jump moved are written by the instance's slot writer
 * after the commit (src/queue/slot-writer.ts), so one instance's jump never slows the others' group. A unit
 * as large as a send-bulk (`size`) goes in a group of its own (`maxRows`), so that it does not hold up the
 * small units that would have shared its transaction.
 *
 * Groups are pipelined: while one commits, the next collects what arrives and starts (at most `maxInFlight`
 * at once). A unit's instance waits for its group's commit before it decides its next batch, so a decision
 * always sees the previous one committed. A group that fails as a whole for one unit (a key another node took
 * meanwhile) is tried again unit by unit, so one instance cannot fail the others; a lost connection or an
 * unknown COMMIT fails every unit of the group, as it would have failed each alone.
 */
import { performance } from 'node:perf_hooks';
import { CommitOutcomeUnknown, withTransaction, type Pool, type Queryable } from '../store/pool.js';
import { isConnectionError } from '../store/health.js';
import { DomainError } from '../errors.js';
import type { Job, NewJob } from './job.js';
import { findKeysAcross, type KeyedJob } from './sql/findByIdempotencyKeys.js';
import { insertJobs, ROWS_PER_STATEMENT } from './sql/insertJobs.js';
import { insertJobsFenced, type FencedInsert, type InstanceLeaseRef, type KeyCheck, type RememberedKey } from './sql/insertJobsFenced.js';

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

export interface CommitterDeps {
  pool: Pool;
  /** the instances (of `instanceIds`) whose lease this node holds, read FOR KEY SHARE in the transaction */
  fence?: (q: Queryable, instanceIds: readonly string[]) => Promise<Set<string>>;
  /**
   * Write events of many instances in one statement, inside the transaction; per item whether it was written
   * (nothing answered: every unit with events counts as evented).
   */
  emit(q: Queryable, items: { instanceId: string; event: string; data: unknown }[]): Promise<readonly ({ eventId: string } | null)[] | void>;
  /**
   * One statement instead of a transaction (it looks up its keys itself), for a group whose events no
   * webhook wants (src/queue/sql/insertJobsFenced.ts): `quiet` answers whether none of these instances' webhooks wants
   * an event acceptance writes (the subscription cache `emit` reads too); `leasesOf` the leases this node
   * holds of them, with which the statement fences itself (required when `fence` is set). Without `quiet`,
   * every group is a transaction.
   */
  quiet?: (instanceIds: readonly string[]) => Promise<boolean>;
  leasesOf?: (instanceIds: readonly string[]) => InstanceLeaseRef[];
  /** groups committing at once (default 2) */
  maxInFlight?: number;
  /** units in one group (default 500) */
  maxUnits?: number;
  /** requests in one group (default 1,000); a larger unit is a group alone */
  maxRows?: number;
}

/** What the group commit did so far (AcceptanceCommitter.stats). */
export interface GroupCommitStats {
  groups: number;
  units: number;
  runs: number;
  rows: number;
  groupMs: number;
  busyMs: number;
}

interface Waiting {
  unit: AcceptUnit;
  resolve: (r: UnitResult) => void;
  reject: (err: unknown) => void;
}

const notOwned = () => new DomainError('INSTANCE_UNREACHABLE', 'this node no longer owns the instance; nothing was accepted');

export class AcceptanceCommitter {
  private waiting: Waiting[] = [];
  private inFlight = 0;
  private scheduled = false;
  /**
   * For the benchmarks and /debug: groups committed, the units in them; groups run (`runs`, failed ones too),
   * the requests in them (`rows`), their time from start to outcome summed (`groupMs`), and the time at least
   * one was running (`busyMs`, wall clock: how much of a run PostgreSQL had a group to work on).
   */
  readonly stats: GroupCommitStats = { groups: 0, units: 0, runs: 0, rows: 0, groupMs: 0, busyMs: 0 };
  /** when the groups running began to run without a pause (performance.now()) */
  private busySince = 0;

  constructor(private readonly deps: CommitterDeps) {}

  /** Commit one instance's batch with whatever else is waiting; resolves once it is in PostgreSQL. */
  commit<D extends UnitWrites>(unit: AcceptUnit<D>): Promise<UnitResult<D>> {
    return new Promise<UnitResult<D>>((resolve, reject) => {
      this.waiting.push({ unit, resolve: resolve as (r: UnitResult) => void, reject });
      this.schedule();
    });
  }

  /** Start a group on the next turn (what arrives in this one joins it), unless enough are committing. */
  private schedule(): void {
    if (this.scheduled || this.waiting.length === 0 || this.inFlight >= (this.deps.maxInFlight ?? 2)) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.waiting.length === 0 || this.inFlight >= (this.deps.maxInFlight ?? 2)) return;
      const group = this.nextGroup();
      this.inFlight += 1;
      void this.run(group).finally(() => {
        this.inFlight -= 1;
        this.schedule();
      });
      this.schedule();
    });
  }

  /** The waiting units, in order, up to `maxUnits` and `maxRows` (at least one unit). */
  private nextGroup(): Waiting[] {
    const maxUnits = this.deps.maxUnits ?? 500;
    const maxRows = this.deps.maxRows ?? 1_000;
    let rows = 0;
    let n = 0;
    for (const w of this.waiting) {
      const size = w.unit.size ?? 1;
      if (n >= maxUnits || (n > 0 && rows + size > maxRows)) break;
      rows += size;
      n += 1;
    }
    return this.waiting.splice(0, n);
  }

  private async run(group: Waiting[]): Promise<void> {
    const started = performance.now();
    // inFlight already counts this group
    if (this.inFlight === 1) this.busySince = started;
    let results: Map<Waiting, UnitResult | Error>;
    try {
      results = await outcomes(group, (units) => this.transact(units));
    } finally {
      const ended = performance.now();
      this.stats.runs += 1;
      for (const w of group) this.stats.rows += w.unit.size ?? 1;
      this.stats.groupMs += ended - started;
      if (this.inFlight === 1) this.stats.busyMs += ended - this.busySince;
    }
    for (const w of group) settle(w, results.get(w));
  }

  private async transact(group: Waiting[]): Promise<Map<Waiting, UnitResult | Error>> {
    const instanceIds = [...new Set(group.map((w) => w.unit.instanceId))];
    const quiet = this.deps.quiet ? await this.deps.quiet(instanceIds) : false;
    const one = quiet ? await this.asOneStatement(group, instanceIds) : null;
    if (one) return one;
    const out = new Map<Waiting, UnitResult | Error>();
    await withTransaction(this.deps.pool, async (c) => {
      let live = group;
      if (this.deps.fence) {
        const held = await this.deps.fence(c, instanceIds);
        live = group.filter((w) => held.has(w.unit.instanceId));
        for (const w of group) if (!held.has(w.unit.instanceId)) out.set(w, notOwned());
      }
      const decided = await lookUpAndDecide(c, live);
      const all = decided.flatMap((d) => d.jobs);
      // the jobs and their keys, one statement
      const inserted = await insertJobs(c, all);
      const events: { instanceId: string; event: string; data: unknown }[] = [];
      /** per live unit, where its events end in `events` */
      const ends: number[] = [];
      let at = 0;
      live.forEach((w, i) => {
        const d = decided[i] as UnitWrites;
        const jobs = inserted.slice(at, at + d.jobs.length);
        at += d.jobs.length;
        // nobody's webhook hears of these acceptances (a send-bulk too large for the one statement): no events to build
        if (!quiet) for (const e of d.events(jobs)) events.push({ instanceId: w.unit.instanceId, event: e.event, data: e.data });
        ends.push(events.length);
        out.set(w, { decided: d, jobs, evented: false });
      });
      const written = events.length > 0 ? await this.deps.emit(c, events) : [];
      let from = 0;
      live.forEach((w, i) => {
        const end = ends[i] as number;
        const r = out.get(w);
        if (r && !(r instanceof Error)) r.evented = written ? written.slice(from, end).some((x) => x !== null) : end > from;
        from = end;
      });
    });
    this.stats.groups += 1;
    this.stats.units += group.length;
    return out;
  }

  /**
   * A quiet group (CommitterDeps.quiet: no webhook wants its events) of `instanceIds` as one statement that
   * writes the jobs and remembers their keys, fenced inside it; null when it cannot be (more rows than one
   * statement takes), and the transaction writes it, without building events nobody wants.
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
  private async asOneStatement(group: Waiting[], instanceIds: readonly string[]): Promise<Map<Waiting, UnitResult | Error> | null> {
    const { fence, leasesOf } = this.deps;
    if (fence && !leasesOf) return null;
    let rows = 0;
    for (const w of group) rows += w.unit.size ?? 1;
    if (rows > ROWS_PER_STATEMENT) return null;
    const none = new Map<string, KeyedJob>();
    const first = await this.writeOne(group, instanceIds, group.map((w) => w.unit.decide(none)), keyCheck(group));
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
          ? await lookUpAndDecide(this.deps.pool, units)
          : units.map((w) => w.unit.decide(rememberedFor(w.unit, remembered.get(w.unit.instanceId))));
        // units that now write nothing (every request a replay, or refused) are answered from their keys: the
        // first statement found their lease held, and there is nothing to fence. The others: a second statement.
        const writing = units.filter((_, i) => (decided[i] as UnitWrites).jobs.length > 0);
        const second = writing.length > 0
          ? await this.writeOne(writing, [...new Set(writing.map((w) => w.unit.instanceId))], decided.filter((d) => d.jobs.length > 0), null)
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
    this.stats.groups += 1;
    this.stats.units += group.length;
    return out;
  }

  /**
   * The units' decisions written by one statement (null: more rows than it takes); a unit of an instance named
   * `known` by `check` is left out of the answer (its decision assumed its keys unknown).
   */
  private async writeOne(group: Waiting[], instanceIds: readonly string[], decided: UnitWrites[], check: KeyCheck | null): Promise<{ out: Map<Waiting, UnitResult | Error>; remembered: FencedInsert['remembered'] } | null> {
    const { fence, leasesOf } = this.deps;
    const all = decided.flatMap((d) => d.jobs);
    if (all.length > ROWS_PER_STATEMENT) return null;
    const { held, known, remembered, jobs } = await insertJobsFenced(this.deps.pool, all, fence && leasesOf ? leasesOf(instanceIds) : null, check);
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
}

/**
 * What `write` gives each of `units`. When it fails as a whole: that failure for each, if it was a lost
 * connection or an unknown commit (as each alone would have failed) or there is one unit; else (one unit failed
 * the others, a key another node took meanwhile) each unit written alone, so that it fails only itself.
 * `write` is told whether it writes a unit alone after such a failure (`alone`).
 */
async function outcomes(
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

const lost = () => new Error('the group commit lost a unit');
const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

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

/** Look up the units' keys (one statement; none when no unit has keys) and let each decide from what they name. */
async function lookUpAndDecide(q: Queryable, units: readonly Waiting[]): Promise<UnitWrites[]> {
  const known = await findKeysAcross(q, units.map((w) => ({ instanceId: w.unit.instanceId, keys: w.unit.keys, since: w.unit.since })));
  return units.map((w) => w.unit.decide(known.get(w.unit.instanceId) ?? new Map()));
}

function settle(w: Waiting, r: UnitResult | Error | undefined): void {
  if (r === undefined) w.reject(lost());
  else if (r instanceof Error) w.reject(r);
  else w.resolve(r);
}

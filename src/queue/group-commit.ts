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
 * keys too and looks them up itself (src/queue/one-statement-group.ts, src/queue/sql/insertJobsFenced.ts): its
 * units decide as if no key were known, and only the instances of which it finds a key remembered (a replay)
 * decide again, from the keys and jobs it answers for them, and a second statement when they still write
 * something. One round trip instead of four or five, which is most of what an acceptance waits for. Its
 * price: a connection that breaks while that statement is on its way leaves the outcome unknown
 * (CommitOutcomeUnknown) where BEGIN would have failed first, and the instance's queue then reads itself again
 * from PostgreSQL (src/queue/acceptance.ts `reconcile`).
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
import { withTransaction, type Queryable } from '../store/pool.js';
import { insertJobs } from './sql/insertJobs.js';
import { lookUpAndDecide, notOwned, outcomes, settle, type AcceptUnit, type UnitResult, type UnitWrites, type Waiting } from './group-units.js';
import { commitAsOneStatement, type OneStatementDeps } from './one-statement-group.js';

export type { AcceptUnit, UnitResult, UnitWrites } from './group-units.js';

/**
 * The pool, the fence and the leases (src/queue/one-statement-group.ts OneStatementDeps), and what the
 * transaction and the groups need.
 */
export interface CommitterDeps extends OneStatementDeps {
  /**
   * Write events of many instances in one statement, inside the transaction; per item whether it was written
   * (nothing answered: every unit with events counts as evented).
   */
  emit(q: Queryable, items: { instanceId: string; event: string; data: unknown }[]): Promise<readonly ({ eventId: string } | null)[] | void>;
  /**
   * One statement instead of a transaction (it looks up its keys itself), for a group whose events no
   * webhook wants (src/queue/sql/insertJobsFenced.ts): `quiet` answers whether none of these instances'
   * webhooks wants an event acceptance writes (the subscription cache `emit` reads too). Without `quiet`,
   * every group is a transaction.
   */
  quiet?: (instanceIds: readonly string[]) => Promise<boolean>;
  /** told of every group's time and requests (QueueMetrics.committed: the Prometheus series mgw_group_commit_*) */
  metrics?: { committed(durationMs: number, requests: number): void };
  /** groups committing at once (default 2) */
  maxInFlight?: number;
  /** units in one group (default 500) */
  maxUnits?: number;
  /** requests in one group (default 1,000); a larger unit is a group alone */
  maxRows?: number;
}

/** The upper bounds (ms) of GroupCommitStats.rowsByMs's buckets; the last bucket holds the rest. */
export const GROUP_MS_BOUNDS = [5, 10, 25, 50, 100, 250] as const;

/** What the group commit did so far (AcceptanceCommitter.stats). */
export interface GroupCommitStats {
  groups: number;
  units: number;
  runs: number;
  rows: number;
  groupMs: number;
  busyMs: number;
  /**
   * The requests of the groups run, by the group's time from start to outcome: `rowsByMs[i]` those of groups
   * that took at most GROUP_MS_BOUNDS[i] ms (and more than the bound before), the last those of slower ones.
   * A request waits at least its group's time: when the requests of groups slower than a p99 goal pass 1 %,
   * PostgreSQL's commits alone keep the acceptance p99 above it.
   */
  rowsByMs: number[];
}

export class AcceptanceCommitter {
  private waiting: Waiting[] = [];
  private inFlight = 0;
  private scheduled = false;
  /**
   * For the benchmarks and /debug: groups committed, the units in them; groups run (`runs`, failed ones too),
   * the requests in them (`rows`), their time from start to outcome summed (`groupMs`), and the time at least
   * one was running (`busyMs`, wall clock: how much of a run PostgreSQL had a group to work on).
   */
  readonly stats: GroupCommitStats = { groups: 0, units: 0, runs: 0, rows: 0, groupMs: 0, busyMs: 0, rowsByMs: GROUP_MS_BOUNDS.map(() => 0).concat(0) };
  /** when the groups running began to run without a pause (performance.now()) */
  private busySince = 0;

  constructor(private readonly deps: CommitterDeps) {}

  /** The stats as of now, a copy of their own: two snapshots taken around a run do not share `rowsByMs`. */
  snapshot(): GroupCommitStats {
    return { ...this.stats, rowsByMs: [...this.stats.rowsByMs] };
  }

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
      let rows = 0;
      for (const w of group) rows += w.unit.size ?? 1;
      const ms = ended - started;
      this.stats.runs += 1;
      this.stats.rows += rows;
      this.stats.groupMs += ms;
      const bucket = GROUP_MS_BOUNDS.findIndex((bound) => ms <= bound);
      const at = bucket === -1 ? GROUP_MS_BOUNDS.length : bucket;
      this.stats.rowsByMs[at] = (this.stats.rowsByMs[at] ?? 0) + rows;
      if (this.inFlight === 1) this.stats.busyMs += ended - this.busySince;
      this.deps.metrics?.committed(ms, rows);
    }
    for (const w of group) settle(w, results.get(w));
  }

  private async transact(group: Waiting[]): Promise<Map<Waiting, UnitResult | Error>> {
    const instanceIds = [...new Set(group.map((w) => w.unit.instanceId))];
    const quiet = this.deps.quiet ? await this.deps.quiet(instanceIds) : false;
    const out = (quiet ? await commitAsOneStatement(this.deps, group, instanceIds) : null) ?? (await this.inTransaction(group, instanceIds, quiet));
    this.stats.groups += 1;
    this.stats.units += group.length;
    return out;
  }

  /**
   * The group as one transaction: fence every instance's lease, look up every unit's keys, let each decide,
   * insert every job, write the events a webhook wants (none when `quiet`), COMMIT.
   */
  private async inTransaction(group: Waiting[], instanceIds: readonly string[], quiet: boolean): Promise<Map<Waiting, UnitResult | Error>> {
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
    return out;
  }
}

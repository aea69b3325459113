/**
 * Acceptance: idempotency, QUEUE_FULL and TTL_UNREACHABLE are decided here, on the queue's serial executor.
 *
 * Acceptances arriving together are one batch, decided in arrival order and committed in one transaction
 * together with the batches of other instances (the node-wide group commit, src/queue/group-commit.ts): a
 * job is only answered once it is in PostgreSQL. Every request of a batch ends in an `AcceptOutcome`
 * (accepted, replay, or a refusal with its code); only a store failure is an error, and it fails the whole
 * batch. A send-bulk offers all its entries at once (`offerMany`): they are one batch, however many, decided
 * in their order and committed in one transaction.
 */
import { performance } from 'node:perf_hooks';
import { CommitOutcomeUnknown } from '../store/pool.js';
import { isConnectionError } from '../store/health.js';
import { newJobId } from '../ids.js';
import { acceptJob, type QueueEventName } from '../../machines/job.machine.js';
import type { Job, NewJob } from './job.js';
import { sendPart } from './payload.js';
import type { QueueCore } from './core.js';
import { queueEventData } from '../wire/queue-events.js';
import { BOOT_ID } from './sync-callers.js';
import { findByIdempotencyKey, type KeyedJob } from './sql/findByIdempotencyKeys.js';
import { AcceptanceCommitter, type UnitWrites } from './group-commit.js';
import type { AddProposal } from './planning.js';
import type { SlotWriter } from './slot-writer.js';
import type { InstanceSettings } from './settings.js';
import type { Queryable } from '../store/pool.js';
import type { AcceptOutcome, AcceptRequest, Refusal } from './types.js';

export const IDEMPOTENCY_RETENTION_MS = 7 * 86_400_000;

/** What acceptance emits, read once from the job machine's initial transition. */
export const QUEUED_EVENT: QueueEventName = acceptJob().emits ?? 'message.queued';

interface Pending {
  req: AcceptRequest;
  resolve: (o: AcceptOutcome) => void;
  reject: (e: unknown) => void;
}

/** A request's outcome decided inside the batch; `sibling` is a replay of a job inserted by the same batch. */
type Decided = AcceptOutcome | { kind: 'sibling'; of: Pending };

/** A batch decided: per request what it gets, and what the group commit writes. */
interface BatchDecision extends UnitWrites {
  decisions: Map<Pending, Decided>;
  /** the requests whose job is inserted, in the order of `jobs` */
  accepted: Pending[];
  placed: AddProposal;
}

/** How often a queue tries again to read itself from PostgreSQL after a commit of unknown outcome. */
const RECONCILE_RETRY_MS = 1_000;

export class Acceptance {
  /** offers waiting for a batch: one request each, or all entries of a send-bulk */
  private inbox: Pending[][] = [];
  private draining = false;
  private reconciling = false;
  /**
   * The keyed offers not answered yet, by key: the latest offer's answer (`replayOf` waits for it before it reads
   * the key).
   */
  private readonly keysInFlight = new Map<string, Promise<AcceptOutcome>>();

  private readonly committer: AcceptanceCommitter;

  /**
   * `accepted` is told after each committed batch (the dispatch timer may need an earlier wake). Batches go
   * through the node's group commit (WorkerDeps.committer), else through one of this queue's own.
   */
  constructor(private readonly core: QueueCore, private readonly slots: SlotWriter, private readonly accepted: () => void) {
    const { deps } = core;
    const fence = deps.fence;
    this.committer = deps.committer ?? new AcceptanceCommitter({
      pool: deps.pool,
      maxInFlight: 1,
      ...(fence ? { fence: async (q: Queryable, ids: readonly string[]) => (await fence(q), new Set(ids)) } : {}),
      // answers nothing: a batch with events wakes the sender
      emit: (q, items) => deps.events.emitMany(q, items.map((it) => ({ event: it.event, data: it.data as Record<string, unknown> }))),
    });
  }

  /** Queue a request for the next batch. */
  offer(req: AcceptRequest): Promise<AcceptOutcome> {
    const [answer] = this.offerAll([req]);
    return answer as Promise<AcceptOutcome>;
  }

  /**
   * An idempotent send its instance cannot take now (offline, or an ordered restart: the route's gate refused
   * it): its replay when its key names a job already, a mismatch when that job's payload differs, null when the
   * key names none (or the request has no key). SPEC.md's idempotency rule 1 holds whatever the connection: a
   * client that lost the first answer and retries with its key must learn that its job exists, never that
   * nothing was accepted, which it could take for leave to send the message another way (found from the
   * outside: the retry was answered 503 INSTANCE_OFFLINE while its job waited to go out). Read from the
   * remembered keys in PostgreSQL, as a batch reads them, once every offer of the key made before has its
   * outcome: a retry that races its first send (offered while connected, its batch not committed yet) is that
   * send's replay, not 503 "no job has the key" while the job is being accepted (found from the outside).
   */
  async replayOf(req: AcceptRequest): Promise<AcceptOutcome | null> {
    if (req.idempotencyKey === null) return null;
    const inFlight = this.keysInFlight.get(req.idempotencyKey);
    if (inFlight) await inFlight.catch(() => undefined);
    const { core } = this;
    const found = await findByIdempotencyKey(core.deps.pool, core.instanceId, req.idempotencyKey, core.now() - IDEMPOTENCY_RETENTION_MS);
    if (!found) return null;
    if (found.payloadHash !== req.payloadHash) return mismatch(found.job.id);
    return { kind: 'replay', job: found.job, queuePosition: core.planner.position(found.job.id) };
  }

  /** Queue requests that go in one batch together, in their order (a send-bulk); one outcome each. */
  offerMany(reqs: readonly AcceptRequest[]): Promise<AcceptOutcome[]> {
    return Promise.all(this.offerAll(reqs));
  }

  private offerAll(reqs: readonly AcceptRequest[]): Promise<AcceptOutcome>[] {
    // acceptance latency: from the offer to the answer (after its batch's commit)
    const metrics = this.core.deps.metrics;
    const at = performance.now();
    const offer: Pending[] = [];
    const answers = reqs.map((req) => new Promise<AcceptOutcome>((resolve, reject) => {
      const answer = metrics ? (o: AcceptOutcome) => (metrics.accepted(o.kind, performance.now() - at), resolve(o)) : resolve;
      offer.push({ req, resolve: answer, reject });
    }));
    reqs.forEach((req, i) => {
      if (req.idempotencyKey !== null) this.keyInFlight(req.idempotencyKey, answers[i] as Promise<AcceptOutcome>);
    });
    if (offer.length > 0) {
      this.inbox.push(offer);
      this.kick();
    }
    return answers;
  }

  /**
   * Note an offer of `key` until its answer settles (`replayOf`): the latest offer of the key, whose batch is the
   * same as or later than the earlier ones' (batches are answered in order). One handler a keyed offer, on the
   * path of every acceptance that carries a key.
   */
  private keyInFlight(key: string, answer: Promise<AcceptOutcome>): void {
    this.keysInFlight.set(key, answer);
    // an anonymous continuation, not an arrow bound to a name: tsx (keepNames) names such an arrow each time it
    // is made (1.6 µs of a keyed acceptance over 500 instances, under --cpu-prof)
    void answer.then(
      () => this.keyAnswered(key, answer),
      () => this.keyAnswered(key, answer),
    );
  }

  private keyAnswered(key: string, answer: Promise<AcceptOutcome>): void {
    if (this.keysInFlight.get(key) === answer) this.keysInFlight.delete(key);
  }

  /** Fail what is still waiting for a batch (the queue stops). */
  rejectWaiting(err: unknown): void {
    for (const offer of this.inbox.splice(0)) for (const p of offer) p.reject(err);
  }

  /** Start draining the inbox unless a drain is already queued: arrivals meanwhile join its next batch. */
  private kick(): void {
    if (this.draining) return;
    this.draining = true;
    void this.core.serial.run(() => this.drain()).finally(() => {
      this.draining = false;
      if (this.inbox.length > 0) this.kick();
    });
  }

  /**
   * One batch per turn of the serial executor, so a due dispatch never waits behind a whole burst: whole
   * offers up to `batchSize` requests (a larger offer, a send-bulk, is a batch alone).
   */
  private async drain(): Promise<void> {
    if (this.inbox.length === 0) return;
    const max = this.core.deps.batchSize ?? 200;
    const batch: Pending[] = [];
    while (this.inbox.length > 0 && (batch.length === 0 || batch.length + (this.inbox[0] as Pending[]).length <= max)) {
      for (const p of this.inbox.shift() as Pending[]) batch.push(p);
    }
    try {
      await this.acceptBatch(batch);
    } catch (err) {
      // The store went away: before the COMMIT nothing was accepted (503), during it the batch may have been
      // (CommitOutcomeUnknown); retrying members one by one could accept a job without a key twice.
      if (batch.length === 1 || isConnectionError(err) || err instanceof CommitOutcomeUnknown) {
        for (const p of batch) p.reject(err);
        if (err instanceof CommitOutcomeUnknown) this.reconcile();
        return;
      }
      // A batch failed as a whole for one member (e.g. a concurrent node took a key): retry its members one
      // by one so that one bad request cannot fail the others.
      for (const p of batch) await this.acceptBatch([p]).catch((e: unknown) => p.reject(e));
    }
  }

  /**
   * A batch whose commit's outcome is unknown may be in PostgreSQL (committed just before the connection
   * broke) though memory does not hold it: the queue reads its mirror again from PostgreSQL once the store
   * answers (now, then every RECONCILE_RETRY_MS on the clock until it succeeds or the queue stops), so that a
   * job committed that way is planned and sent instead of waiting unseen until the next start.
   */
  private reconcile(): void {
    if (this.reconciling) return;
    this.reconciling = true;
    const { core } = this;
    const attempt = (): void => {
      if (core.stopped) {
        this.reconciling = false;
        return;
      }
      void core.serial.run(async () => {
        // what only memory holds (moved slots) is written first, as a job put back does (outcome-writer.ts)
        await this.slots.flush();
        await core.reload(core.now());
      }).then(
        () => {
          this.reconciling = false;
          this.accepted();
        },
        (err: unknown) => {
          core.deps.log.warn({ err, instanceId: core.instanceId }, 'queue not read again yet after a commit of unknown outcome; retrying');
          core.deps.clock.setTimeout(attempt, RECONCILE_RETRY_MS);
        },
      );
    };
    attempt();
  }

  private async acceptBatch(batch: Pending[]): Promise<void> {
    const { core } = this;
    const { deps, planner } = core;
    const now = core.now();
    const settings = deps.settings();
    const keys = [...new Set(batch.map((p) => p.req.idempotencyKey).filter((k): k is string => k !== null))];
    // decided inside the (node-wide) group's transaction, on this instance's serial executor: the previous
    // batch is committed and applied, nothing else of this instance's queue runs meanwhile
    // `decide` a method, not an arrow bound to the name: tsx (keepNames) names such an arrow each time it is made
    const acceptance = this;
    const { decided, jobs, evented } = await this.committer.commit({
      instanceId: deps.instanceId,
      keys,
      since: now - IDEMPOTENCY_RETENTION_MS,
      size: batch.length,
      decide(known) {
        return acceptance.decide(batch, known, now, settings);
      },
    });
    decided.placed.commit?.();
    // a priority jump moved waiting jobs: their rows are written after this (src/queue/slot-writer.ts)
    if (decided.placed.moved.length > 0) this.slots.soon();
    core.pending += jobs.length;
    const inserted = new Map<Pending, Job>();
    jobs.forEach((job, i) => {
      const a = decided.accepted[i];
      if (a) inserted.set(a, job);
    });
    // the webhook sender only when an event of this batch reached the outbox (else it would read it for nothing)
    if (evented) deps.events.flushed();
    for (const p of batch) {
      const d = decided.decisions.get(p);
      const job = d?.kind === 'sibling' ? inserted.get(d.of) : inserted.get(p);
      if (d === undefined || d.kind === 'sibling') {
        // a fresh job, or the same key twice in one batch: the second is a replay of the first, now committed
        if (job) p.resolve({ kind: d ? 'replay' : 'accepted', job, queuePosition: planner.position(job.id) });
        else p.reject(new Error('acceptance lost a request of its batch'));
      } else p.resolve(d);
    }
    this.accepted();
  }

  /** The batch's decisions given what its keys name (pure: the planner's proposal is applied after the commit). */
  private decide(batch: Pending[], known: Map<string, KeyedJob>, now: number, settings: InstanceSettings): BatchDecision {
    const { core } = this;
    const { deps, planner } = core;
    const decisions = new Map<Pending, Decided>();
    const fresh: { p: Pending; job: NewJob }[] = [];
    const keysInBatch = new Map<string, { p: Pending; job: NewJob }>();
    // the room the queue has for this batch's new jobs; without any, each is refused at once (no plan made)
    const room = deps.maxPending - core.pending;
    for (const p of batch) {
      const { req } = p;
      if (req.idempotencyKey !== null) {
        const sameBatch = keysInBatch.get(req.idempotencyKey);
        if (sameBatch) {
          decisions.set(p, sameBatch.job.payloadHash === req.payloadHash ? { kind: 'sibling', of: sameBatch.p } : mismatch(sameBatch.job.id));
          continue;
        }
        const found = known.get(req.idempotencyKey);
        if (found) {
          decisions.set(p, found.payloadHash === req.payloadHash
            ? { kind: 'replay', job: found.job, queuePosition: planner.position(found.job.id) }
            : mismatch(found.job.id));
          continue;
        }
      }
      if (room <= 0) {
        decisions.set(p, { kind: 'refused', code: 'QUEUE_FULL', maxPending: deps.maxPending });
        continue;
      }
      const job = newJob(req, deps.instanceId, now, req.ttlSeconds ?? settings.defaultTtlSeconds);
      fresh.push({ p, job });
      if (req.idempotencyKey !== null) keysInBatch.set(req.idempotencyKey, { p, job });
    }

    // More new jobs than room: a trial plan of them all tells which can never have a slot before their expiry
    // (refused TTL_UNREACHABLE, taking no room); the others take the room in their order, and the rest are
    // refused QUEUE_FULL. Found from the outside: with every new job counted against the room, a send the queue
    // had room for was refused QUEUE_FULL behind requests refused TTL_UNREACHABLE in its batch. (A later job of
    // a higher priority refused QUEUE_FULL may have made an earlier one unreachable in the trial: the trial plans
    // them as they arrived together, and only a batch over the room pays for it.)
    let candidates = fresh;
    if (fresh.length > room) {
      const trial = planner.tryAdd(fresh.map((f) => planJob(f.job)), now, settings).slots;
      candidates = [];
      for (const f of fresh) {
        if (!trial.has(f.job.id)) decisions.set(f.p, { kind: 'refused', code: 'TTL_UNREACHABLE', expiresAt: f.job.expiresAt });
        else if (candidates.length < room) candidates.push(f);
        else decisions.set(f.p, { kind: 'refused', code: 'QUEUE_FULL', maxPending: deps.maxPending });
      }
    }

    // Plan the fresh jobs; refuse the ones whose earliest slot is after their expiry.
    const placed = planner.tryAdd(candidates.map((f) => planJob(f.job)), now, settings);
    const accepted: { p: Pending; job: NewJob }[] = [];
    for (const f of candidates) {
      const slot = placed.slots.get(f.job.id);
      if (slot === undefined) {
        decisions.set(f.p, { kind: 'refused', code: 'TTL_UNREACHABLE', expiresAt: f.job.expiresAt });
        continue;
      }
      f.job.scheduledAt = slot;
      accepted.push(f);
    }
    // the same key again in the batch: the answer of the request it repeats, a refusal included
    for (const [p, d] of decisions) {
      if (d.kind !== 'sibling') continue;
      const of = decisions.get(d.of);
      if (of) decisions.set(p, of);
    }
    return {
      decisions,
      accepted: accepted.map((a) => a.p),
      placed,
      jobs: accepted.map((a) => a.job),
      events(jobs) {
        return jobs.map((job) => ({
          event: QUEUED_EVENT,
          data: queueEventData(QUEUED_EVENT, job, { now, position: placed.positions.get(job.id) ?? 0 }),
        }));
      },
    };
  }
}

/** What the planner needs of a new job. */
function planJob(job: NewJob): { id: string; priority: number; notBefore: number | null; expiresAt: number } {
  return { id: job.id, priority: job.priority, notBefore: job.notBefore, expiresAt: job.expiresAt };
}

// the send last: a literal that starts with a spread is slow to build (src/queue/sql/row.ts)
function newJob(req: AcceptRequest, instanceId: string, now: number, ttlSeconds: number): NewJob {
  // a key is remembered with its fingerprint (idempotency_keys.payload_hash): a keyed request without one is a bug
  if (req.idempotencyKey !== null && req.payloadHash === null) throw new Error('an accept request with an idempotency key needs its payload fingerprint');
  return {
    id: newJobId(),
    instanceId,
    originRoute: req.originRoute,
    chatId: req.chatId,
    phone: req.phone,
    payloadHash: req.payloadHash,
    idempotencyKey: req.idempotencyKey,
    priority: req.priority,
    notBefore: req.notBefore,
    queuedAt: now,
    scheduledAt: null,
    expiresAt: now + ttlSeconds * 1000,
    previousJobId: req.previousJobId ?? null,
    // the process the caller waits in (the node that took the request); an older node sends only the flag
    callerBoot: req.callerBoot ?? (req.awaitsCaller ? BOOT_ID : null),
    ...sendPart(req),
  };
}

function mismatch(jobId: string): Refusal {
  return { kind: 'refused', code: 'IDEMPOTENCY_PAYLOAD_MISMATCH', jobId };
}

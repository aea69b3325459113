/**
 * v1 send-message / send-media in queue mode `pg`: the message becomes a priority-9 job of the persistent
 * queue (so the limits, pauses and quiet hours apply as to every send) and the request waits for its outcome.
 *
 * What the wait can end in (SPEC.md "v1 send outcomes"):
 * - a terminal job: 200 sent, 500 not delivered, 503 not connected;
 * - with ceilings (maxPerHour or maxPer24h set) and the job still waiting: 504 QUEUE_WAIT_TIMEOUT; the job
 *   stays queued with the instance's default TTL and goes out at its slot;
 * - without ceilings the 504 is unreachable (SPEC.md rule 4), and a message must not go out after the caller
 *   was told it did not: the job is accepted with a validity just short of the wait, so that a slot outside
 *   the wait (quiet hours, a restart that lasts, a queue full of other v1 messages) makes it expire inside
 *   the worker (or be refused at once with TTL_UNREACHABLE when the planner already knows), never send late.
 *   Should the expiry not have happened by the end of the wait (a long dispatch of another job holds the
 *   worker), the job is cancelled; a job already being sent is answered 500 "may have been delivered".
 * - a graceful stop ends the wait at once (legacy-waits.ts): without ceilings the job is cancelled (503, the
 *   gateway is stopping) or, being sent, waited for; with ceilings the 504, the job released to go out later.
 * - the instance handed over to another node during the wait (a move, its owner's graceful stop): the wait
 *   follows the job to its new owner (`followOutcome`), and what the end of a wait asks (the view, the release,
 *   the cancellation) goes to the owner of that moment.
 */
import type { Context } from 'koa';
import { DomainError } from '../../errors.js';
import { V1Error } from '../errors.js';
import { ok } from '../envelope.js';
import { legacyWaitMs, type Config } from '../../config.js';
import { sleep, type Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import { DEADLINES, type InstancePort, type InstanceView, type SendGate } from '../../actors/port.js';
import type { Job } from '../../queue/jobs.js';
import type { InstanceSettings } from '../../queue/settings.js';
import { isQuiet, quietEnd } from '../../queue/quiet-hours.js';
import { toAcceptRequest } from './send.js';
import { acceptJob, viewOf } from './queue-gate.js';
import type { V1Send } from './legacy-parse.js';
import { isConnectionError } from '../../store/health.js';
import type { V1Waits } from './legacy-waits.js';
import { BOOT_ID } from '../../queue/sync-callers.js';
import type { Pool } from '../../store/pool.js';
import { getJob, releaseSyncCaller, transitionJob } from '../../queue/jobs.js';
import { isTerminal } from '../../../machines/job.machine.js';
import { NOT_CONNECTED, RESTARTING, STORE_LOST_QUEUED, answerOutcome, outcomeOfJob, queuedData, waitTimeout, type V1Outcome } from './legacy-answer.js';

/** SPEC.md rule 1: v1 send-message and send-media are dispatched before everything else. */
export const V1_PRIORITY = 9;
/** Time given to the cancellation that closes a wait without ceilings (inside the 5 s reserve of the wait cap). */
const CANCEL_GRACE_MS = 2_000;
/**
 * How long an ask made once the wait is over may take (the reason a job did not go out, the release of its
 * caller's mark): the instance's owner answers in milliseconds, and one being handed over at that moment is not
 * waited for. Found from the outside: with a send in flight during a hand-over or a delete, those asks waited out
 * the hand-over (3 s and more) and the 20 s wait was answered at 24 s.
 */
const AFTER_WAIT_MS = 1_000;

export interface QueuedDeps {
  /**
   * The port of the request's instance as it is now (legacy.ts): after a hand-over to another node, a port to
   * its new owner. The wait for a job's outcome follows the job there (`followOutcome`).
   */
  portOf(ctx: Context): InstancePort;
  clock: Clock;
  /** reads a job whose instance no longer answers (src/queue/jobs.ts getJob) */
  pool: Pool;
  log?: Logger;
  config: Pick<Config, 'LEGACY_SYNC_TIMEOUT_MS' | 'LEGACY_CALLER_TIMEOUT_MS'>;
  /** the waits of this node, which a graceful stop ends and answers (legacy-waits.ts) */
  waits?: V1Waits;
  /** whether the instance is being deleted through this node */
  deleting?(instanceId: string): boolean;
}

/** A synchronous send whose instance was being deleted when its wait ended: cancelled, never sent. */
const DELETING = 'not sent: the instance is being deleted; nothing was sent';

/** A synchronous send the gateway's stop ended before its outcome: nothing was sent (SPEC.md: 503). */
const STOPPING = 'not sent: the gateway is stopping; nothing was sent';

/** "Limits are active": a sending ceiling is set. Only then may a v1 wait end in 504. */
export const limitsActive = (s: Pick<InstanceSettings, 'maxPerHour' | 'maxPer24h'>): boolean => s.maxPerHour !== null || s.maxPer24h !== null;

/** Validity of a synchronous v1 job without ceilings: it expires a second before the wait ends. */
export const syncTtlSeconds = (waitMs: number): number => Math.max(1, Math.floor(waitMs / 1000) - 1);

/**
 * Why a message was not sent within the wait: the connection (503) or the plan (500). `ahead`: the jobs ahead of
 * it when it was accepted (null: not known, nothing was accepted). With none ahead, or with a pause between two
 * messages longer than the wait, what held it back was the send before it and that pause, not a queue (found
 * from the outside: "other messages are ahead" was said of a message alone in its queue).
 */
export function notSentInTime(view: InstanceView, settings: InstanceSettings, now: number, waitMs: number, ahead: number | null = null): V1Outcome {
  if (view.paused) return { kind: 'not_sent', offline: true, error: `${RESTARTING}; nothing was sent` };
  if (!view.connected) return { kind: 'not_sent', offline: true, error: `${NOT_CONNECTED}; nothing was sent` };
  const qh = settings.quietHours;
  if (qh && (isQuiet(now, qh) || isQuiet(now + waitMs, qh))) {
    const end = quietEnd(isQuiet(now, qh) ? now : now + waitMs, qh);
    return { kind: 'not_sent', offline: false, error: `not sent: quiet hours until ${new Date(end).toISOString()}; nothing was sent` };
  }
  const within = `not sent within the synchronous wait of ${Math.round(waitMs / 1000)} s`;
  if (ahead === 0 || settings.minDelayMs >= waitMs) {
    const pause = settings.minDelayMs === settings.maxDelayMs ? `${settings.minDelayMs} ms` : `${settings.minDelayMs}-${settings.maxDelayMs} ms`;
    return {
      kind: 'not_sent',
      offline: false,
      error: `${within}: the send before it and the pause between two messages (${pause}) end after the wait; nothing was sent`,
    };
  }
  return { kind: 'not_sent', offline: false, error: `${within}: other messages are ahead in the send queue; nothing was sent` };
}

/** Resolve when the job is terminal (its latest state), or with null after `ms`. */
const awaitOutcome = (port: InstancePort, jobId: string, ms: number): Promise<Job | null> =>
  port.ask({ type: 'queue.awaitOutcome', jobId, timeoutMs: ms }, ms + DEADLINES.queueStatus);

/** The pause between two asks for the outcome of a job whose instance no node serves right now. */
const FOLLOW_PAUSE_MS = 250;

/**
 * The queue asked is no longer the job's, or did not answer: the instance was handed over (a move, a graceful
 * stop of its owner: the stopped queue ends its waits with INSTANCE_UNREACHABLE, src/queue/waiters.ts), no node
 * serves it right now, its owner closed the connection as it stopped (INSTANCE_TIMEOUT), or it was deleted
 * (INSTANCE_NOT_FOUND: the job's row, gone with it, then says so). An outcome ask changes nothing, so it is
 * asked again where the instance runs now.
 */
const lostTheQueue = (err: unknown): boolean =>
  err instanceof DomainError && (err.code === 'INSTANCE_UNREACHABLE' || err.code === 'INSTANCE_TIMEOUT' || err.code === 'INSTANCE_NOT_FOUND');

/**
 * The job's outcome (its state once terminal), or null when `left()` ran out (or the job is gone: its instance
 * was deleted). The wait follows the job: while the caller waits here, the instance may be handed over to
 * another node, which then dispatches the job; the queue that was asked ends the wait (`lostTheQueue`), and the
 * outcome is asked again of the instance's port as it is now (`now()`: its new owner, found and waited for by
 * src/cluster/remote-port.ts; this node's own queue after a restart or a hand-over to it). Between two asks the
 * job's row says whether it ended meanwhile. Asking the owner, rather than listening to PostgreSQL, keeps one
 * way of waiting: the owner's queue settles the wait in the turn it writes the outcome.
 */
async function followOutcome(deps: QueuedDeps, now: () => InstancePort, job: Pick<Job, 'id' | 'instanceId'>, left: () => number): Promise<Job | null> {
  for (let asks = 0; ; asks++) {
    if (asks > 0) {
      const row = await getJob(deps.pool, job.instanceId, job.id).catch(() => undefined);
      if (row === null) return null;
      if (row && isTerminal(row.state)) return row;
      if (left() <= 0 || deps.waits?.stopping) return null;
      // an ask that failed at once again (no node serves the instance yet): not a busy loop
      if (asks > 1) await sleep(deps.clock, Math.min(FOLLOW_PAUSE_MS, left()));
    }
    try {
      return await awaitOutcome(now(), job.id, left());
    } catch (err) {
      if (!lostTheQueue(err)) throw err;
    }
  }
}

/** Why the job did not go out in time, from the instance's view now. */
const whyNotSent = async (port: InstancePort, settings: InstanceSettings, now: number, waitMs: number, ahead: number | null = null, deadlineMs?: number): Promise<V1Outcome> =>
  notSentInTime(await viewOf(port, deadlineMs), settings, now, waitMs, ahead);

/**
 * `gate`: the send was prepared with the last view seen of an instance on another node (legacy.ts `send`);
 * GateStale, with nothing accepted, when the owner did not take it as prepared.
 */
export async function sendThroughQueue(
  ctx: Context,
  deps: QueuedDeps,
  port: InstancePort,
  settings: InstanceSettings,
  send: V1Send,
  route: string,
  gate?: SendGate,
): Promise<void> {
  const { clock } = deps;
  const waitMs = legacyWaitMs(deps.config);
  const start = clock.now();
  const asyncMode = settings.legacyQueueMode === 'async';
  const ceilings = limitsActive(settings);
  const shortLived = !asyncMode && !ceilings;
  const req = toAcceptRequest(
    { ...send.parsed, priority: V1_PRIORITY, idempotencyKey: null, notBefore: null, ttlSeconds: shortLived ? syncTtlSeconds(waitMs) : null },
    route,
  );
  // the caller waits here for the outcome: should this process die, the job must not outlive its caller
  if (!asyncMode) {
    req.awaitsCaller = true;
    // this process: the owner the send may be forwarded to must not take the caller for gone while it waits here
    req.callerBoot = BOOT_ID;
  }
  // a stop has begun: nothing new is accepted to wait for (its wait would end at once)
  if (!asyncMode && deps.waits?.stopping) throw new V1Error(503, STOPPING);

  const run = async (): Promise<void> => {
    let job: Job;
    let queuePosition: number;
    try {
      ({ job, queuePosition } = await acceptJob(port, req, waitMs, gate));
    } catch (err) {
      if (err instanceof DomainError && err.code === 'TTL_UNREACHABLE') {
        // the planner already knows the slot is outside the job's validity: answer now, nothing was created
        if (shortLived) return answerOutcome(ctx, send, await whyNotSent(port, settings, clock.now(), waitMs));
        throw new V1Error(500, 'not sent: the send limits leave no slot before the message would expire; nothing was sent');
      }
      throw err;
    }
    if (asyncMode) return ok(ctx, queuedData(send, job, clock.now()), 202);
    await waitAndAnswer(ctx, deps, settings, send, job, { start, waitMs, ceilings, ahead: Math.max(0, queuePosition - 1) });
  };
  // a stop waits for the answer of a synchronous send, from its acceptance on
  return !asyncMode && deps.waits ? deps.waits.track(run()) : run();
}

/**
 * Wait for the accepted job's outcome until the wait ends (or the gateway begins to stop: the wait ends at
 * once, and its answer says so), and answer it.
 */
async function waitAndAnswer(
  ctx: Context,
  deps: QueuedDeps,
  settings: InstanceSettings,
  send: V1Send,
  job: Job,
  wait: { start: number; waitMs: number; ceilings: boolean; ahead: number },
): Promise<void> {
  const { clock } = deps;
  const { start, waitMs, ceilings, ahead } = wait;
  const left = () => Math.max(0, start + waitMs - clock.now());
  // the instance's port as it is at each ask: after a hand-over, a port to its new owner
  const now = (): InstancePort => deps.portOf(ctx);
  const outcome = followOutcome(deps, now, job, left);
  const done = deps.waits ? await deps.waits.untilStop(outcome) : await outcome;
  const stopped = done === null && deps.waits?.stopping === true;
  // why the job did not go out in time, from the view right after the wait: read only where it can be the
  // answer (an expired job, a wait without ceilings that ended), so that a sent job asks nothing more of the
  // instance (an ask to its owner, where another node runs it). An instance no node serves at this moment
  // gives no view: the answer, should the job not have gone out, then says so without its reason.
  const why = stopped
    ? ({ kind: 'not_sent', offline: true, error: STOPPING } as const)
    : (done ? done.state === 'expired' : !ceilings)
      ? await whyNotSent(now(), settings, clock.now(), waitMs, ahead, AFTER_WAIT_MS).catch((err: unknown) => {
        if (lostTheQueue(err)) return null;
        throw err;
      })
      : null;
  const whyExpired = (): V1Outcome => why ?? { kind: 'not_sent', offline: false, error: 'not sent within the synchronous wait; nothing was sent' };
  if (done) return answerOutcome(ctx, send, outcomeOfJob(done, whyExpired));
  const deleted = stopped ? null : await whileDeleted(deps, job);
  if (deleted) return answerOutcome(ctx, send, deleted);
  if (ceilings) {
    // the caller gets the job's id and polls it: from now on the job goes out at its slot whatever happens here;
    // if the store cannot take that now, a later start expires the job and the caller's poll says so. No node
    // to ask at this moment (a hand-over): the mark is a column no owner's write depends on, cleared here
    await now().ask({ type: 'queue.releaseCaller', jobId: job.id }, AFTER_WAIT_MS)
      .catch((err: unknown) => (lostTheQueue(err) ? releaseSyncCaller(deps.pool, job.instanceId, job.id) : Promise.reject(err)))
      .catch((err: unknown) => {
        deps.log?.warn({ err, jobId: job.id }, 'could not release the synchronous caller of a job');
      });
    const current = await getJob(deps.pool, job.instanceId, job.id).catch(() => undefined);
    const settled = settledMeanwhile(current, whyExpired);
    if (settled) return answerOutcome(ctx, send, settled);
    throw waitTimeout(current ?? job, clock.now());
  }
  // a stop ended the wait early: a job being sent has the rest of the wait for its outcome (the stop lets an
  // in-flight dispatch finish and persist it)
  return answerOutcome(ctx, send, await closeWait(deps, now, job, whyExpired, stopped ? left() : 0));
}

/**
 * The job as read after the wait and its release (`undefined`: the store could not say): the 504 tells the caller
 * to poll a job that is still on its way, so a job that is gone or ended is answered here instead. Found from
 * the outside: an instance deleted during the wait took the job with it, and its caller was told to poll a job
 * that no longer existed, with a key that no longer worked. A job gone is answered as not sent, one that ended
 * meanwhile with its outcome; a job waiting or being sent (or a store that cannot say) gets the 504, which
 * says which of the two it is (src/http/routes/legacy-answer.ts waitTimeout).
 */
function settledMeanwhile(current: Job | null | undefined, whyExpired: () => V1Outcome): V1Outcome | null {
  if (current === null) return { kind: 'not_sent', offline: true, error: 'not sent: the instance was deleted while the message waited; nothing was sent' };
  return current && isTerminal(current.state) ? outcomeOfJob(current, whyExpired) : null;
}

/**
 * The wait ended while the instance is being deleted on this node: its queue drains first, which waits for a
 * send in flight (up to DRIVER_CALL_TIMEOUT_MS), and the job is deleted after. Found from the outside: a v1
 * caller whose wait ended meanwhile was told 504 "goes out at scheduledAt: poll the job, do not resend", and the
 * job was then deleted unsent. The job is cancelled in PostgreSQL at once, if still waiting (a conditional move:
 * never one being sent), and the caller told it was not sent. Null: no delete here, or the job is no longer
 * waiting (answered as usual: gone with its instance, ended, or in flight).
 */
async function whileDeleted(deps: QueuedDeps, job: Job): Promise<V1Outcome | null> {
  if (!deps.deleting?.(job.instanceId)) return null;
  const cancelled = await transitionJob(deps.pool, job.id, { type: 'CANCEL' }, { terminalAt: deps.clock.now() }).catch(() => null);
  return cancelled ? { kind: 'not_sent', offline: true, error: DELETING } : null;
}

/**
 * Without ceilings: make sure the job cannot go out after the answer, and say what happened. A job already being
 * sent is waited for up to `sendingMs` (0: answered as in flight at once: the caller's wait is over).
 */
async function closeWait(deps: QueuedDeps, now: () => InstancePort, job: Job, whyExpired: () => V1Outcome, sendingMs: number): Promise<V1Outcome> {
  const inFlight: V1Outcome = {
    kind: 'unknown',
    unknownReason: 'the message was being sent when the synchronous wait ended',
  };
  const { clock } = deps;
  const outcomeWithin = async (ms: number): Promise<V1Outcome> => {
    const until = clock.now() + ms;
    const ended = ms > 0 ? await followOutcome(deps, now, job, () => Math.max(0, until - clock.now())) : null;
    return ended ? outcomeOfJob(ended, whyExpired) : inFlight;
  };
  try {
    await now().ask({ type: 'queue.cancel', jobId: job.id }, CANCEL_GRACE_MS);
    return whyExpired();
  } catch (err) {
    // The store went away: the cancellation ran (so no dispatch was in progress) but could not be written.
    // Nothing was sent, and nothing will be: the job's validity ended before the wait did.
    if (isConnectionError(err)) return { kind: 'not_sent', offline: true, error: STORE_LOST_QUEUED };
    // no node could be asked right now (a hand-over at this very moment): the job's row says what it is
    if (lostTheQueue(err)) return settledOrInFlight(await getJob(deps.pool, job.instanceId, job.id).catch(() => undefined), whyExpired, clock.now(), inFlight);
    // the job's row is gone: its instance was deleted while the caller waited (the queue still answered the
    // cancellation), so nothing was sent. Found from the outside: answered 500 "no such job"
    if (err instanceof DomainError && err.code === 'JOB_NOT_FOUND') return settledOrInFlight(null, whyExpired, clock.now(), inFlight);
    if (!(err instanceof DomainError) || err.code !== 'JOB_NOT_CANCELLABLE') throw err;
    if (err.data.state === 'sending') return outcomeWithin(sendingMs);
    // it ended between the wait and the cancellation: read the outcome
    return outcomeWithin(CANCEL_GRACE_MS);
  }
}

/**
 * The job's row at the end of a wait without ceilings whose cancellation reached no node: a job gone or ended is
 * answered as such; one still waiting whose validity is over never goes out (it expires wherever its instance
 * runs: not sent); anything else (being sent, or a row the store could not give) may go out: in flight.
 */
function settledOrInFlight(row: Job | null | undefined, whyExpired: () => V1Outcome, now: number, inFlight: V1Outcome): V1Outcome {
  const settled = settledMeanwhile(row, whyExpired);
  if (settled) return settled;
  if (row && (row.state === 'queued' || row.state === 'scheduled') && row.expiresAt <= now) return whyExpired();
  return inFlight;
}

/** The connection rule shared by the queued v1 routes: an ordered restart is waited for, anything else is 503. */
export function requireConnectedOrRestarting(view: InstanceView): void {
  if (!view.connected && !view.paused) throw new V1Error(503, NOT_CONNECTED);
}

/**
 * The planner: the child `planner` of an instance actor, and the only holder of the instance's queue
 * (src/queue/worker.ts). It serializes acceptance and re-planning, decides every slot and `TTL_UNREACHABLE`,
 * runs the dispatch timer, and persists outcomes. It answers the queue asks of the instance's port
 * (`queue.*`, `settings`, `drain`) and hands each claimed job to the dispatcher (`DISPATCH`, through the
 * parent), waiting for its outcome a little longer than the call deadline; no answer at all is `unknown`.
 *
 * From its parent it learns whether the session can send (`SENDABLE`: due slots are armed only then) and
 * whether the store is reachable (`STORE`: memory-degraded mode). It reports its queue mode (`QUEUE_MODE`)
 * so the instance's view tells routes how the queue runs.
 *
 * A callback actor's cleanup cannot be awaited: `stop` of the actor starts the worker's stop, and
 * `settled(instanceId)` / `settledAll()` wait for it (an in-flight dispatch persists its outcome first).
 */
import { fromCallback, type CallbackActorLogic } from 'xstate';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Pool, Queryable } from '../store/pool.js';
import type { Instance } from '../store/instances.js';
import type { QueueMode } from '../queue/settings.js';
import { QueueWorker, type DispatchOutcome } from '../queue/worker.js';
import type { LeaseRef, QueueMetrics } from '../queue/types.js';
import type { EventBus } from './events.js';
import { answer, serveLocally, type Replies } from './local-port.js';
import { Stopping } from './stopping.js';
import { failureReply, okReply, type AskEnvelope, type AskReply, type PlannerAsk, type QueueSummary } from './port.js';
import type { ChildEvent, PlannerNotice } from '../../machines/instance.types.js';
import type { DegradedJournal } from '../queue/degraded-journal.js';
import type { AcceptanceCommitter } from '../queue/group-commit.js';
import type { QueueStarts } from '../queue/starts.js';

/** How much longer than the call deadline the planner waits for the dispatcher before it records `unknown`. */
export const DISPATCH_GRACE_MS = 5_000;

export type PlannerEvent = AskEnvelope<PlannerAsk> | PlannerNotice;

export interface PlannerInput {
  instanceId: string;
}

export interface PlannerDeps {
  pool: Pool;
  clock: Clock;
  log: Logger;
  maxPending: number;
  callTimeoutMs: number;
  events: EventBus;
  replies: Replies;
  /** the instance's current record (settings) */
  record(instanceId: string): Instance | undefined;
  /** the store's state when the planner starts */
  store: { readonly degraded: boolean; readonly since: number | null };
  /** wake the instance's webhook sender after a commit that wrote events */
  wake(instanceId: string): void;
  /** the write fence of the instance's lease (src/cluster/cluster.ts); none: unfenced */
  fence?: (instanceId: string, q: Queryable) => Promise<void>;
  /** the lease this node holds of the instance, for a write that fences itself in one statement */
  leaseOf?: (instanceId: string) => LeaseRef | null;
  /** acceptance and dispatch figures for /metrics */
  metrics?: QueueMetrics;
  /** the node's group commit of acceptances */
  committer?: AcceptanceCommitter;
  /** where sends made outside the store are kept on disk (src/queue/degraded-journal.ts) */
  journal?: DegradedJournal;
  /** the node's batched start reads (src/queue/starts.ts) */
  starts?: QueueStarts;
  /** whether the instance is brand-new (its queue starts empty, without reads); asked once, as its planner starts */
  fresh?: (instanceId: string) => boolean;
}

export interface Planners {
  logic: CallbackActorLogic<PlannerEvent, PlannerInput, ChildEvent>;
  /** resolves when the planner of the instance finished stopping */
  settled(instanceId: string): Promise<void>;
  settledAll(): Promise<void>;
}

/**
 * How long a queue summary (GET /api/status, GET /api/v2/queue, the console's counts) waits for a start read on its
 * way before it answers that the queue is still loading: an ordinary start reads in milliseconds, a node of full
 * queues for seconds.
 */
export const START_READ_WAIT_MS = 2_000;

/** The asks that need the queue's jobs read from PostgreSQL first (`serve`). */
// A cancel too: one that committed while the start read was on its way, after that read had seen the job waiting,
// left the job in the plan and the counts it loaded (found from the outside: 128 of 150 queues cancelled into
// during a restart counted 1 to 9 jobs PostgreSQL did not hold, until each ghost's slot came).
const START_READ_FIRST: ReadonlySet<PlannerAsk['type']> = new Set(['queue.accept', 'queue.acceptMany', 'queue.replay', 'queue.replan', 'queue.summary', 'queue.cancel']);

const NO_ANSWER: DispatchOutcome = {
  kind: 'unknown',
  unknownReason: 'the dispatcher did not answer in time; the message may or may not have been sent',
};

export function createPlanners(deps: PlannerDeps): Planners {
  const stopping = new Stopping();

  const logic = fromCallback<PlannerEvent, PlannerInput, ChildEvent>(({ input, receive, sendBack, system, self }) => {
    const { instanceId } = input;
    const log = deps.log.child({ instanceId, actor: 'planner' });
    const record = (): Instance => {
      const r = deps.record(instanceId);
      if (!r) throw new Error('the instance is not registered');
      return r;
    };
    let sendable = false;
    let storeDegraded = deps.store.degraded;
    const { fence, leaseOf } = deps;
    const worker = new QueueWorker({
      instanceId,
      pool: deps.pool,
      clock: deps.clock,
      log,
      settings: () => record().settings,
      maxPending: deps.maxPending,
      ...(deps.metrics ? { metrics: deps.metrics } : {}),
      ...(fence ? { fence: (q: Queryable) => fence(instanceId, q) } : {}),
      ...(fence && leaseOf ? { lease: () => leaseOf(instanceId) } : {}),
      ...(deps.committer ? { committer: deps.committer } : {}),
      ...(deps.journal ? { journal: deps.journal } : {}),
      events: {
        emit: (q, event, data) => deps.events.emit(q, instanceId, event, data),
        emitMany: (q, items) => deps.events.emitMany(q, instanceId, items),
        flushed: () => deps.wake(instanceId),
      },
      dispatcher: {
        connected: () => sendable,
        send: (job) =>
          deps.replies
            .request((address) => (sendBack({ type: 'DISPATCH', ...address, job, quietHours: record().settings.quietHours }), true), deps.callTimeoutMs + DISPATCH_GRACE_MS, () => new Error('no answer'))
            .then((r) => (r.ok ? (r.value as DispatchOutcome) : NO_ANSWER), () => NO_ANSWER),
      },
    }, { fresh: deps.fresh?.(instanceId) ?? false, ...(deps.starts ? { starts: deps.starts } : {}) });

    const mode = (): QueueMode => (!record().settings.enabled ? 'disabled' : storeDegraded ? 'memory-degraded' : 'pg');
    let reported: QueueMode | null = null;
    const reportMode = () => {
      const m = mode();
      if (m !== reported) sendBack({ type: 'QUEUE_MODE', mode: (reported = m) });
    };

    const summary = (): QueueSummary => {
      const m = mode();
      return {
        mode: m,
        limits: worker.limits(m),
        counts: worker.counts(),
        waiting: worker.waitingCount(),
        nextAt: worker.nextAt(),
        epoch: worker.epoch,
      };
    };

    const serve = async (ask: PlannerAsk): Promise<unknown> => {
      // what needs the queue's jobs waits for its start read (bounded by the asker's deadline), and is refused
      // while that read failed (503 QUEUE_STORE_UNAVAILABLE, queue_not_loaded): counts not read yet would be an
      // empty queue's, a re-plan would move nothing and say it re-planned, and a send was 502
      // INSTANCE_UNREACHABLE, "the instance could not be reached", beside a status that said otherwise
      // (a summary waits a moment, START_READ_WAIT_MS, then says the queue is still loading: 503, queue_loading)
      if (!worker.loaded && START_READ_FIRST.has(ask.type)) {
        await (ask.type === 'queue.summary' ? worker.loadedWithin(mode, START_READ_WAIT_MS) : worker.whenLoaded(mode));
      }
      switch (ask.type) {
        case 'queue.accept': {
          const outcome = await worker.offer(ask.request);
          return { ...outcome, limits: worker.limits(mode()) };
        }
        case 'queue.acceptMany':
          return worker.offerMany(ask.requests);
        case 'queue.replay': {
          const outcome = await worker.replayOf(ask.request);
          return outcome && { ...outcome, limits: worker.limits(mode()) };
        }
        case 'queue.cancel':
          return worker.cancel(ask.jobId, ask.reason);
        case 'queue.replan':
          return worker.replan(ask.reason);
        case 'queue.summary':
          return summary();
        case 'queue.awaitOutcome':
          return worker.waitForTerminal(ask.jobId, ask.timeoutMs);
        case 'queue.releaseCaller':
          return worker.releaseCaller(ask.jobId);
        case 'queue.callerGone':
          return worker.callerGone(ask.callerBoot);
        case 'queue.direct':
          return worker.directSend(ask.send, record().settings.enabled);
        case 'settings':
          reportMode();
          return ask.replan ? worker.replan('limits_changed') : null;
        case 'drain':
          return worker.stop();
      }
    };

    /** An ask's reply: its answer, or its failure (an unexpected one logged). */
    const reply = (ask: PlannerAsk): Promise<AskReply> =>
      serve(ask).then(okReply, (err: unknown) => failureReply(err, (e) => log.error({ err: e, ask: ask.type }, 'queue ask failed'), () => storeDegraded));

    const setStore = (degraded: boolean, since: number) => {
      storeDegraded = degraded;
      reportMode();
      void worker.setDegraded(degraded, since).catch((err: unknown) => log.warn({ err }, 'queue recovery failed; staying degraded'));
    };

    // a failed start is logged and tried again by the worker
    void worker.start().catch(() => undefined);
    if (storeDegraded) setStore(true, deps.store.since ?? deps.clock.now());
    reportMode();

    receive((event) => {
      switch (event.type) {
        case 'SENDABLE':
          sendable = event.on;
          // connected again: due slots that were not armed while the session could not send are armed now
          if (event.on) worker.resume();
          return;
        case 'STORE':
          return setStore(event.degraded, event.since);
        case 'ASK':
          void reply(event.ask).then((r) => answer(system, event, r));
      }
    });

    // a local ask is served in the caller's turn (src/actors/local-port.ts), by the same reply() and summary();
    // a summary before the queue has loaded goes through reply(), which waits for the load
    const unregister = serveLocally(self, { summary: () => (worker.loaded ? summary() : null), reply });

    return () => {
      unregister();
      stopping.track(instanceId, worker.stop().catch((err: unknown) => log.warn({ err }, 'queue stop failed')));
    };
  });

  return { logic, settled: (instanceId) => stopping.settled(instanceId), settledAll: () => stopping.settledAll() };
}

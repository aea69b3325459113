/**
 * What every route that queues a send shares (the v2 sends, requeue, v1 through the queue): the instance's
 * queue mode, the v2 gate, the route's gateway deadline and the accepted-job answer.
 */
import type { Context } from 'koa';
import { ok } from '../envelope.js';
import { DomainError, instanceOffline, instanceTimeout, queuePaused, queueStoreUnavailable } from '../../errors.js';
import { acceptedResponse } from '../../wire/job.js';
import type { AcceptResult, QueueWorker } from '../../queue/worker.js';
import type { InstanceHandle } from '../../actors/handle.js';
import type { Instance } from '../../store/instances.js';
import { raceClock, type Clock } from '../../clock.js';

export type QueueMode = 'pg' | 'memory-degraded' | 'disabled';
export type QueueModeOf = (instance: Instance) => QueueMode;

export interface QueueGateDeps {
  workerOf(instanceId: string): QueueWorker | undefined;
  modeOf: QueueModeOf;
  clock: Clock;
}

/** Race a queue call against the route's gateway deadline (504 INSTANCE_TIMEOUT). */
export function withGatewayDeadline<T>(clock: Clock, ms: number, p: Promise<T>): Promise<T> {
  return raceClock(clock, ms, p, () => {
    throw instanceTimeout();
  });
}

/** Checks every v2 send shares: queue mode, ordered restart, connection. Returns the instance's worker. */
export function v2Gate(deps: Pick<QueueGateDeps, 'workerOf' | 'modeOf'>, handle: InstanceHandle): QueueWorker {
  const mode = deps.modeOf(handle.instance);
  if (mode !== 'pg') throw queueStoreUnavailable(mode);
  const view = handle.view();
  if (view.paused) throw queuePaused();
  if (!view.connected) throw instanceOffline({ status: view.status, detail: view.detail, lastError: view.lastError });
  const worker = deps.workerOf(handle.id);
  if (!worker) throw new DomainError('INSTANCE_UNREACHABLE', 'the instance is not running on this gateway');
  return worker;
}

/** 202 (fresh) or 200 (replay) with the accepted-job response (src/wire/job.ts). */
export function answerAccepted(ctx: Context, deps: Pick<QueueGateDeps, 'clock' | 'modeOf'>, handle: InstanceHandle, worker: QueueWorker, r: AcceptResult, warnings: string[], extra: Record<string, unknown> = {}): void {
  const data = acceptedResponse({ ...r, limits: { ...worker.limits(deps.modeOf(handle.instance)) }, warnings }, deps.clock.now());
  ok(ctx, { ...data, ...extra }, r.replay ? 200 : 202);
}

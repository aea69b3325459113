/**
 * What every route that queues a send shares (the v2 sends, requeue, v1 through the queue): the v2 gate, the
 * acceptance ask and the accepted-job answer. Everything goes through the instance's port.
 */
import type { Context } from 'koa';
import { ok } from '../envelope.js';
import { instanceOffline, instanceTimeout, queuePaused, queueStoreUnavailable } from '../../errors.js';
import { acceptedResponse } from '../../wire/job.js';
import { refusalError, type AcceptRequest, type AcceptResult } from '../../queue/worker.js';
import type { LimitsObject } from '../../queue/windows.js';
import type { Instance } from '../../store/instances.js';
import { DEADLINES, type InstancePort, type InstanceView } from '../../actors/port.js';
import { raceClock, type Clock } from '../../clock.js';

export type { QueueMode } from '../../queue/settings.js';

export interface QueueGateDeps {
  /** the port of the request's instance (the API-key guard set ctx.state.instance) */
  portOf(ctx: Context): InstancePort;
  clock: Clock;
}

/** Race a call against the route's gateway deadline (504 INSTANCE_TIMEOUT). */
export function withGatewayDeadline<T>(clock: Clock, ms: number, p: Promise<T>): Promise<T> {
  return raceClock(clock, ms, p, () => {
    throw instanceTimeout();
  });
}

/** The instance's view (status, pause, queue mode). */
export const viewOf = (port: InstancePort, deadlineMs: number = DEADLINES.queueStatus): Promise<InstanceView> =>
  port.ask({ type: 'view' }, deadlineMs);

/** The number the instance sends from: the linked account, else the one on record. */
export const ownNumber = (ctx: Context, view: InstanceView): string | null =>
  view.phoneNumber ?? (ctx.state.instance as Instance).phoneNumber;

/** The view the v2 guard asked for this request (src/gateway.ts `v2Key`), if it did. */
const guardView = (ctx: Context): InstanceView | undefined => (ctx.state as { view?: InstanceView }).view;

/**
 * Checks every v2 send shares: queue mode, ordered restart, connection. Answers the instance's view (the one
 * the v2 guard asked for this request, else a fresh one).
 */
export async function v2Gate(ctx: Context, port: InstancePort): Promise<InstanceView> {
  const view = guardView(ctx) ?? (await viewOf(port));
  if (view.queueMode !== 'pg') throw queueStoreUnavailable(view.queueMode);
  if (view.paused) throw queuePaused();
  if (!view.connected) throw instanceOffline({ status: view.status, detail: view.detail, lastError: view.lastError });
  return view;
}

export type Accepted = AcceptResult & { limits: LimitsObject };

/** Hand a send to the instance's queue under the deadline: the job, or its refusal as the route's error. */
export async function acceptJob(port: InstancePort, request: AcceptRequest, deadlineMs: number = DEADLINES.send): Promise<Accepted> {
  const o = await port.ask({ type: 'queue.accept', request }, deadlineMs);
  if (o.kind === 'refused') throw refusalError(o);
  return { job: o.job, replay: o.kind === 'replay', queuePosition: o.queuePosition, limits: o.limits };
}

/** 202 (fresh) or 200 (replay) with the accepted-job response (src/wire/job.ts). */
export function answerAccepted(ctx: Context, clock: Clock, r: Accepted, warnings: string[], extra: Record<string, unknown> = {}): void {
  const data = acceptedResponse({ ...r, limits: { ...r.limits }, warnings }, clock.now());
  ok(ctx, { ...data, ...extra }, r.replay ? 200 : 202);
}

/**
 * What every route that queues a send shares (the v2 sends, requeue, v1 through the queue): the v2 gate, the
 * acceptance ask and the accepted-job answer. Everything goes through the instance's port.
 */
import type { Context } from 'koa';
import { ok } from '../envelope.js';
import { DomainError, instanceTimeout } from '../../errors.js';
import { acceptedResponse } from '../../wire/job.js';
import { refusalError, type AcceptOutcome, type AcceptRequest, type AcceptResult } from '../../queue/worker.js';
import type { LimitsObject } from '../../queue/windows.js';
import type { Instance } from '../../store/instances.js';
import { DEADLINES, v2GateRefusal, type InstancePort, type InstanceView, type SendGate } from '../../actors/port.js';
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

/**
 * The instance's view (status, pause, queue mode): at once where this process reads it (the instance actor's
 * snapshot, `InstancePort.viewNow`), else asked of the node that runs it within `deadlineMs`.
 */
export const viewOf = (port: InstancePort, deadlineMs: number = DEADLINES.queueStatus): InstanceView | Promise<InstanceView> =>
  port.viewNow ? port.viewNow() : port.ask({ type: 'view' }, deadlineMs);

/**
 * The number the instance sends from: the linked account, else the one on record (the key's instance; an operator's
 * request has none).
 */
export const ownNumber = (ctx: Context, view: InstanceView): string | null =>
  view.phoneNumber ?? (ctx.state.instance as Instance | undefined)?.phoneNumber ?? null;

/** The view the v2 guard asked for this request (src/gateway-routes.ts `v2Key`), if it did. */
const guardView = (ctx: Context): InstanceView | undefined => (ctx.state as { view?: InstanceView }).view;

/** Whether this request's send reached its gate (`gatedAccept`): what it is refused with from then on is the gate's answer. */
export const gateReached = (ctx: Context): boolean => (ctx.state as { gateReached?: boolean }).gateReached === true;

/** Keep `view` as this request's instance view: what the route's gate and preparation read from then on. */
export function keepView(ctx: Context, view: InstanceView): void {
  (ctx.state as { view?: InstanceView }).view = view;
}

/** The instance's view: the one the v2 guard asked for this request, else a fresh one (`viewOf`). */
export const requestView = (ctx: Context, port: InstancePort): InstanceView | Promise<InstanceView> => guardView(ctx) ?? viewOf(port);

/**
 * Checks every v2 send shares: queue mode, ordered restart, connection. Answers the instance's view (the one
 * the v2 guard asked for this request, else a fresh one), at once when that view is (`requestView`).
 */
export function v2Gate(ctx: Context, port: InstancePort): InstanceView | Promise<InstanceView> {
  const view = requestView(ctx, port);
  return view instanceof Promise ? view.then(gated) : gated(view);
}

function gated(view: InstanceView): InstanceView {
  const refusal = v2GateRefusal(view);
  if (refusal) throw refusal;
  return view;
}

/**
 * A v2 send whose gate the v2 guard left to the owner (src/gateway-routes.ts, an instance on another node):
 * the last view seen of the instance, to prepare the send with.
 */
export interface DeferredGate {
  view: InstanceView;
  /** the gate was asked for (or checked): what is thrown from then on is the answer as it is */
  settled: boolean;
}

/** Leave this request's v2 gate to the owner: the send is prepared with `view` (the v2 guard, src/gateway-routes.ts). */
export function deferGate(ctx: Context, view: InstanceView): DeferredGate {
  const deferred: DeferredGate = { view, settled: false };
  (ctx.state as { deferredGate?: DeferredGate }).deferredGate = deferred;
  return deferred;
}

const deferredGateOf = (ctx: Context): DeferredGate | undefined => (ctx.state as { deferredGate?: DeferredGate }).deferredGate;

export type Accepted = AcceptResult & { limits: LimitsObject };

/**
 * A v2 send: the gate, the route's preparation of the send with the instance's view (its parse and checks),
 * and the acceptance. Where the guard left the gate to the owner, the send is prepared with the last view seen
 * and the owner checks the gate, and the number the send assumed, as it accepts: one ask instead of two.
 * Anything the preparation refuses there, and an owner that says the send assumed a number it no longer has,
 * is answered as where the gate comes first: the view, the gate, the preparation again with that view.
 */
export async function gatedAccept(
  ctx: Context,
  port: InstancePort,
  prepare: (view: InstanceView) => Promise<AcceptRequest> | AcceptRequest,
  deadlineMs: number = DEADLINES.send,
): Promise<Accepted> {
  (ctx.state as { gateReached?: boolean }).gateReached = true;
  try {
    return await gatedOnce(ctx, port, prepare, deadlineMs);
  } catch (err) {
    if (!(err instanceof DomainError) || !replayable(err)) throw err;
    return replayDespite(err, ctx, port, prepare, deadlineMs);
  }
}

/**
 * Gate refusals under which the instance's queue still answers: an idempotent send refused so may be the retry
 * of one accepted before, whose answer the client lost.
 */
const REPLAYABLE: ReadonlySet<string> = new Set(['INSTANCE_OFFLINE', 'QUEUE_PAUSED']);

/**
 * A gate refusal a keyed send may still be replayed under: also the queue switched off by the operator (`enabled`
 * false: found from the outside, the retry of a sent message was told 503 QUEUE_STORE_UNAVAILABLE, which says no job
 * was created). Not the store away (memory-degraded): its keys cannot be read then.
 */
const replayable = (err: DomainError): boolean =>
  REPLAYABLE.has(err.code) || (err.code === 'QUEUE_STORE_UNAVAILABLE' && err.data.queueMode === 'disabled');

/**
 * Thrown by a route's preparation of a send that is answered with the replay of the job its key names instead
 * (src/http/routes/send.ts: a media send whose source no longer passes); the route answers it.
 */
export class ReplayInstead extends Error {
  /** `answer`: the replay, or rule 2's 409 (the key names a job of another payload) */
  constructor(readonly answer: Accepted | DomainError, readonly warnings: string[]) {
    super('answered with the replay of the job the key names');
  }
}

/**
 * What `accepting` answered, or the replay its preparation threw instead (ReplayInstead, with that replay's
 * warnings; rule 2's 409 is thrown as it is). `warnings` is null when nothing was replayed instead.
 */
export async function acceptedOrReplay(accepting: Promise<Accepted>): Promise<{ accepted: Accepted; warnings: string[] | null }> {
  try {
    return { accepted: await accepting, warnings: null };
  } catch (err) {
    if (!(err instanceof ReplayInstead)) throw err;
    if (err.answer instanceof DomainError) throw err.answer;
    return { accepted: err.answer, warnings: err.warnings };
  }
}

/**
 * The 200 replay of a keyed send whose key names a job already (409 IDEMPOTENCY_PAYLOAD_MISMATCH thrown for a job
 * of another payload); null without a key, or when no job has it. Throws what the lookup failed with (the store,
 * the deadline): then nobody can say.
 */
export async function lookupReplay(port: InstancePort, request: AcceptRequest, deadlineMs: number = DEADLINES.send): Promise<Accepted | null> {
  if (request.idempotencyKey === null) return null;
  const replay = await port.ask({ type: 'queue.replay', request }, deadlineMs);
  return replay && accepted(replay);
}

/** `lookupReplay`, a failed lookup answered null (a gate's refusal is then the answer). */
const replayOf = (port: InstancePort, request: AcceptRequest, deadlineMs: number): Promise<Accepted | null> =>
  port.ask({ type: 'queue.replay', request }, deadlineMs).then((r) => r && accepted(r), () => null);

/**
 * A v2 send its gate refused (`refusal`: the instance offline, or an ordered restart): when it carries an
 * idempotency key that names a job already, the 200 replay of that job (or 409 IDEMPOTENCY_PAYLOAD_MISMATCH), as
 * SPEC.md's idempotency rule 1 says whatever the instance's state; else the refusal, nothing accepted. A send the
 * route cannot prepare, or whose key the queue could not look up, is answered with the refusal as before.
 */
async function replayDespite(
  refusal: DomainError,
  ctx: Context,
  port: InstancePort,
  prepare: (view: InstanceView) => Promise<AcceptRequest> | AcceptRequest,
  deadlineMs: number,
): Promise<Accepted> {
  let request: AcceptRequest;
  try {
    request = await prepare(guardView(ctx) ?? deferredGateOf(ctx)?.view ?? (await viewOf(port)));
  } catch (err) {
    if (err instanceof ReplayInstead) throw err;
    throw refusal;
  }
  if (request.idempotencyKey === null) throw refusal;
  const replay = await replayOf(port, request, deadlineMs);
  if (!replay) throw refusal;
  return replay;
}

/** `gatedAccept` up to the gate's refusal. */
async function gatedOnce(
  ctx: Context,
  port: InstancePort,
  prepare: (view: InstanceView) => Promise<AcceptRequest> | AcceptRequest,
  deadlineMs: number,
): Promise<Accepted> {
  const deferred = deferredGateOf(ctx);
  if (deferred && !deferred.settled) {
    deferred.settled = true;
    const { view } = deferred;
    const request = await (async () => prepare(view))().catch(() => null);
    const r = request && (await offerGated(ctx, port, request, deadlineMs, view));
    if (r) return r;
  }
  const view = await v2Gate(ctx, port);
  const request = await prepare(view);
  // The preparation may take seconds (a mediaUrl's probe): in this process the gate is checked again in the turn
  // the send is offered, so a send is never accepted after the instance went offline (or paused) meanwhile, where
  // a retry of its key could have been refused 503 in between as 'no job has the key'.
  if (!port.viewNow) return acceptJob(port, request, deadlineMs);
  const first = await offerGated(ctx, port, request, deadlineMs, view);
  if (first) return first;
  const now = await v2Gate(ctx, port);
  const again = await prepare(now);
  return (await offerGated(ctx, port, again, deadlineMs, now)) ?? acceptJob(port, again, deadlineMs);
}

/**
 * The send offered with the gate of `view` (the owner checks it, and the number the send assumed, as it accepts):
 * its acceptance, or null when the owner's view differs (GateStale), that view kept to prepare the send again with.
 */
async function offerGated(ctx: Context, port: InstancePort, request: AcceptRequest, deadlineMs: number, view: InstanceView): Promise<Accepted | null> {
  try {
    return await acceptJob(port, request, deadlineMs, { phoneNumber: view.phoneNumber });
  } catch (err) {
    if (!(err instanceof GateStale)) throw err;
    keepView(ctx, err.view);
    return null;
  }
}

/**
 * The owner did not take a gated send as it was prepared (src/actors/local-port.ts `gated`): nothing was
 * accepted; `view` is the owner's, to prepare the send again with.
 */
export class GateStale extends Error {
  constructor(readonly view: InstanceView) {
    super('the send was prepared with a view the instance no longer has; nothing was accepted');
  }
}

/**
 * Hand a send to the instance's queue under the deadline: the job, or its refusal as the route's error. With a
 * `gate` (a send prepared with the last view seen of an instance on another node), GateStale when the owner
 * did not take it as prepared.
 */
export async function acceptJob(port: InstancePort, request: AcceptRequest, deadlineMs: number = DEADLINES.send, gate?: SendGate): Promise<Accepted> {
  if (!gate) return accepted(await port.ask({ type: 'queue.accept', request }, deadlineMs));
  const o = await port.ask({ type: 'queue.accept', request, gate }, deadlineMs);
  if (o.kind === 'stale') throw new GateStale(o.view);
  return accepted(o);
}

function accepted(o: AcceptOutcome & { limits: LimitsObject }): Accepted {
  if (o.kind === 'refused') throw refusalError(o);
  return { job: o.job, replay: o.kind === 'replay', queuePosition: o.queuePosition, limits: o.limits };
}

/** 202 (fresh) or 200 (replay) with the accepted-job response (src/wire/job.ts). */
export function answerAccepted(ctx: Context, clock: Clock, r: Accepted, warnings: string[], extra: Record<string, unknown> = {}): void {
  const data = acceptedResponse({ ...r, limits: { ...r.limits }, warnings }, clock.now());
  ok(ctx, { ...data, ...extra }, r.replay ? 200 : 202);
}

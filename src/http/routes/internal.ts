/**
 * The cluster's internal route: another node forwards an ask of one of this node's instances
 * (src/cluster/remote-port.ts). Authenticated with the cluster secret (family auth `cluster`); the answer is
 * always the owner's reply as data (`{reply}`), so the asking node throws exactly what a local port would have.
 * An instance this node does not run (any more) is `502 INSTANCE_UNREACHABLE`: nothing was done.
 */
import Router from '@koa/router';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import { integer, max, min, object, unknown } from 'superstruct';
import { createRouter } from '../router.js';
import { ok } from '../envelope.js';
import { parse } from '../validate.js';
import { bearerToken } from '../auth.js';
import { DomainError } from '../../errors.js';
import { BEING_DELETED, failureReply, okReply, type AskReply, type InstancePort } from '../../actors/port.js';
import { parseAsk } from './internal-asks.js';
import type { Logger } from '../../log.js';

export const AskBody = object({
  // checked by its type (internal-asks.ts `parseAsk`)
  ask: unknown(),
  deadlineMs: max(min(integer(), 1), 600_000),
});

export interface InternalDeps {
  /** the port of an instance this node runs, or null */
  localPort(instanceId: string): InstancePort | null;
  /**
   * a settings change from the operator API of another node: the record is read again from the store (not taken
   * from the ask) and, when a limit moved, the queue re-planned
   */
  update(instanceId: string, replan: boolean): Promise<void>;
  /**
   * another node deletes the instance (src/cluster/wiring.ts drainAtOwner): it is stopped here, its in-flight
   * dispatch finished and persisted, and its lease held for the delete (src/cluster/cluster.ts `forget`), rather
   * than only its queue stopped, which a failed delete left stopped. False when this node neither runs the
   * instance nor holds its lease.
   */
  stopForDelete(instanceId: string): Promise<boolean>;
  /** whether this node stopped the instance for a delete and holds its lease meanwhile (src/cluster/hand-overs.ts) */
  beingDeleted(instanceId: string): boolean;
  /**
   * The connection that carried a wait for a job's outcome (a v1 caller waiting on the node that asked) closed
   * before its answer: that node may have died with its caller (src/cluster/lost-callers.ts)
   */
  waitDropped?(instanceId: string, jobId: string): Promise<unknown>;
  log: Logger;
}

/** The guard of the internal family: the cluster secret as a bearer token (no secret: nothing is accepted). */
export function requireCluster(secret: string | undefined): Middleware {
  const expected = secret ? createHash('sha256').update(secret).digest() : null;
  return async function clusterAuth(ctx, next) {
    const token = bearerToken(ctx, 'CLUSTER_SECRET');
    const given = createHash('sha256').update(token).digest();
    if (!expected || !timingSafeEqual(given, expected)) throw new DomainError('UNAUTHORIZED', 'the cluster secret is not valid');
    ctx.state.authenticated = 'cluster';
    await next();
  };
}

export function internalRouter(deps: InternalDeps): Router {
  const router = createRouter('/internal/v1');
  const notHere = () => new DomainError('INSTANCE_UNREACHABLE', 'this node does not run the instance; nothing was done');
  router.post('/instances/:id/ask', async (ctx) => {
    const body = parse(ctx.request.body, AskBody);
    const ask = parseAsk(body.ask);
    const instanceId = ctx.params.id ?? '';
    // a delete's: also of an instance stopped here already for a delete that failed (its lease still held)
    if (ask.type === 'drain') {
      if (!(await deps.stopForDelete(instanceId))) throw notHere();
      return void ok(ctx, { reply: okReply(undefined), gates: true });
    }
    const port = deps.localPort(instanceId);
    // stopped here for its delete, its lease held: said as such, so that the asking node answers its caller at
    // once rather than wait for a new owner (found from the outside: a send through another node waited 3-5 s)
    if (!port && deps.beingDeleted(instanceId)) {
      return void ok(ctx, { reply: { ok: false, error: { code: 'INSTANCE_UNREACHABLE', message: BEING_DELETED, cause: 'deleting' } }, gates: true });
    }
    if (!port) throw notHere();
    if (ask.type === 'queue.awaitOutcome' && deps.waitDropped) {
      const { waitDropped } = deps;
      const { res } = ctx;
      const { socket } = ctx.req;
      // the asking node's end of the connection closed before the answer was written: that node went away (or
      // gave up on the ask). Its end, not the response's close: node's server keeps a connection the client
      // half-closed open until the pending answer is written, so a node SIGKILLed while it waits closes nothing
      // here before the wait ends (found: the response's `close` never came)
      const dropped = () => {
        done();
        if (res.writableFinished) return;
        waitDropped(instanceId, ask.jobId).catch((err: unknown) => deps.log.warn({ err, instanceId, jobId: ask.jobId }, 'the caller of a dropped wait could not be checked'));
      };
      const done = () => {
        socket.off('end', dropped);
        socket.off('close', dropped);
      };
      socket.once('end', dropped);
      socket.once('close', dropped);
      res.once('finish', done);
    }
    let reply: AskReply;
    try {
      reply = okReply(ask.type === 'settings' ? await deps.update(instanceId, ask.replan) : await port.ask(ask, body.deadlineMs));
    } catch (err) {
      reply = failureReply(err, (e) => deps.log.error({ err: e, ask: ask.type }, 'forwarded ask failed'));
    }
    // `gates`: this node checks a v2 send's gate as it accepts it (src/actors/local-port.ts), so that a node
    // that forwards to it may prepare a send with the last view it saw and forward it in one ask
    ok(ctx, { reply, gates: true });
  });
  return router;
}

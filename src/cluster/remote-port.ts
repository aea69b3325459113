/**
 * The port of an instance owned by another node: the ask is forwarded over HTTP to the owner's internal route
 * (`POST /internal/v1/instances/:id/ask`, authenticated with the cluster secret; the caller's API key never
 * travels) and its reply comes back as data, exactly as the owner's own port answered it.
 *
 * `502 INSTANCE_UNREACHABLE` ("nothing was accepted, safe to retry") only when the ask provably did not reach
 * the owner: no live owner, a connection refused or a host not found. Once the request may have been received,
 * a lost answer is `504 INSTANCE_TIMEOUT` (the owner may have accepted). An ask that provably did nothing (no
 * live owner, an owner that no longer owns the instance or no longer listens: a hand-over) is asked again of
 * the owner looked up afresh, at once and then every HAND_OVER_POLL_MS for up to HAND_OVER_WAIT_MS (never more
 * than a third of the ask's deadline): a request that meets a hand-over is answered by the new owner, this node
 * included, a little later, instead of `502` (the 502 still comes when no owner serves the instance by then,
 * and at once when the owner looked up afresh refuses the connection again: it died, its lease outlives it).
 *
 * The last view of each instance that came back is kept (`RemoteViews`), with whether its owner gates a v2 send
 * itself (it says so in every answer): a v2 send is then prepared with that view and handed over in one ask
 * (`queue.accept` with a `gate`, src/http/routes/queue-gate.ts `gatedAccept`) instead of a view and then the
 * acceptance. An owner of an earlier version says nothing of it, and is asked for the view first, as before.
 * A view is kept with the owner that gave it (its node id and address): a send prepared with it is handed over
 * in one ask to that owner only. After a hand-over the new owner, which may be of an earlier version that would
 * take the gated ask as an ungated one, is asked for the view first.
 *
 * A failure at a node (refused, no answer, the ask refused or failed there) is an OwnerNotAnswering that names
 * that node and says what happened: the operator is told the instance's state is unknown and why
 * (src/instances.ts), where a stopped instance's view was shown before (found from the outside: another node's
 * console showed an instance as disconnected, or kept showing it connected, while its owner could not be asked).
 * The code and the message are the ones an API-key caller got before; the node id is not in its envelope.
 */
import http from 'node:http';
import https from 'node:https';
import { DomainError, OwnerNotAnswering, instanceTimeout } from '../errors.js';
import { BEING_DELETED, replyErrorToThrow, type AskReply, type InstanceAsk, type InstancePort, type InstanceView, type ReplyOf } from '../actors/port.js';
import type { Owner } from './leases.js';

export interface RemoteDeps {
  /** this node's id: an owner that is this node but has no local port is in a hand-over */
  selfId: string;
  owner(instanceId: string, fresh?: boolean): Promise<Owner | null>;
  secret: string | undefined;
  /** the last views seen, shared by the ports of one node */
  views: RemoteViews;
  /** this node is stopping: it does not wait for an instance's new owner (it may close before one is there) */
  stopping?(): boolean;
  /** this node's own port of the instance, once it owns it (a hand-over to this node) */
  local?(instanceId: string): InstancePort | null;
  /**
   * Whether the instance still exists (its row): asked while no node owns it, so that an ask for an instance
   * deleted meanwhile is answered INSTANCE_NOT_FOUND at once instead of waiting out a hand-over that never ends
   */
  exists?(instanceId: string): Promise<boolean>;
  /**
   * Whether this node stopped the instance for its delete and holds its lease meanwhile (src/cluster/hand-overs.ts):
   * no node will run it while the delete runs, so an ask is answered at once instead of waiting for a new owner
   * (found: a v1 caller whose wait ended while its instance was being deleted through another node waited out
   * the hand-over wait, by then the delete had taken the job, and it was told "nothing was sent" of a message
   * being sent)
   */
  deleting?(instanceId: string): boolean;
  /** the wait between two looks at the owner while an instance is handed over, and the time (tests: simulated) */
  sleep?(ms: number): Promise<void>;
  now?(): number;
}

/** How long an ask waits for an instance's new owner, and how often it looks (src/cluster/cluster.ts rounds). */
export const HAND_OVER_WAIT_MS = 5_000;
export const HAND_OVER_POLL_MS = 100;
const realSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The instance was handed over to this node since the request began: its own port answers. */
class HandedOver {
  constructor(readonly port: InstancePort) {}
}

/**
 * The last view that came back of each instance another node owns, and whether that owner gates a v2 send
 * itself. At most `max` instances (the oldest seen forgotten first): a forgotten one costs one view ask.
 */
export class RemoteViews {
  private readonly seen = new Map<string, { view: InstanceView; gates: boolean; owner: string }>();
  constructor(private readonly max = 100_000) {}

  /** a view came back from `owner`, which said whether it gates sends (kept without its QR: a secret) */
  saw(instanceId: string, view: InstanceView, gates: boolean, owner: Owner): void {
    this.seen.delete(instanceId);
    this.seen.set(instanceId, { view: view.qrText === null ? view : { ...view, qrText: null }, gates, owner: ownerKey(owner) });
    if (this.seen.size > this.max) this.seen.delete(this.seen.keys().next().value as string);
  }

  /** whether the view kept of the instance is one that `owner` (this node id at this address) gave */
  gaveBy(instanceId: string, owner: Owner): boolean {
    return this.seen.get(instanceId)?.owner === ownerKey(owner);
  }

  /** an owner that does not gate sends answered (an earlier version, after a hand-over): ask the view first */
  ungated(instanceId: string): void {
    this.seen.delete(instanceId);
  }

  /** the last view, when its owner gates sends */
  gatedView(instanceId: string): InstanceView | undefined {
    const s = this.seen.get(instanceId);
    return s?.gates ? s.view : undefined;
  }
}

const ownerKey = (o: Owner) => `${o.nodeId} ${o.url}`;

/**
 * What one ask met at the owners it tried: the owners that refused the connection, in turn, and the node that
 * last failed to do it (null when the last look found no live owner, or an owner that answered).
 */
interface Trail {
  refused: string[];
  last: { node: string; why: string } | null;
  /** no other owner will come: the instance is being deleted (`RemoteDeps.deleting`) */
  final?: boolean;
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;
/** an owner that says (in its envelope or its reply) that it does not run the instance */
const NOT_OWNER = 'says it does not run the instance now (a hand-over under way)';

const NOT_DELIVERED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN', 'ENETUNREACH']);
const unreachableWhy = (why: string) => `the instance's node cannot be reached (${why}); nothing was accepted`;
const unreachable = (why: string) => new DomainError('INSTANCE_UNREACHABLE', unreachableWhy(why));
/** A reply that says the ask provably did nothing: the owner is looked up again (RemoteInstancePort.ask). */
const nothingDone = (message: string): AskReply => ({ ok: false, error: { code: 'INSTANCE_UNREACHABLE', message } });

/**
 * How long a connection to another node stays open unused: well inside the owner's keep-alive (src/gateway.ts,
 * 65 s), so that an ask is not written to a connection the owner is closing (it would be lost on its way:
 * `504`, though nothing was done).
 */
const IDLE_CONNECTION_MS = 30_000;

/**
 * The connections to the other nodes, kept open between asks. node's own client, not `fetch`: when a forwarded
 * v2 send was two asks (the instance's view, then the acceptance), fetch took 2.3 ms of the forwarding node's
 * CPU per send (its request and response streams, an abort signal per request), ten times what the owner's own
 * acceptance cost (`bench/cluster.ts`).
 */
const CLIENTS = {
  'http:': { request: http.request, agent: new http.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }) },
  'https:': { request: https.request, agent: new https.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }) },
};

/** The answer to a POST: its status and its parsed JSON body (null when it was not JSON). */
interface Answer {
  status: number;
  body: unknown;
}

/** A POST that answered nothing in time, or whose answer broke off (`broken`): the ask may have been received. */
class NoAnswer extends Error {
  constructor(readonly broken: boolean) {
    super(broken ? 'the answer broke off' : 'no answer in time');
  }
}

/**
 * POST a JSON body and read the answer, within `deadlineMs`. Rejects with the socket's error (its `code` tells
 * whether the request could have left: ECONNREFUSED and the like) or NoAnswer (the deadline, or the answer
 * broken off).
 */
function postJson(url: URL, headers: Record<string, string>, body: string, deadlineMs: number): Promise<Answer> {
  const { request, agent } = url.protocol === 'https:' ? CLIENTS['https:'] : CLIENTS['http:'];
  return new Promise<Answer>((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      agent,
      headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    const timer = setTimeout(() => req.destroy(new NoAnswer(false)), deadlineMs);
    const fail = (err: Error) => {
      clearTimeout(timer);
      reject(err);
    };
    req.on('error', fail);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      // a connection closed before the answer's end: node emits `error` (ECONNRESET, "aborted") on the answer
      res.on('error', () => fail(new NoAnswer(true)));
      res.on('end', () => {
        clearTimeout(timer);
        let parsed: unknown = null;
        try {
          parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          // not JSON: null, as the caller reads it
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
    });
    req.end(body);
  });
}

/** The socket error's code (ECONNREFUSED…), which node's client sets on the error itself; none for NoAnswer. */
const errorCode = (err: unknown): string | undefined => {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
};

/**
 * The ask as it is asked again `ms` after it was first: a wait for a job's outcome waits only for what is left of
 * it (its owner stopped while it waited: the new owner is asked, src/http/routes/legacy-queued.ts), so that its
 * answer comes inside the ask's deadline. Other asks are asked again as they were.
 */
function spent<A extends InstanceAsk>(ask: A, ms: number): A {
  return ask.type === 'queue.awaitOutcome' ? { ...ask, timeoutMs: Math.max(0, ask.timeoutMs - ms) } : ask;
}

export class RemoteInstancePort implements InstancePort {
  constructor(readonly instanceId: string, private readonly deps: RemoteDeps) {}

  lastView(): InstanceView | undefined {
    return this.deps.views.gatedView(this.instanceId);
  }

  async ask<A extends InstanceAsk>(ask: A, deadlineMs: number): Promise<ReplyOf<A>> {
    const now = this.deps.now ?? Date.now;
    const started = now();
    const waitUntil = this.deps.stopping?.() ? started : started + Math.min(HAND_OVER_WAIT_MS, deadlineMs / 3);
    const trail: Trail = { refused: [], last: null };
    const { refused } = trail;
    let reply = await this.forward(ask, deadlineMs, false, trail);
    // nothing was done: the owner looked up afresh at once, then again while the instance is handed over; an
    // owner that refuses the connection again though looked up afresh is dead, not handing over (its lease
    // outlives it): answered at once
    for (let looks = 0; !(reply instanceof HandedOver) && !reply.ok && reply.error.code === 'INSTANCE_UNREACHABLE'; looks++) {
      if (trail.final) break;
      if (looks > 0) {
        if (now() + HAND_OVER_POLL_MS > waitUntil || (refused.length >= 2 && refused.at(-1) === refused.at(-2))) break;
        await (this.deps.sleep ?? realSleep)(HAND_OVER_POLL_MS);
      }
      reply = await this.forward(spent(ask, now() - started), deadlineMs - (now() - started), true, trail);
    }
    if (reply instanceof HandedOver) return reply.port.ask(spent(ask, now() - started), deadlineMs - (now() - started));
    if (!reply.ok && reply.error.code === 'INSTANCE_UNREACHABLE' && trail.last) {
      throw new OwnerNotAnswering('INSTANCE_UNREACHABLE', reply.error.message, trail.last.node, trail.last.why);
    }
    if (!reply.ok) throw replyErrorToThrow(reply.error);
    return reply.value as ReplyOf<A>;
  }

  private async forward(ask: InstanceAsk, deadlineMs: number, fresh: boolean, trail: Trail): Promise<AskReply | HandedOver> {
    trail.last = null;
    const owner = await this.deps.owner(this.instanceId, fresh);
    if (!owner) {
      // looked up afresh and still none: a deleted instance never gets one (found from the outside: a v1 caller
      // waiting on an instance deleted meanwhile was answered only after this wait, 5 s, and again for its release)
      if (fresh && this.deps.exists && !(await this.deps.exists(this.instanceId))) {
        return { ok: false, error: { code: 'INSTANCE_NOT_FOUND', message: 'the instance was deleted; nothing was accepted' } };
      }
      return nothingDone('the instance has no live owner right now (it is being taken over); nothing was accepted');
    }
    if (owner.nodeId === this.deps.selfId) {
      // handed over to this node since the request began: its own port answers
      const local = this.deps.local?.(this.instanceId);
      if (local) return new HandedOver(local);
      if (this.deps.deleting?.(this.instanceId)) {
        trail.final = true;
        return nothingDone(BEING_DELETED);
      }
      return nothingDone('the instance is being handed over; nothing was accepted');
    }
    if (ask.type === 'queue.accept' && ask.gate && !this.deps.views.gaveBy(this.instanceId, owner)) {
      // prepared with a view another owner gave (the instance was handed over since): this owner may be of an
      // earlier version, which would accept the send without its gate. Asked for the view instead, and the
      // send is prepared again with it (stale: nothing was accepted); the next one goes in one ask if it gates.
      const seen = await this.post(owner, { type: 'view' }, deadlineMs, trail);
      return seen.ok ? { ok: true, value: { kind: 'stale', view: seen.value as InstanceView } } : seen;
    }
    return this.post(owner, ask, deadlineMs, trail);
  }

  /** The ask at the owner's internal route: its reply, or a refusal that says nothing was done there. */
  private async post(owner: Owner, ask: InstanceAsk, deadlineMs: number, trail: Trail): Promise<AskReply> {
    const failed = (code: 'INSTANCE_UNREACHABLE' | 'INSTANCE_TIMEOUT', err: DomainError, why: string) =>
      new OwnerNotAnswering(code, err.message, owner.nodeId, why);
    if (!this.deps.secret) throw failed('INSTANCE_UNREACHABLE', unreachable('no CLUSTER_SECRET'), 'cannot be asked: this node has no CLUSTER_SECRET');
    let res: Answer;
    try {
      res = await postJson(
        new URL(`${owner.url}/internal/v1/instances/${encodeURIComponent(this.instanceId)}/ask`),
        { authorization: `Bearer ${this.deps.secret}` },
        JSON.stringify({ ask, deadlineMs }),
        deadlineMs,
      );
    } catch (err) {
      const code = errorCode(err);
      // nothing reached the owner (it no longer listens: stopped, or gone): its successor is looked up
      if (code && NOT_DELIVERED.has(code)) {
        trail.refused.push(ownerKey(owner));
        trail.last = { node: owner.nodeId, why: `cannot be reached (${code})` };
        return nothingDone(unreachableWhy(code));
      }
      const why = code ? `dropped the connection (${code})` : err instanceof NoAnswer && err.broken ? 'broke its answer off' : `did not answer within ${seconds(deadlineMs)}`;
      throw failed('INSTANCE_TIMEOUT', instanceTimeout(), why);
    }
    const body = res.body as { success?: boolean; data?: { reply?: AskReply; gates?: boolean }; code?: string; error?: string } | null;
    const reply = body?.data?.reply;
    const ok = res.status >= 200 && res.status < 300;
    if (ok && reply) {
      this.remember(ask, reply, body?.data?.gates === true, owner);
      if (!reply.ok && reply.error.cause === 'deleting') {
        // stopped there for its delete: no other owner comes, the caller is answered now
        trail.final = true;
        trail.last = null;
      } else if (!reply.ok && reply.error.code === 'INSTANCE_UNREACHABLE') trail.last = { node: owner.nodeId, why: NOT_OWNER };
      return reply;
    }
    // the owner's envelope refusal (not this instance's owner any more, a bad secret): nothing was done there
    if (body?.code === 'INSTANCE_UNREACHABLE') {
      trail.last = { node: owner.nodeId, why: NOT_OWNER };
      return nothingDone(body.error ?? 'not the owner');
    }
    // refused before anything ran there (authentication, a malformed ask): nothing was done; otherwise unknown
    if (res.status < 500) throw failed('INSTANCE_UNREACHABLE', unreachable(`the owner answered ${res.status}`), `refused the ask (HTTP ${res.status})`);
    throw failed('INSTANCE_TIMEOUT', instanceTimeout(), `failed while answering (HTTP ${res.status})`);
  }

  /** What a reply tells of the instance's view, and of whether its owner gates sends. */
  private remember(ask: InstanceAsk, reply: AskReply, gates: boolean, owner: Owner): void {
    const { views } = this.deps;
    if (!gates) {
      views.ungated(this.instanceId);
      return;
    }
    if (!reply.ok) return;
    if (ask.type === 'view') views.saw(this.instanceId, reply.value as InstanceView, true, owner);
    else if (ask.type === 'queue.accept' && ask.gate) {
      const r = reply.value as { kind: string; view?: InstanceView };
      if (r.kind === 'stale' && r.view) views.saw(this.instanceId, r.view, true, owner);
    }
  }
}

/**
 * Asking actors of this process and awaiting their replies. Every reply is a `REPLY` event sent to the reply
 * box (an actor with system id `replies`, a child of the supervisor), which hands it to the waiting caller by
 * its `askId`. A caller that stops waiting (its deadline passed) forgets the ask; a late reply is dropped.
 *
 * `LocalInstancePort` is the port (src/actors/port.ts) of an instance whose actor runs in this process. Where the
 * instance actor would route an ask (machines/instance.asks.ts `routeAsk`), this port serves it in the caller's
 * turn when it can: a view or QR read from the snapshot, and every ask for the running planner through the
 * planner's own reply() (`serveLocally`), under the same deadline. Other asks go as `ASK` events.
 */
import { fromCallback, type AnyActorRef, type CallbackActorLogic } from 'xstate';
import { raceClock, type Clock, type TimerHandle } from '../clock.js';
import { DomainError, instanceTimeout } from '../errors.js';
import { DriverError } from '../drivers/contract.js';
import { driverErrorToDomain } from '../drivers/domain-errors.js';
import { viewOf, type InstanceSnapshot } from '../../machines/instance.snapshot.js';
import { linkViewOf, routeAsk } from '../../machines/instance.asks.js';
import type { AcceptRequest } from '../queue/types.js';
import { isPlannerAsk, replyErrorToThrow, v1Queues, v2GateRefusal, type AskReply, type InstanceAsk, type InstancePort, type InstanceView, type PairingCode, type PlannerAsk, type QueueSummary, type SendGate, type ReplyEvent, type ReplyOf } from './port.js';

export const REPLIES_ID = 'replies';

const unreachable = () => new DomainError('INSTANCE_UNREACHABLE', 'the instance is not running on this gateway');

/** Where an ask goes: its id and the reply box. */
export interface ReplyAddress {
  askId: string;
  replyTo: string;
}

export interface Replies {
  /** the reply box; the supervisor runs it with system id REPLIES_ID */
  logic: CallbackActorLogic<ReplyEvent>;
  /**
   * Hand an ask to `deliver` (false: nobody to deliver to) and await its reply for at most `deadlineMs`;
   * `late()` is thrown when the deadline passes.
   */
  request(deliver: (address: ReplyAddress) => boolean, deadlineMs: number, late: () => Error): Promise<AskReply>;
  /**
   * Await a reply an actor serves in the caller's turn (a planner's `reply()`, `serveLocally`) for at most
   * `deadlineMs`, counted among the asks waiting until then; `late()` is thrown when the deadline passes.
   */
  served(reply: Promise<AskReply>, deadlineMs: number, late: () => Error): Promise<AskReply>;
  /** asks waiting for a reply, by event or served (a gauge for /debug/actors) */
  readonly waiting: number;
  /** the clock deadlines are measured on */
  readonly clock: Clock;
}

/**
 * The reply boxes running in this process, by actor: `answer` hands a reply to its box's handler in the same
 * turn, as the box's mailbox would (a box is idle whenever an actor answers), without an actor event per reply.
 */
const boxes = new WeakMap<AnyActorRef, (event: ReplyEvent) => void>();

/** What a planner running in this process serves a local ask with: its queue summary, and any ask's reply. */
export interface LocalPlanner {
  /** the summary read at once; null while the queue has not read its start state (then `reply` waits for it) */
  summary(): QueueSummary | null;
  reply(ask: PlannerAsk): Promise<AskReply>;
}

/**
 * The planners running in this process, by actor. A local ask for a planner is served in the caller's turn, as
 * a view is read from the instance's snapshot: a `queue.summary` read at once (a synchronous read of the
 * queue's state) once the queue has loaded, any other ask (and a summary before the load) by the same reply()
 * its `ASK` event gets, under the same deadline, without the event and the reply box. The planner registers
 * itself when it starts and removes itself when it stops.
 */
const planners = new WeakMap<AnyActorRef, LocalPlanner>();

/** Register the planner actor `self`; the returned function removes it. */
export function serveLocally(self: AnyActorRef, planner: LocalPlanner): () => void {
  planners.set(self, planner);
  return () => planners.delete(self);
}

/** An ask waiting for its reply: how to settle the caller, and the deadline's timer. */
interface Waiting {
  resolve(reply: AskReply): void;
  timer: TimerHandle;
}

export function createReplies(clock: Clock): Replies {
  const pending = new Map<string, Waiting>();
  let seq = 0;
  /** served asks not settled yet (`served`) */
  let served = 0;
  const logic = fromCallback<ReplyEvent>(({ receive, self }) => {
    const take = (event: ReplyEvent) => {
      const waiting = pending.get(event.askId);
      if (!waiting) return;
      pending.delete(event.askId);
      clock.clearTimeout(waiting.timer);
      waiting.resolve(event.reply);
    };
    boxes.set(self, take);
    receive(take);
    return () => boxes.delete(self);
  });
  return {
    logic,
    clock,
    get waiting() {
      return pending.size + served;
    },
    served(reply, deadlineMs, late) {
      served += 1;
      return raceClock(clock, deadlineMs, reply, () => {
        throw late();
      }).finally(() => {
        served -= 1;
      });
    },
    request(deliver, deadlineMs, late) {
      const askId = `a${++seq}`;
      // one promise and one timer per ask: the reply box settles it, or the deadline does (whichever is first)
      return new Promise<AskReply>((resolve, reject) => {
        const timer = clock.setTimeout(() => {
          if (!pending.delete(askId)) return;
          reject(late());
        }, Math.max(0, deadlineMs));
        pending.set(askId, { resolve, timer });
        let delivered: boolean;
        try {
          delivered = deliver({ askId, replyTo: REPLIES_ID });
        } catch (err) {
          delivered = false;
          pending.delete(askId);
          clock.clearTimeout(timer);
          reject(err);
          return;
        }
        if (!delivered && pending.delete(askId)) {
          clock.clearTimeout(timer);
          reject(unreachable());
        }
      });
    },
  };
}

/**
 * The view of a snapshot, computed once per snapshot (snapshots are immutable, and the view depends on nothing
 * else): many requests read the view between two changes of the instance. Frozen, since it is shared.
 */
const views = new WeakMap<InstanceSnapshot, InstanceView>();
function viewOfSnapshot(s: InstanceSnapshot): InstanceView {
  let view = views.get(s);
  if (!view) {
    const v = viewOf(s);
    view = Object.freeze({ ...v, browser: Object.freeze(v.browser) });
    views.set(s, view);
  }
  return view;
}

export class LocalInstancePort implements InstancePort {
  constructor(
    readonly instanceId: string,
    /** the instance actor, while it runs */
    private readonly actor: () => AnyActorRef | undefined,
    private readonly replies: Replies,
  ) {}

  viewNow(): InstanceView {
    return viewOfSnapshot(this.snapshot());
  }

  async ask<A extends InstanceAsk>(ask: A, deadlineMs: number): Promise<ReplyOf<A>> {
    // A view is what the instance actor's snapshot says; in this process it is read from the snapshot
    // directly (the answer the actor would give, without a transition and a reply per read).
    if (ask.type === 'view') return viewOfSnapshot(this.snapshot()) as ReplyOf<A>;
    if (ask.type === 'qr') return linkViewOf(this.snapshot()) as ReplyOf<A>;
    if (ask.type === 'pairingCode') return (await this.pairingCode(ask, deadlineMs)) as ReplyOf<A>;
    const a: InstanceAsk = ask;
    if (a.type === 'queue.accept' && a.gate) return (await this.gated(a.request, a.gate, deadlineMs)) as ReplyOf<A>;
    if (isPlannerAsk(ask)) {
      const planner = this.localPlanner(ask);
      if (planner) {
        if (ask.type === 'queue.summary') {
          const summary = planner.summary();
          if (summary) return summary as ReplyOf<A>;
        }
        return this.replied<A>(await this.replies.served(planner.reply(ask), deadlineMs, instanceTimeout));
      }
    }
    return this.send(ask, deadlineMs);
  }

  /**
   * Where the instance actor would route an ask (machines/instance.asks.ts `routeAsk`, given its current
   * snapshot): the actor, and the child that serves the ask (none: the actor answers it or turns it into its own
   * event); undefined while the instance actor is not running.
   */
  private routed(ask: InstanceAsk): { ref: AnyActorRef; child: AnyActorRef | undefined } | undefined {
    const ref = this.actor();
    if (!ref) return undefined;
    const snapshot = ref.getSnapshot() as InstanceSnapshot & { children: Record<string, AnyActorRef | undefined> };
    if (snapshot.status !== 'active') return undefined;
    const route = routeAsk(ask, snapshot, snapshot.children.session !== undefined);
    return { ref, child: 'to' in route ? snapshot.children[route.to] : undefined };
  }

  /**
   * The instance's running planner, when the ask is routed to it; undefined otherwise (the ask then goes as an
   * event, and is answered or refused as before). Only planners are registered (`serveLocally`).
   */
  private localPlanner(ask: PlannerAsk): LocalPlanner | undefined {
    const child = this.routed(ask)?.child;
    if (!child || child.getSnapshot().status !== 'active') return undefined;
    return planners.get(child);
  }

  /**
   * A send prepared on another node (src/http/routes/queue-gate.ts `gatedAccept`, the v1 routes): its API's gate
   * and what the send assumed are checked against the snapshot in the turn the acceptance is handed to the
   * planner.
   */
  private async gated(request: AcceptRequest, gate: SendGate, deadlineMs: number): Promise<ReplyOf<{ type: 'queue.accept'; request: AcceptRequest; gate: SendGate }>> {
    const view = viewOfSnapshot(this.snapshot());
    if (gate.v1) {
      // v1 words its refusals itself: the route answers from this view
      if (!v1Queues(view)) return { kind: 'stale', view };
    } else {
      const refusal = v2GateRefusal(view);
      if (refusal) throw refusal;
    }
    if (view.phoneNumber !== gate.phoneNumber) return { kind: 'stale', view };
    return this.ask({ type: 'queue.accept', request }, deadlineMs);
  }

  /** A reply's value, or its error thrown. */
  private replied<A extends InstanceAsk>(reply: AskReply): ReplyOf<A> {
    if (!reply.ok) throw replyErrorToThrow(reply.error);
    return reply.value as ReplyOf<A>;
  }

  private snapshot(): InstanceSnapshot {
    const ref = this.actor();
    if (!ref || ref.getSnapshot().status !== 'active') throw unreachable();
    return ref.getSnapshot() as InstanceSnapshot;
  }

  /**
   * A pairing code: the instance actor takes the request (or refuses it), then the answer is the first code in
   * its snapshot newer than the request (the one that was there before does not count), within `deadlineMs`;
   * the failure of the driver's request this ask made (the session's PAIRING_CODE_FAILED naming its askId)
   * answers as that driver error would (e.g. 500 WA_CALL_FAILED), at once: no code will come of it. Another
   * request's failure does not answer this one (its own call may still bring a code).
   */
  private async pairingCode(ask: InstanceAsk & { type: 'pairingCode' }, deadlineMs: number): Promise<PairingCode> {
    const ref = this.actor();
    const before = this.snapshot().context.pairingCode;
    /** this request's ask, once sent */
    let askId: string | null = null;
    const clock = this.replies.clock;
    const started = clock.now();
    let stop = () => undefined as void;
    const arrived = new Promise<PairingCode>((resolve, reject) => {
      const sub = ref?.subscribe({
        next: (snap: InstanceSnapshot) => {
          const { pairingCode: code, pairingCodeFailed: failed } = snap.context;
          if (code && code !== before) resolve({ code: code.code, at: code.at });
          else if (failed && askId !== null && failed.askId === askId) reject(driverErrorToDomain(new DriverError(failed.message, failed.code ?? 'CALL_FAILED', true), 'pairing code', {}));
          else if (snap.status !== 'active') reject(unreachable());
        },
        error: () => reject(unreachable()),
      });
      stop = () => sub?.unsubscribe();
    });
    arrived.catch(() => undefined);
    try {
      await this.send(ask, deadlineMs, (id) => (askId = id));
      const left = Math.max(0, deadlineMs - (clock.now() - started));
      return await raceClock(clock, left, arrived, () => {
        throw new DomainError('INSTANCE_TIMEOUT', 'no pairing code arrived in time; it may still come as the webhook event code');
      });
    } finally {
      stop();
    }
  }

  /**
   * The ask goes where the instance actor would route it (machines/instance.asks.ts `routeAsk`, given its
   * current snapshot): straight to the child that serves it (the planner for the queue, the session for the
   * network), without a transition of the instance actor per ask. Asks it answers or turns into its own events
   * go to the instance actor as before.
   */
  private async send<A extends InstanceAsk>(ask: A, deadlineMs: number, sentAs?: (askId: string) => void): Promise<ReplyOf<A>> {
    const reply = await this.replies.request(
      (address) => {
        sentAs?.(address.askId);
        const target = this.routed(ask);
        if (!target) return false;
        (target.child ?? target.ref).send({ type: 'ASK', ...address, ask });
        return true;
      },
      deadlineMs,
      instanceTimeout,
    );
    return this.replied<A>(reply);
  }
}

/** Send `reply` to where an ask said (a system id); nothing when the caller is gone. */
export function answer(system: { get(id: string): AnyActorRef | undefined }, to: ReplyAddress, reply: AskReply): void {
  const event: ReplyEvent = { type: 'REPLY', askId: to.askId, reply };
  const box = system.get(to.replyTo);
  if (!box) return;
  const take = boxes.get(box);
  if (take) take(event);
  else box.send(event);
}

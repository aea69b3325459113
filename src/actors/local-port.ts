/**
 * Asking actors of this process and awaiting their replies. Every reply is a `REPLY` event sent to the reply
 * box (an actor with system id `replies`, a child of the supervisor), which hands it to the waiting caller by
 * its `askId`. A caller that stops waiting (its deadline passed) forgets the ask; a late reply is dropped.
 *
 * `LocalInstancePort` is the port (src/actors/port.ts) of an instance whose actor runs in this process.
 */
import { fromCallback, type AnyActorRef, type CallbackActorLogic } from 'xstate';
import { raceClock, type Clock } from '../clock.js';
import { DomainError, instanceTimeout } from '../errors.js';
import { viewOf, type InstanceSnapshot } from '../../machines/instance.snapshot.js';
import { linkViewOf } from '../../machines/instance.asks.js';
import { replyErrorToThrow, type AskReply, type InstanceAsk, type InstancePort, type PairingCode, type ReplyEvent, type ReplyOf } from './port.js';

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
  /** asks waiting for a reply (a gauge for /debug/actors) */
  readonly waiting: number;
  /** the clock deadlines are measured on */
  readonly clock: Clock;
}

export function createReplies(clock: Clock): Replies {
  const pending = new Map<string, (r: AskReply) => void>();
  let seq = 0;
  const logic = fromCallback<ReplyEvent>(({ receive }) => {
    receive((event) => {
      const resolve = pending.get(event.askId);
      pending.delete(event.askId);
      resolve?.(event.reply);
    });
  });
  return {
    logic,
    clock,
    get waiting() {
      return pending.size;
    },
    request(deliver, deadlineMs, late) {
      const askId = `a${++seq}`;
      const answered = new Promise<AskReply>((resolve) => pending.set(askId, resolve));
      if (!deliver({ askId, replyTo: REPLIES_ID })) {
        pending.delete(askId);
        return Promise.reject(unreachable());
      }
      return raceClock(clock, deadlineMs, answered, () => {
        pending.delete(askId);
        throw late();
      });
    },
  };
}

export class LocalInstancePort implements InstancePort {
  constructor(
    readonly instanceId: string,
    /** the instance actor, while it runs */
    private readonly actor: () => AnyActorRef | undefined,
    private readonly replies: Replies,
  ) {}

  async ask<A extends InstanceAsk>(ask: A, deadlineMs: number): Promise<ReplyOf<A>> {
    // A view is what the instance actor's snapshot says; in this process it is read from the snapshot
    // directly (the answer the actor would give, without a transition and a reply per read).
    if (ask.type === 'view') return viewOf(this.snapshot()) as ReplyOf<A>;
    if (ask.type === 'qr') return linkViewOf(this.snapshot()) as ReplyOf<A>;
    if (ask.type === 'pairingCode') return (await this.pairingCode(ask, deadlineMs)) as ReplyOf<A>;
    return this.send(ask, deadlineMs);
  }

  private snapshot(): InstanceSnapshot {
    const ref = this.actor();
    if (!ref || ref.getSnapshot().status !== 'active') throw unreachable();
    return ref.getSnapshot() as InstanceSnapshot;
  }

  /**
   * A pairing code: the instance actor takes the request (or refuses it), then the answer is the first code in
   * its snapshot newer than the request (the one that was there before does not count), within `deadlineMs`.
   */
  private async pairingCode(ask: InstanceAsk & { type: 'pairingCode' }, deadlineMs: number): Promise<PairingCode> {
    const ref = this.actor();
    const before = this.snapshot().context.pairingCode;
    const clock = this.replies.clock;
    const started = clock.now();
    let stop = () => undefined as void;
    const arrived = new Promise<PairingCode>((resolve, reject) => {
      const sub = ref?.subscribe({
        next: (snap: InstanceSnapshot) => {
          const code = snap.context.pairingCode;
          if (code && code !== before) resolve({ code: code.code, at: code.at });
          else if (snap.status !== 'active') reject(unreachable());
        },
        error: () => reject(unreachable()),
      });
      stop = () => sub?.unsubscribe();
    });
    arrived.catch(() => undefined);
    try {
      await this.send(ask, deadlineMs);
      const left = Math.max(0, deadlineMs - (clock.now() - started));
      return await raceClock(clock, left, arrived, () => {
        throw new DomainError('INSTANCE_TIMEOUT', 'no pairing code arrived in time; it may still come as the webhook event code');
      });
    } finally {
      stop();
    }
  }

  private async send<A extends InstanceAsk>(ask: A, deadlineMs: number): Promise<ReplyOf<A>> {
    const reply = await this.replies.request(
      (address) => {
        const ref = this.actor();
        if (!ref || ref.getSnapshot().status !== 'active') return false;
        ref.send({ type: 'ASK', ...address, ask });
        return true;
      },
      deadlineMs,
      instanceTimeout,
    );
    if (!reply.ok) throw replyErrorToThrow(reply.error);
    return reply.value as ReplyOf<A>;
  }
}

/** Send `reply` to where an ask said (a system id); nothing when the caller is gone. */
export function answer(system: { get(id: string): AnyActorRef | undefined }, to: ReplyAddress, reply: AskReply): void {
  const event: ReplyEvent = { type: 'REPLY', askId: to.askId, reply };
  system.get(to.replyTo)?.send(event);
}

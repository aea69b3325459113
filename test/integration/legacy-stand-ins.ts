/**
 * Stand-ins for the v1 route tests, only for what lies outside the code under test: the network (a driver
 * keeping the Driver contract's outcomes), the instance's port (connection and ordered-restart switches), and a simulated clock that knows its next due timer.
 */
import { DriverError, type Driver, type SendContent, type SendOptions, type SendResult } from '../../src/drivers/contract.js';
import { failureReply, okReply, replyErrorToThrow, type InstanceAsk, type InstancePort, type InstanceView, type ReplyOf } from '../../src/actors/port.js';
import type { Instance } from '../../src/store/instances.js';
import type { QueueMode } from '../../src/queue/settings.js';
import { instanceTimeout } from '../../src/errors.js';
import { raceClock, simulatedClock, type Clock, type TimerHandle } from '../../src/clock.js';
import { MiniNetwork } from './routes-harness.js';

export const OWN_NUMBER = '4915199999999';

/**
 * The simulated clock, knowing when its next timer is due, so that tests advance from timer to timer as a
 * real event loop would: a dispatch happens at its slot to the millisecond, not at the end of a test step
 * (which would make the planner's re-check see a late dispatch and move every later slot).
 */
export class StepClock implements Clock {
  private readonly sim = simulatedClock();
  private readonly due = new Map<TimerHandle, number>();

  now(): number {
    return this.sim.now();
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const handle: TimerHandle = this.sim.setTimeout(() => {
      this.due.delete(handle);
      fn();
    }, ms);
    this.due.set(handle, this.sim.now() + Math.max(0, ms));
    return handle;
  }

  clearTimeout(handle: TimerHandle): void {
    this.due.delete(handle);
    this.sim.clearTimeout(handle);
  }

  increment(ms: number): void {
    this.sim.increment(ms);
  }

  /** When the earliest pending timer is due (null: none). */
  nextDue(): number | null {
    let t: number | null = null;
    for (const at of this.due.values()) if (t === null || at < t) t = at;
    return t;
  }
}

export interface Sent {
  chatId: string;
  content: SendContent;
  at: number;
  id: string;
}

/** The route-test network, now also sending. */
export class SendNetwork extends MiniNetwork {
  readonly sent: Sent[] = [];
  readonly unregistered = new Set<string>();
  /** the next sends fail after the call started, outcome unverifiable */
  dropNext = 0;
  private n = 0;
  private held: Promise<void> | null = null;

  constructor(private readonly now: Clock) {
    super(now);
  }

  // the base network refuses every send; this one takes the Driver contract's arguments
  override async sendMessage(...args: [] | [chatId: string, content: SendContent, options: SendOptions]): Promise<SendResult> {
    if (args.length === 0) throw new DriverError('sendMessage needs a chat and content', 'INVALID_INPUT', true);
    const [chatId, content] = args;
    if (this.held) {
      const held = this.held;
      this.held = null;
      await held;
    }
    if (this.unregistered.has(chatId)) throw new DriverError('recipient not registered on the network', 'NOT_REGISTERED', true);
    if (this.dropNext > 0) {
      this.dropNext -= 1;
      throw new DriverError('connection lost during the send', 'CALL_FAILED', false);
    }
    this.n += 1;
    const id = `true_${chatId}_${this.n.toString(16).toUpperCase().padStart(8, '0')}`;
    this.sent.push({ chatId, content, at: this.now.now(), id });
    return { id };
  }

  /** The next send hangs (the call has started) until the returned function is called. */
  holdNext(): () => void {
    let release = () => undefined as void;
    this.held = new Promise<void>((resolve) => {
      release = resolve;
    });
    return release;
  }

  bodies(): string[] {
    return this.sent.map((s) => (s.content.kind === 'text' ? s.content.body : s.content.kind === 'media' ? `[media] ${s.content.caption ?? ''}` : s.content.kind));
  }
}

/**
 * The instance's port (src/actors/port.ts) as the v1 routes use it: `view` from the connection and
 * ordered-restart switches, every other ask served by `serve` (the harness's real QueueWorker), each answer
 * passed through the same reply conversion as the real instance actor's (failureReply → replyErrorToThrow)
 * and awaited under the ask's deadline.
 */
export class V1Port implements InstancePort {
  connected = true;
  paused = false;
  readonly asks: InstanceAsk[] = [];

  constructor(
    readonly record: Instance,
    private readonly clock: Clock,
    private readonly mode: () => QueueMode,
    private readonly serve: (ask: InstanceAsk) => Promise<unknown>,
  ) {}

  get instanceId(): string {
    return this.record.id;
  }

  view(): InstanceView {
    return {
      status: this.connected ? 'connected' : this.paused ? 'initializing' : 'disconnected',
      connected: this.connected,
      phoneNumber: OWN_NUMBER,
      browser: { alive: true, failStreak: 0, lastOkAt: this.clock.now() },
      qrText: null,
      detail: this.connected ? 'connected' : this.paused ? 'restarting' : 'disconnected',
      paused: this.paused,
      quarantined: false,
      lastError: null,
      queueMode: this.mode(),
    };
  }

  async ask<A extends InstanceAsk>(ask: A, deadlineMs: number): Promise<ReplyOf<A>> {
    this.asks.push(ask);
    const work = ask.type === 'view' ? Promise.resolve(this.view()) : this.serve(ask);
    const reply = await raceClock(this.clock, deadlineMs, work.then(okReply, (err: unknown) => failureReply(err, () => undefined)), () => {
      throw instanceTimeout();
    });
    if (!reply.ok) throw replyErrorToThrow(reply.error);
    return reply.value as ReplyOf<A>;
  }
}

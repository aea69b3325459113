/**
 * Stand-ins for the v1 route tests, only for what lies outside the code under test: the network (a driver
 * keeping the Driver contract's outcomes), the instance actor's handle (connection and ordered-restart
 * switches), and a simulated clock that knows its next due timer.
 */
import { DriverError, type Driver, type SendContent, type SendOptions, type SendResult } from '../../src/drivers/contract.js';
import type { InstanceHandle, InstanceView } from '../../src/actors/handle.js';
import type { Instance } from '../../src/store/instances.js';
import { instanceOffline } from '../../src/errors.js';
import { driverErrorToDomain } from '../../src/drivers/domain-errors.js';
import { simulatedClock, type Clock, type TimerHandle } from '../../src/clock.js';
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

/** The InstanceHandle contract over one driver, with the connection and the ordered-restart pause as switches. */
export class V1Handle implements InstanceHandle {
  connected = true;
  paused = false;

  constructor(readonly record: Instance, readonly driver: Driver, private readonly clock: Clock) {}

  get id(): string {
    return this.record.id;
  }

  get instance(): Instance {
    return this.record;
  }

  view(): InstanceView {
    return {
      status: this.connected ? 'connected' : this.paused ? 'initializing' : 'disconnected',
      connected: this.connected,
      phoneNumber: OWN_NUMBER,
      browser: { alive: true, failStreak: 0, lastOkAt: this.clock.now() },
      qr: null,
      detail: this.connected ? 'connected' : this.paused ? 'restarting' : 'disconnected',
      paused: this.paused,
      quarantined: false,
      lastError: null,
    };
  }

  async call<T>(op: string, fn: (driver: Driver) => Promise<T>): Promise<T> {
    if (!this.connected) throw instanceOffline({ status: this.view().status });
    try {
      return await fn(this.driver);
    } catch (err) {
      // the runtime's own mapping (src/actors/runtime.ts call())
      if (err instanceof DriverError) throw driverErrorToDomain(err, op, { status: this.view().status });
      throw err;
    }
  }
}

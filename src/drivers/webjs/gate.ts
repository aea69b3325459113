/**
 * The one way an operation reaches the library: the driver's `call`, which checks that the session can take
 * the call, applies the per-call timeout and turns every failure into a DriverError (outcome.ts). Nothing is
 * ever retried.
 */
import type { Clock } from '../../clock.js';
import { DriverError } from '../contract.js';
import type { LibClient } from './library.js';
import { CallTimeout, preSendFailure, startedCallFailure, withTimeout } from './outcome.js';

export interface CallOptions {
  /**
   * The call is a lookup before a send: whatever happens, nothing was sent (provablyNotSent = true).
   * Default false: a failure after the call started leaves the outcome unknown.
   */
  preSend?: boolean;
  /** `ready` (default): the account is linked and loaded. `page`: WhatsApp Web is open (linking calls). */
  need?: 'ready' | 'page';
}

export interface Gate {
  call<T>(what: string, fn: (client: LibClient) => Promise<T>, options?: CallOptions): Promise<T>;
}

/** What the gate reads from its session at each call. */
export interface GateState {
  /** The session died or was destroyed. */
  closed: boolean;
  client: LibClient | null;
  /** The library said `ready`: linked and loaded. */
  ready: boolean;
}

export interface CallGateOptions {
  state(): GateState;
  callTimeoutMs: number;
  clock: Clock;
  /** A call returned: the browser works. */
  onOk(): void;
  /** A call timed out (a hung page shows as calls that never return). */
  onTimeout(): void;
}

/** A session's gate: refuses what the session cannot take (provably not sent), times and translates the rest. */
export class CallGate implements Gate {
  constructor(private readonly o: CallGateOptions) {}

  async call<T>(what: string, fn: (client: LibClient) => Promise<T>, options: CallOptions = {}): Promise<T> {
    const client = this.callable(options.need ?? 'ready');
    try {
      const value = await withTimeout(
        Promise.resolve().then(() => fn(client)),
        this.o.callTimeoutMs,
        this.o.clock,
        what,
      );
      this.o.onOk();
      return value;
    } catch (err) {
      if (err instanceof CallTimeout) this.o.onTimeout();
      throw options.preSend ? preSendFailure(what, err) : startedCallFailure(what, err);
    }
  }

  private callable(need: 'ready' | 'page'): LibClient {
    const { closed, client, ready } = this.o.state();
    if (closed) throw new DriverError('the session is closed', 'SESSION_CLOSED', true);
    if (client === null) throw new DriverError('the session is not started', 'NOT_CONNECTED', true);
    if (need === 'ready' && !ready) throw new DriverError('the session is not connected', 'NOT_CONNECTED', true);
    if (need === 'page' && client.pupPage == null) throw new DriverError('WhatsApp Web is not open yet', 'NOT_CONNECTED', true);
    return client;
  }
}

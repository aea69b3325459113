/**
 * The one way an operation reaches the library: the driver's `call`, which checks that the session can take
 * the call, applies the per-call timeout and turns every failure into a DriverError (outcome.ts).
 */
import type { LibClient } from './library.js';

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

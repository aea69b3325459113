/**
 * What a fault does to one call on a sandbox session (SandboxSession.withFault runs it): the network takes the
 * message anyway and the ledger is told, the call is refused, the call hangs until the session stops, or the
 * session goes down with the call.
 */
import { DriverError } from '../drivers/contract.js';
import type { Fault, FaultKind } from './types.js';

/** The session's side of a fault: the failures a fault can cause, and a call that never settles on its own. */
export interface FaultedSession {
  crash(reason: string): void;
  browserDeath(reason: string): void;
  disconnect(reason: string): void;
  /** A call left pending until the session's run ends, then rejected with SESSION_CLOSED. */
  hang(): Promise<never>;
}

/**
 * Run `deliver` under `fault`. `deliver` gets the fault's kind when the network takes the message anyway
 * (no_id, hang, call_error with deliver), so the ledger can say so and a no_id send can drop its id.
 */
export async function runUnderFault<T>(session: FaultedSession, fault: Fault, deliver: (tag: FaultKind | null) => T): Promise<T> {
  switch (fault.kind) {
    case 'no_id':
      return deliver('no_id');
    case 'not_registered':
      throw new DriverError(fault.reason ?? 'the recipient is not registered on the network', 'NOT_REGISTERED', true);
    case 'invalid_input':
      throw new DriverError(fault.reason ?? 'the network refused the input', 'INVALID_INPUT', true);
    case 'hang':
      if (fault.deliver !== false) deliver('hang');
      return session.hang();
    case 'call_error':
      if (fault.deliver === true) deliver('call_error');
      throw new DriverError(fault.reason ?? 'Evaluation failed: simulated network error', 'CALL_FAILED', false);
    case 'session_crash':
      session.crash(fault.reason ?? 'session crashed');
      throw new DriverError('the session crashed during the call', 'SESSION_CLOSED', false);
    case 'browser_death':
      session.browserDeath(fault.reason ?? 'browser disconnected');
      throw new DriverError('the browser died during the call', 'SESSION_CLOSED', false);
    case 'disconnect':
      session.disconnect(fault.reason ?? 'NAVIGATION');
      throw new DriverError('the session disconnected during the call', 'NOT_CONNECTED', false);
  }
}

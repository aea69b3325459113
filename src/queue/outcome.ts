/**
 * What a dispatch outcome does to its job: the job-machine event and the columns written with it.
 *
 * One outcome is not an outcome of the network at all: the call never reached it, because the session went
 * away between the claim and the call (no driver, or the driver refused before sending: NOT_CONNECTED /
 * SESSION_CLOSED with `provablyNotSent`), or because a media job's call could not be recorded as starting.
 * Such a job was provably not sent and is not `failed` either: it goes back to `scheduled` (event RETURNED),
 * stops counting against the windows and waits for the reconnect. So does a job whose media was ready only once
 * quiet hours had begun or its validity had ended (NOT_SENDABLE_NOW): the plan places it again.
 */
import type { JobEvent } from '../../machines/job.machine.js';
import { NO_SESSION_DRIVER_CODES } from '../drivers/contract.js';
import type { TransitionFields } from './jobs.js';
import type { DispatchOutcome } from './types.js';

/**
 * A media job whose call could not be recorded as starting (src/queue/sql/startCall.ts: the store away, or the
 * row moved by a node that took the instance over) was not called: it goes back like a call no session took.
 */
export const CALL_NOT_STARTED = 'CALL_NOT_STARTED';

/**
 * A stored job whose media took so long to prepare that its slot's re-check no longer holds once it is ready (quiet
 * hours began, or its validity ended, meanwhile: src/queue/dispatch.ts `notSendableAt`) was not called: it goes back,
 * and the plan gives it a slot after the quiet hours, or its expiry ends it.
 */
export const NOT_SENDABLE_NOW = 'NOT_SENDABLE_NOW';

/** Result codes of a provably unsent call that goes back to waiting (src/queue/dispatch.ts, the drivers). */
const NO_SESSION_CODES: ReadonlySet<string> = new Set<string>(['INSTANCE_OFFLINE', CALL_NOT_STARTED, NOT_SENDABLE_NOW, ...NO_SESSION_DRIVER_CODES]);

/** The call never reached the network: no session took it, it was not started, or it may not be made now. */
export function neverReachedNetwork(outcome: DispatchOutcome): boolean {
  return outcome.kind === 'failed' && NO_SESSION_CODES.has(outcome.resultCode);
}

/** A job put back (never reached the network): waiting again, its dispatch no longer its own. */
export const RETURNED_FIELDS: TransitionFields = Object.freeze({ dispatchedAt: null });

export interface OutcomeStep {
  event: JobEvent;
  fields: TransitionFields;
  /** provably not sent: its dispatch stops counting against the windows */
  forgetDispatch: boolean;
}

/** The transition an outcome, known at `at`, asks for. */
export function outcomeStep(outcome: DispatchOutcome, at: number): OutcomeStep {
  if (neverReachedNetwork(outcome)) return { event: { type: 'RETURNED' }, fields: RETURNED_FIELDS, forgetDispatch: true };
  switch (outcome.kind) {
    case 'confirmed':
      return { event: { type: 'RESULT_CONFIRMED' }, fields: { terminalAt: at, messageId: outcome.messageId, resultCode: 'SENT' }, forgetDispatch: false };
    case 'assumed':
      return { event: { type: 'RESULT_ASSUMED' }, fields: { terminalAt: at, messageId: outcome.messageId, resultCode: 'ASSUMED_SENT' }, forgetDispatch: false };
    case 'failed':
      return { event: { type: 'RESULT_FAILED' }, fields: { terminalAt: at, resultCode: outcome.resultCode, errorMessage: outcome.errorMessage }, forgetDispatch: true };
    case 'unknown':
      return { event: { type: 'RESULT_UNKNOWN' }, fields: { terminalAt: at, unknownReason: outcome.unknownReason, resultCode: 'UNKNOWN' }, forgetDispatch: false };
  }
}

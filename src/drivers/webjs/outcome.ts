/**
 * How a library call ends, in the contract's terms. The rule (SPEC.md "Job transitions"):
 *   - the call resolved                       → its value
 *   - it failed before anything reached the page, or the network provably refused → provablyNotSent = true
 *   - it timed out or failed after it started → provablyNotSent = false (the job becomes `unknown`)
 * The library cannot be cancelled: a timed-out evaluation keeps running in the page, which is exactly why a
 * timeout can never be reported as "not sent".
 */
import { raceClock, type Clock } from '../../clock.js';
import { DriverError } from '../contract.js';

export class CallTimeout extends Error {
  constructor(readonly what: string, readonly ms: number) {
    super(`${what} timed out after ${ms} ms`);
    this.name = 'CallTimeout';
  }
}

/** Settle with `promise`, or reject with CallTimeout after `ms` on `clock`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, clock: Clock, what: string): Promise<T> {
  return raceClock(clock, ms, promise, () => {
    throw new CallTimeout(what, ms);
  });
}

/** Resolve once `promise` settles or `ms` passed, whichever comes first; never rejects. */
export function settleWithin(promise: Promise<unknown>, ms: number, clock: Clock): Promise<void> {
  return withTimeout(promise, ms, clock, 'settle').then(
    () => undefined,
    () => undefined,
  );
}

const MAX_REASON = 300;

/**
 * A short, single-line text for a failure. The library rejects with Errors, with bare strings ('auth timeout')
 * and with puppeteer's "Evaluation failed: …" wrappers; none of them carries secrets, but a page error can be
 * long, so it is cut.
 */
export function describeError(err: unknown): string {
  let text: string;
  if (err instanceof Error) text = err.message || err.name;
  else if (typeof err === 'string') text = err;
  else text = 'unknown error';
  text = text.replace(/\s+/g, ' ').trim();
  return text.length > MAX_REASON ? `${text.slice(0, MAX_REASON)}…` : text;
}

/** The failure of a call that had started: the outcome is unknown, never "not sent". */
export function startedCallFailure(what: string, err: unknown): DriverError {
  if (err instanceof DriverError) return err;
  if (err instanceof CallTimeout) return new DriverError(err.message, 'TIMEOUT', false);
  return new DriverError(`${what} failed: ${describeError(err)}`, 'CALL_FAILED', false);
}

/** The failure of a step before the send itself (a lookup): nothing was sent. */
export function preSendFailure(what: string, err: unknown): DriverError {
  if (err instanceof DriverError) return new DriverError(err.message, err.code, true);
  if (err instanceof CallTimeout) return new DriverError(err.message, 'TIMEOUT', true);
  return new DriverError(`${what} failed: ${describeError(err)}`, 'CALL_FAILED', true);
}

export function notFound(what: string): DriverError {
  return new DriverError(`${what} not found`, 'NOT_FOUND', true);
}

export function invalidInput(message: string): DriverError {
  return new DriverError(message, 'INVALID_INPUT', true);
}

/**
 * The one translation of errors to answers. `translate()` turns whatever a route threw (DomainError,
 * superstruct's StructError, a pg connection error, CommitOutcomeUnknown, a DriverError that escaped the
 * instance's call(), an http-errors client error of a library, anything else: 500 INTERNAL_ERROR) into a
 * DomainError; the error boundary (envelope.ts) writes it as the v2 envelope, and writes a V1Error's body as is. The v1 routes' frozen shapes
 * are derived from the same translation (`toV1SendError`, `toV1ReadError`). Route test harnesses use these
 * functions, never a copy.
 */
import { StructError } from 'superstruct';
import { DomainError, internalError, type ErrorCode } from '../errors.js';
import { COMMIT_UNKNOWN, NOT_CONNECTED, STORE_LOST, V1Error } from './errors.js';
import { structField, structMessage } from './validate.js';
import { DriverError } from '../drivers/contract.js';
import { driverErrorToDomain } from '../drivers/domain-errors.js';
import { isConnectionError, isPoolBusy, isStatementTimeout, StoreFault, storeFaultOf, StoreTimedOut } from '../store/health.js';
import { CommitOutcomeUnknown } from '../store/pool.js';
import type { Logger } from '../log.js';

export interface TranslateOptions {
  /** the store connection failed under this request: probe the store now */
  onStoreError?: (() => void) | undefined;
  /** whether the store's health probe finds PostgreSQL unreachable now (src/store/health.ts StoreHealth.degraded) */
  storeDegraded?: (() => boolean) | undefined;
}

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  expose?: boolean;
  message?: string;
}

/** Codes for the 4xx a library may throw with `ctx.throw`/http-errors (our own code throws DomainError). */
const CLIENT_CODES: Record<number, ErrorCode> = {
  400: 'VALIDATION_FAILED',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
};

/** Anything thrown → the DomainError it answers as (a V1Error is the v1 routes' own answer: see below). */
export function translate(raw: unknown, opts: TranslateOptions = {}): DomainError {
  if (raw instanceof DomainError) return raw;
  // A driver's error is the network's, never the store's, whatever its text says: webjs passes Chromium's
  // "read ECONNRESET" on, which the store's test below (by code and text) would take for PostgreSQL gone.
  if (raw instanceof DriverError) return driverErrorToDomain(raw, 'network call', {});
  if (isPoolBusy(raw) && opts.storeDegraded?.() === false) {
    // every connection of the pool in use past its deadline while the probe, on its own connection, finds
    // PostgreSQL answering: busy (a lock held elsewhere, an overloaded server), not unreachable. Found from the
    // outside: under a lock on a few tables the operator routes answered "unreachable, memory-degraded" while the
    // node's queues stayed in pg.
    opts.onStoreError?.();
    return new DomainError('QUEUE_STORE_UNAVAILABLE', 'the persistent queue did not answer in time (every connection to PostgreSQL was busy); nothing was done: retry shortly', {
      queueMode: 'pg',
      reason: 'store_timeout',
    });
  }
  if (isConnectionError(raw)) {
    // PostgreSQL went away under this request: nothing was accepted; the probe switches the mode.
    opts.onStoreError?.();
    return new DomainError('QUEUE_STORE_UNAVAILABLE', 'the persistent queue is unreachable; nothing was accepted', { queueMode: 'memory-degraded' });
  }
  if (isStatementTimeout(raw)) {
    // PostgreSQL answers, but not in time (a lock held elsewhere, an overloaded server): it cancelled the
    // statement, and a cancelled statement (or the COMMIT it ran in) wrote nothing. The probe checks the rest.
    // An actor's reply (StoreTimedOut) says why: this, or a pool whose every connection stayed busy while
    // PostgreSQL answered (src/actors/port.ts failureReply).
    opts.onStoreError?.();
    const why = raw instanceof StoreTimedOut ? raw.message : 'PostgreSQL cancelled the statement';
    return new DomainError('QUEUE_STORE_UNAVAILABLE', `the persistent queue did not answer in time (${why}); nothing was done: retry shortly`, {
      queueMode: 'pg',
      reason: 'store_timeout',
    });
  }
  const fault = storeFaultOf(raw);
  if (fault !== null) {
    // PostgreSQL answered and failed the statement for a reason of its own (a full disk, its files gone): the
    // statement and its transaction wrote nothing; the operator has to act (the boundary logs the store's own error)
    opts.onStoreError?.();
    return new DomainError('QUEUE_STORE_UNAVAILABLE', `the persistent queue cannot take requests now (${fault}); nothing was done: retry later, the operator has to fix the database server`, {
      queueMode: 'pg',
      reason: 'store_fault',
    });
  }
  if (raw instanceof CommitOutcomeUnknown) {
    // the connection broke during COMMIT: the request may have been accepted (SPEC.md: retry only with a key)
    opts.onStoreError?.();
    if (raw.toFindOut) return new DomainError('INSTANCE_TIMEOUT', raw.toFindOut.message, raw.toFindOut.data);
    return new DomainError('INSTANCE_TIMEOUT', 'the store connection broke while committing; the request may have been accepted: retry only with the same idempotency key');
  }
  if (raw instanceof StructError) return new DomainError('VALIDATION_FAILED', structMessage(raw), { field: structField(raw) });
  const e = (raw ?? {}) as HttpLikeError;
  const status = e.status ?? e.statusCode;
  const code = status !== undefined && e.expose === true ? CLIENT_CODES[status] : undefined;
  // a library's client error keeps its status; CLIENT_CODES agrees with ERROR_STATUS for each of them
  if (code) return new DomainError(code, e.message ?? code);
  return internalError();
}

export interface V1Context {
  log?: Logger | undefined;
  method: string;
  path: string;
  onStoreError?: (() => void) | undefined;
}

/**
 * A v1 send route's answer to a failure (SPEC.md "v1 send outcomes"): `{success:false, error}` with 503 when
 * nothing was sent and the caller may resend, 500 otherwise (do not resend).
 */
export function toV1SendError(raw: unknown, at: V1Context): V1Error {
  if (raw instanceof V1Error) return raw;
  // the COMMIT's outcome is unknown: the message may be queued (the v2 translation says INSTANCE_TIMEOUT)
  if (raw instanceof CommitOutcomeUnknown) {
    at.onStoreError?.();
    return new V1Error(500, COMMIT_UNKNOWN);
  }
  const err = translate(raw, { onStoreError: at.onStoreError });
  switch (err.code) {
    case 'INSTANCE_OFFLINE':
    case 'INSTANCE_UNREACHABLE':
      return new V1Error(503, NOT_CONNECTED);
    case 'INSTANCE_TIMEOUT':
      return new V1Error(500, 'no answer in time; the message may have been accepted: do not resend');
    case 'QUEUE_STORE_UNAVAILABLE':
      // PostgreSQL's own error, seen here first (an actor's was logged where it happened), as the error boundary
      // logs it for v2 (envelope.ts): the operator must hear of a full disk under v1 sends too
      if (err.data.reason === 'store_fault' && !(raw instanceof StoreFault)) {
        at.log?.error({ err: raw, method: at.method, path: at.path }, 'PostgreSQL failed a statement for a reason of its own');
      }
      // before the COMMIT nothing was accepted: the caller may resend
      return new V1Error(503, STORE_LOST);
    case 'INTERNAL_ERROR':
      if (!(raw instanceof DomainError)) at.log?.error({ err: raw, method: at.method, path: at.path }, 'unhandled error in a v1 route');
      return new V1Error(500, err.message);
    default:
      return new V1Error(500, err.message);
  }
}

/**
 * An instance deleted while a v1 request its API key let in was on its way (its port found no row): left to the
 * error boundary, which answers 401 INVALID_API_KEY in the shared envelope (envelope.ts keyOutlived), as v2 and
 * every request after the delete are (docs/api-v1.md: 401 is not produced by the v1 routes). Turned into a v1
 * body it was a 500 "the instance was deleted; nothing was accepted" (a v1 500 says "do not resend"), or a 404.
 */
export function keyOutlivedV1(raw: unknown, authenticated: unknown): raw is DomainError {
  return raw instanceof DomainError && raw.code === 'INSTANCE_NOT_FOUND' && authenticated === 'instance';
}

/** A v1 read (GET /api/check-number/:phone): the v2 status and message, in v1's `{success:false, error}`. */
export function toV1ReadError(raw: unknown): unknown {
  return raw instanceof DomainError ? new V1Error(raw.status, raw.message) : raw;
}

/** The v1 guard: an unverifiable key (store unreachable) is v1's 503; every other answer of the guard is v2's. */
export function toV1GuardError(raw: unknown): unknown {
  return raw instanceof DomainError && raw.code === 'QUEUE_STORE_UNAVAILABLE' ? new V1Error(503, raw.message) : raw;
}

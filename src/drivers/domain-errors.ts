/**
 * How a driver's failure reads in domain terms: the one mapping of DriverError codes to the API's codes, used by
 * whatever runs a driver call for a route (the session actor's network asks, src/actors/session-calls.ts).
 */
import { DomainError, instanceOffline, instanceTimeout, waCallFailed } from '../errors.js';
import type { DriverError } from './contract.js';

/**
 * NOT_CONNECTED / SESSION_CLOSED → 503 INSTANCE_OFFLINE (`data.instance` = `instance` and the driver's detail),
 * NOT_A_GROUP → 400 NOT_A_GROUP, INVALID_INPUT → 400 VALIDATION_FAILED (field `body`), TIMEOUT → 504
 * INSTANCE_TIMEOUT, anything else → 500 WA_CALL_FAILED naming the operation.
 */
export function driverErrorToDomain(err: DriverError, op: string, instance: Record<string, unknown>): DomainError {
  switch (err.code) {
    case 'NOT_CONNECTED':
    case 'SESSION_CLOSED':
      return instanceOffline({ ...instance, detail: err.message });
    case 'NOT_A_GROUP':
      return new DomainError('NOT_A_GROUP', err.message);
    case 'INVALID_INPUT':
      return new DomainError('VALIDATION_FAILED', err.message, { field: 'body' });
    case 'TIMEOUT':
      return instanceTimeout();
    default:
      return waCallFailed(`${op}: ${err.message}`);
  }
}

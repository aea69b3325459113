/**
 * What HTTP routes get for an instance: a handle onto its actors. Routes never hold a driver; they ask the
 * instance actor to run an operation (`call`), which refuses when the session is not connected and answers
 * within the route's gateway deadline.
 */
import type { Driver, BrowserHealth } from '../drivers/contract.js';
import type { Instance } from '../store/instances.js';

export type InstanceStatusValue = 'initializing' | 'waiting_qr' | 'authenticated' | 'connected' | 'disconnected' | 'error';

export interface InstanceView {
  status: InstanceStatusValue;
  connected: boolean;
  phoneNumber: string | null;
  browser: BrowserHealth;
  /** latest QR as a PNG data URL while waiting for a link, else null */
  qr: string | null;
  /** internal state for operators: e.g. 'backoff', 'quarantined', 'restarting' */
  detail: string;
  /** ordered restart in progress: /api/v2/* answers 503 QUEUE_PAUSED */
  paused: boolean;
  quarantined: boolean;
  lastError: string | null;
}

export interface InstanceHandle {
  readonly id: string;
  /** the latest record (settings change through the operator API) */
  readonly instance: Instance;
  view(): InstanceView;
  /**
   * Run `fn` against the driver through the instance actor. Throws DomainError 503 INSTANCE_OFFLINE (with
   * data.instance) when not connected, 504 INSTANCE_TIMEOUT when `timeoutMs` passes, a DriverError as
   * driverErrorToDomain (src/drivers/domain-errors.ts) maps it, other DomainErrors as thrown by fn.
   */
  call<T>(op: string, fn: (driver: Driver) => Promise<T>, timeoutMs: number): Promise<T>;
}

/** Gateway deadlines of SPEC.md "Limits" (ms). */
export const DEADLINES = { send: 60_000, read: 30_000, interaction: 30_000, queueStatus: 10_000, upload: 120_000 } as const;

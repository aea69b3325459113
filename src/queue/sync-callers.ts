/**
 * Jobs a synchronous v1 caller is waiting for. Such a job carries the boot id of the process whose route
 * waits (`caller_boot`). If that process dies the caller gets no answer and, as SPEC.md tells it, resends:
 * so at the next start of the instance's queue, a waiting job marked by another process is expired (never
 * sent; src/queue/sql/orphanedSyncJobs.ts). Once the caller has the job's id (504 QUEUE_WAIT_TIMEOUT), the
 * mark is cleared (src/queue/sql/releaseSyncCaller.ts) and the job goes out at its slot like any other.
 */
import { randomUUID } from 'node:crypto';

/** This process's boot id: differs on every start, so a mark from an earlier process is always recognised. */
export const BOOT_ID = randomUUID();

export const ORPHAN_REASON = 'the synchronous v1 caller lost its answer when the gateway stopped; not sent, so that its resend cannot send it twice';

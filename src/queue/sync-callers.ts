/**
 * Jobs a synchronous v1 caller is waiting for. Such a job carries the boot id of the process whose route
 * waits (`caller_boot`: the node that took the HTTP request, which may have forwarded it to the owner). If that
 * process dies the caller gets no answer and, as SPEC.md tells it, resends: so at the next start of the
 * instance's queue, a waiting job marked by a process that is no longer alive is expired (never sent;
 * src/queue/sql/orphanedSyncJobs.ts). Once the caller has the job's id (504 QUEUE_WAIT_TIMEOUT), the
 * mark is cleared (src/queue/sql/releaseSyncCaller.ts) and the job goes out at its slot like any other.
 *
 * With several nodes the caller may wait on another node than the instance's owner, whose queue does not start
 * again when that node dies. So the owner's claim refuses a job whose caller's process is gone
 * (src/queue/sql/claimJob.ts; src/queue/dispatch-claim.ts then expires it), and the owner learns of such a death
 * as soon as the connection that carried the forwarded wait closes before its answer
 * (src/cluster/lost-callers.ts), not only once the dead node's heartbeat has aged. A job already claimed
 * (`sending`) is never expired: it may be on the network.
 */
import { randomUUID } from 'node:crypto';

/** This process's boot id: differs on every start, so a mark from an earlier process is always recognised. */
export const BOOT_ID = randomUUID();

/** SQL: the node row `n` is alive: its heartbeat is younger than the node's own liveness (sql/0015). */
export const NODE_ALIVE = "n.heartbeat_at > now() - n.live_ms * interval '1 millisecond'";

/**
 * SQL: the process `boot` names (an SQL expression) is alive; CALLER_ALIVE of a job's caller, CALLER_GONE its
 * negation. Gone: the process named by `jobs.caller_boot` is not alive: no node row names that boot id with a heartbeat
 * younger than the node's own liveness (sql/0015). A caller waiting on a live node that forwarded its send, or on
 * the node that just handed the instance over, is not an orphan; one whose process died (or an earlier process
 * of a single gateway, whose row now names the new boot id) is.
 */
export const callerAlive = (boot: string): string => `EXISTS (SELECT 1 FROM nodes n WHERE n.boot_id = ${boot} AND ${NODE_ALIVE})`;
export const CALLER_ALIVE = callerAlive('jobs.caller_boot');
export const CALLER_GONE = `NOT ${CALLER_ALIVE}`;

export const ORPHAN_REASON = 'the synchronous v1 caller lost its answer when the gateway stopped; not sent, so that its resend cannot send it twice';

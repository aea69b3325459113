/**
 * A synchronous v1 caller that waits on another node than the instance's owner: that node forwarded the send and
 * waits for the job's outcome through the owner's internal route (`queue.awaitOutcome`, src/cluster/remote-port.ts).
 * Should that node die, its caller gets no answer and resends (docs/api.md "v1 and v2"), so the job it left must
 * never go out. The owner's queue does not start again then (src/queue/sync-callers.ts), and the dead node's
 * heartbeat only ages after its liveness (LEASE_TTL_MS): found from the outside, the owner sent such jobs 5-8 s
 * after the node that held their callers was SIGKILLed, and every resend would have been a second copy.
 *
 * The connection that carries the wait closing before its answer is the signal: the node that held the caller is
 * asked at once (its GET /health), and when nothing answers there, or the node's row no longer names that process
 * alive (it stopped, or a new process took its place), the process is gone: its jobs still waiting on the
 * instance are expired (`queue.callerGone`). A node that answers is alive and asks again itself (the wait follows
 * the job). Expiring the job of a caller that was in fact alive (a node that did not answer in time) is honest
 * too: its node, asking again, answers the caller "not sent" with nothing sent.
 */
import type { InstancePort } from '../actors/port.js';
import type { Queryable } from '../store/pool.js';
import { BOOT_ID, callerAlive, NODE_ALIVE } from '../queue/sync-callers.js';
import type { NodeProbe } from './nodes.js';

export interface LostCallerDeps {
  pool: Queryable;
  /** whether a gateway answers at a node's address (src/cluster/nodes.ts healthProbe) */
  probe: NodeProbe;
  /** this node's port of the instance, while it runs it */
  localPort(instanceId: string): InstancePort | null;
}

/** How long the expiry ask may take at the instance's queue. */
const EXPIRE_MS = 5_000;

/** The job's caller's process (null: none waits any more, or this one) and the address of its node if it is alive. */
async function callerOf(q: Queryable, instanceId: string, jobId: string): Promise<{ boot: string; url: string | null } | null> {
  const { rows } = await q.query<{ caller_boot: string | null; url: string | null }>(
    `SELECT jobs.caller_boot, (SELECT n.url FROM nodes n WHERE n.boot_id = jobs.caller_boot AND ${NODE_ALIVE} LIMIT 1) AS url
       FROM jobs WHERE instance_id = $1 AND id = $2`,
    [instanceId, jobId],
  );
  const boot = rows[0]?.caller_boot ?? null;
  return boot === null || boot === BOOT_ID ? null : { boot, url: rows[0]?.url ?? null };
}

/** Whether a live node's row still names `boot`. */
async function stillAlive(q: Queryable, boot: string): Promise<boolean> {
  const { rows } = await q.query<{ alive: boolean }>(`SELECT ${callerAlive('$1::text')} AS alive`, [boot]);
  return rows[0]?.alive === true;
}

/**
 * The connection that carried a forwarded wait for `jobId` closed before its answer: when the process that held
 * the job's caller is gone, its jobs still waiting on the instance are expired. The number expired.
 */
export async function forwardedWaitDropped(deps: LostCallerDeps, instanceId: string, jobId: string): Promise<number> {
  const caller = await callerOf(deps.pool, instanceId, jobId);
  if (!caller) return 0;
  // the node answers at its address and its row still names the process: alive (it asks again itself)
  if (caller.url !== null && (await deps.probe(caller.url)) && (await stillAlive(deps.pool, caller.boot))) return 0;
  const port = deps.localPort(instanceId);
  if (!port) return 0;
  // the queue logs what it expired (src/queue/orphans.ts)
  return port.ask({ type: 'queue.callerGone', callerBoot: caller.boot }, EXPIRE_MS);
}

/**
 * How the gateway reaches instances when several nodes share one PostgreSQL: the port of an instance is the
 * local one when this node runs it, else a remote port to its owner (src/cluster/remote-port.ts); the operator
 * service's view of the actors (create, settings, delete) goes through the cluster's placement.
 */
import os from 'node:os';
import { createHash } from 'node:crypto';
import type { Config } from '../config.js';
import type { ActorSystem } from '../actors/system.js';
import { DEADLINES, type InstancePort } from '../actors/port.js';
import { DomainError } from '../errors.js';
import type { InstanceActors } from '../instances.js';
import type { Instance } from '../store/instances.js';
import type { Cluster } from './cluster.js';
import { RemoteInstancePort, RemoteViews } from './remote-port.js';

/** NODE_ID, else the host name and a short hash of the data directory: the same node across restarts. */
export function defaultNodeId(config: Pick<Config, 'NODE_ID' | 'DATA_DIR'>): string {
  if (config.NODE_ID) return config.NODE_ID;
  const host = os.hostname().replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 40) || 'node';
  return `${host}-${createHash('sha256').update(config.DATA_DIR).digest('hex').slice(0, 8)}`;
}

/** NODE_URL, else this process's listening address. */
export function defaultNodeUrl(config: Pick<Config, 'NODE_URL'>, listening: string): string {
  return config.NODE_URL ?? (listening || 'http://127.0.0.1:0');
}

export interface ClusterPorts {
  /** the port of an instance, wherever it runs */
  portOf(instanceId: string): InstancePort;
  /** the operator service's actors (src/instances.ts) */
  actors: InstanceActors;
}

/**
 * Before an instance owned by another node is deleted, that node stops it (`drain`, served there by
 * src/cluster/cluster.ts `forget`: a dispatch in flight finishes and its outcome is written, its v1 caller
 * answered with it; the lease is held for the delete, so that it goes with the row, or is released once the
 * hold ended if the delete failed). Found from the outside: a delete made
 * through another node removed the rows at once while the owner was sending, and the owner's v1 caller was
 * told "nothing was sent" for a message the network had taken. `drainMs` bounds the wait: a call's deadline
 * and an operator answer's.
 */
async function drainAtOwner(cluster: Cluster, port: InstancePort, instanceId: string, drainMs: number): Promise<void> {
  const until = Date.now() + drainMs;
  let owner = await cluster.owner(instanceId, true);
  for (;;) {
    // no live owner: no node can claim or send its jobs (a claim is fenced by the lease); this node: stopped and
    // held here (taken here before the delete began)
    if (!owner) return;
    if (owner.nodeId === cluster.nodeId) return void (await cluster.forget(instanceId));
    const asked = owner;
    try {
      return void (await port.ask({ type: 'drain' }, Math.max(1, until - Date.now())));
    } catch (err) {
      // gone meanwhile (another delete): nothing of it can be sending
      if (err instanceof DomainError && err.code === 'INSTANCE_NOT_FOUND') return;
      owner = await cluster.owner(instanceId, true);
      // another node took it over while the ask waited (the one asked gone past its lease): stopped there in turn
      // (found from the outside: the delete waited 18 s, then named the node that had gone as the one running it)
      if (owner && owner.nodeId !== asked.nodeId && Date.now() < until) continue;
      if (!owner) return;
      throw new DomainError(
        'INSTANCE_UNREACHABLE',
        `node ${owner.nodeId}, which runs the instance, could not be reached to stop it before the delete; nothing was deleted: retry shortly (a node that is gone gives its instances up when their leases run out, within LEASE_TTL_MS)`,
        { node: owner.nodeId },
      );
    }
  }
}

export function clusterPorts(local: ActorSystem, cluster: Cluster, secret: string | undefined, drainMs: number = DEADLINES.send): ClusterPorts {
  const views = new RemoteViews();
  const remote = (id: string) =>
    new RemoteInstancePort(id, {
      selfId: cluster.nodeId,
      owner: (i, fresh) => cluster.owner(i, fresh),
      exists: (i) => cluster.exists(i),
      deleting: (i) => cluster.deleting(i),
      secret,
      views,
      local: (i) => local.port(i),
      stopping: () => cluster.stopping,
    });
  const portOf = (id: string): InstancePort => local.port(id) ?? remote(id);
  const actors: InstanceActors = {
    add: (instance: Instance) => cluster.place(instance),
    async remove(id: string) {
      // not taken here until the delete ended (removeEnded); stopped here if it runs here (an in-flight dispatch
      // persisted, the lease held for the delete), and where another node holds its lease (one it was being
      // moved to meanwhile), there
      cluster.deleteBegins(id);
      await cluster.forget(id);
      await drainAtOwner(cluster, remote(id), id, drainMs);
    },
    removeEnded: (id: string) => cluster.deleteEnded(id),
    async update(instance, replan) {
      if (local.has(instance.id)) return local.update(instance, replan);
      // the owner keeps the record its planner reads: it hears of the change through its port
      await remote(instance.id).ask({ type: 'settings', instance, replan }, DEADLINES.send).catch(() => undefined);
    },
    port: (id: string) => portOf(id),
    record: (id: string) => local.record(id),
    nodeOf: (id: string) => cluster.nodeOf(id),
  };
  return { portOf, actors };
}

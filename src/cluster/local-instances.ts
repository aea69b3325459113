/**
 * What the cluster needs of this node's actor system (src/actors/system.ts): the one contract between the
 * cluster's parts that start instances here (src/cluster/taking.ts) or stop them (src/cluster/hand-overs.ts) and
 * the actors that run them. Its own file so that those parts and src/cluster/cluster.ts name it alike, none
 * importing another for it.
 */
import type { Instance } from '../store/instances.js';

export interface LocalInstances {
  /** register and spawn the actors of these instances; `brandNew`: those never owned before (nothing stored yet) */
  add(instances: readonly Instance[], brandNew: ReadonlySet<string>): void;
  remove(instanceId: string): Promise<void>;
  has(instanceId: string): boolean;
}

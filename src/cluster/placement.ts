/**
 * Where an instance should live: weighted rendezvous hashing over the live nodes (each instance goes to the
 * node with the highest score `-capacity / ln(u)`, u a hash of (node, instance) in (0, 1)). Stable: a node
 * joining takes about its share from every other node and nothing moves between the others; a node leaving
 * moves only its own instances. An operator's placement wins while its node is live.
 */
import { createHash } from 'node:crypto';
import type { NodeInfo } from './nodes.js';

function unit(nodeId: string, instanceId: string): number {
  const h = createHash('sha256').update(nodeId).update('\0').update(instanceId).digest();
  // 52 bits of the hash as a number in (0, 1)
  const n = h.readUIntBE(0, 6) * 16 + (h[6] as number >> 4);
  return (n + 1) / (2 ** 52 + 2);
}

export function placeInstance(instanceId: string, nodes: readonly NodeInfo[], pinned: string | null = null): string | null {
  if (pinned && nodes.some((n) => n.id === pinned)) return pinned;
  let best: string | null = null;
  let bestScore = Number.NEGATIVE_INFINITY;
  for (const n of nodes) {
    const score = -n.capacity / Math.log(unit(n.id, instanceId));
    if (score > bestScore || (score === bestScore && best !== null && n.id < best)) {
      best = n.id;
      bestScore = score;
    }
  }
  return best;
}

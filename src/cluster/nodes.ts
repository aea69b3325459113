/**
 * Membership: each node registers itself (id, internal URL, capacity, the hash of its cluster secret), renews a
 * heartbeat, and leaves on a graceful stop. A node is live while its heartbeat is younger than the lease TTL.
 * A node refuses to join live nodes of another secret (or of none, when it has one, and the reverse): two
 * clusters must never share instances by accident.
 */
import { BOOT_ID } from '../queue/sync-callers.js';
import { createHash } from 'node:crypto';
import type { Queryable } from '../store/pool.js';

export interface NodeInfo {
  id: string;
  url: string;
  capacity: number;
}

export interface LiveNode extends NodeInfo {
  startedAt: number;
  heartbeatAt: number;
  /** how far the node's clock is ahead of the database's (ms, negative: behind), null until it measured it */
  clockOffsetMs: number | null;
}

export class ClusterRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClusterRefused';
  }
}

export const secretHash = (secret: string | undefined): string | null => (secret ? createHash('sha256').update(secret).digest('hex') : null);

/** Whether a gateway answers at `url` (any HTTP answer: a process is there). */
export type NodeProbe = (url: string) => Promise<boolean>;

/**
 * Join: refused next to live nodes of another secret, and when a live node already has this NODE_ID at
 * another address and still answers there (a second process given the same id). Found from the outside: such a
 * process, without any secret, took over the live node's row (its address and its secret's hash), and the
 * nodes started right after, with the right secret, were the ones refused; with the right secret, two
 * processes ran the same instances under one lease. A registration of this id at this very address, or at one
 * where nothing answers, is this node's own earlier process (killed before its heartbeat aged): taken over.
 */
export async function registerNode(q: Queryable, node: NodeInfo, hash: string | null, liveMs: number, probe: NodeProbe): Promise<void> {
  const { rows } = await q.query<{ id: string; url: string; secret_hash: string | null }>(
    `SELECT id, url, secret_hash FROM nodes WHERE heartbeat_at > now() - $1 * interval '1 millisecond'`,
    [liveMs],
  );
  const others = rows.filter((r) => r.id !== node.id);
  if (others.length > 0 && hash === null) {
    throw new ClusterRefused('other gateway nodes use this database: set CLUSTER_SECRET (the same on every node) to join them');
  }
  if (others.some((r) => r.secret_hash !== hash)) {
    throw new ClusterRefused('other gateway nodes use this database with a different CLUSTER_SECRET (or none): this node does not join them');
  }
  const same = rows.find((r) => r.id === node.id);
  if (same && same.url !== node.url && (await probe(same.url))) {
    throw new ClusterRefused(`NODE_ID ${node.id} is in use by a live node at ${same.url}: give every node its own NODE_ID`);
  }
  await q.query(
    `INSERT INTO nodes (id, url, capacity, secret_hash, boot_id, live_ms) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, capacity = EXCLUDED.capacity, secret_hash = EXCLUDED.secret_hash,
       boot_id = EXCLUDED.boot_id, live_ms = EXCLUDED.live_ms, started_at = now(), heartbeat_at = now(), clock_offset_ms = NULL`,
    [node.id, node.url, node.capacity, hash, BOOT_ID, liveMs],
  );
}

/**
 * Renew this node's heartbeat. Answers the address its row names (another one: a process that took this
 * NODE_ID), or null when the row was gone (deleted by hand, or by such a process leaving): then it is
 * registered again, so that the node does not drop out of the cluster without a word.
 */
export async function heartbeat(q: Queryable, node: NodeInfo, hash: string | null, liveMs: number, clockOffsetMs: number | null = null): Promise<string | null> {
  const { rows } = await q.query<{ url: string }>(
    'UPDATE nodes SET heartbeat_at = now(), clock_offset_ms = COALESCE($2, clock_offset_ms) WHERE id = $1 RETURNING url',
    [node.id, clockOffsetMs],
  );
  if (rows[0]) return rows[0].url;
  await q.query(
    'INSERT INTO nodes (id, url, capacity, secret_hash, boot_id, live_ms) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING',
    [node.id, node.url, node.capacity, hash, BOOT_ID, liveMs],
  );
  return null;
}

/** Leave: this node's own registration only (not one another process made with the same NODE_ID). */
export async function leaveCluster(q: Queryable, node: NodeInfo): Promise<void> {
  await q.query('DELETE FROM nodes WHERE id = $1 AND url = $2', [node.id, node.url]);
}

/** The probe of a node's address: its GET /health, within `ms`. */
export const healthProbe = (ms: number): NodeProbe => (url) =>
  fetch(`${url.replace(/\/+$/, '')}/health`, { signal: AbortSignal.timeout(ms) }).then(
    async (res) => (await res.arrayBuffer().catch(() => null), true),
    () => false,
  );

export async function liveNodes(q: Queryable, liveMs: number): Promise<LiveNode[]> {
  const { rows } = await q.query<{ id: string; url: string; capacity: number; started_at: Date; heartbeat_at: Date; clock_offset_ms: number | null }>(
    `SELECT id, url, capacity, started_at, heartbeat_at, clock_offset_ms FROM nodes
      WHERE heartbeat_at > now() - $1 * interval '1 millisecond' ORDER BY id`,
    [liveMs],
  );
  return rows.map((r) => ({
    id: r.id, url: r.url, capacity: r.capacity, startedAt: r.started_at.getTime(), heartbeatAt: r.heartbeat_at.getTime(), clockOffsetMs: r.clock_offset_ms,
  }));
}

/**
 * The database's clock now, in ms since the epoch (`clock_timestamp()`: the moment the statement reads it, not
 * its transaction's start).
 */
export async function databaseClock(q: Queryable): Promise<number> {
  const { rows } = await q.query<{ ms: number }>('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms');
  return Number(rows[0]?.ms);
}

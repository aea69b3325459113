/**
 * The media store's limits: the per-file ceiling, the free-disk floor and the per-instance quota (met by
 * evicting the instance's oldest live media), and the MEDIA_STORE_UNAVAILABLE error that reports hitting one.
 */
import { statfs } from 'node:fs/promises';
import { DomainError } from '../errors.js';
import type { Queryable } from '../store/pool.js';

export const MiB = 1024 * 1024;
/** SPEC.md "Limits": per-file store ceiling (no operator setting). */
export const STORE_FILE_MAX_BYTES = 16 * MiB;
/** SPEC.md "Limits": minimum free disk for storing, 5 GB. */
export const MIN_FREE_DISK_BYTES = 5 * 1024 ** 3;

export function storeUnavailable(reason: 'low_disk' | 'too_large', message: string, data: Record<string, unknown> = {}): DomainError {
  return new DomainError('MEDIA_STORE_UNAVAILABLE', message, { reason, ...data }, { reason });
}

/** Free bytes on the file system holding `dir`. */
export async function statfsFree(dir: string): Promise<number> {
  const s = await statfs(dir);
  return s.bavail * s.bsize;
}

/**
 * Make room for `incoming` bytes in the instance's quota of `instanceMaxBytes` by marking its oldest live media
 * deleted, inside the caller's transaction, serialised per instance by an advisory lock. Returns the evicted ids.
 */
export async function evictOldest(q: Queryable, instanceId: string, incoming: number, now: number, instanceMaxBytes: number): Promise<string[]> {
  await q.query(`SELECT pg_advisory_xact_lock(hashtextextended('mgw-media:' || $1::text, 0))`, [instanceId]);
  const { rows } = await q.query<{ id: string; size: number }>(
    `SELECT id, size FROM media WHERE instance_id = $1 AND deleted_at IS NULL AND expires_at > $2
      ORDER BY created_at, id`,
    [instanceId, new Date(now)],
  );
  let used = rows.reduce((sum, r) => sum + Number(r.size), 0);
  const evicted: string[] = [];
  for (const r of rows) {
    if (used + incoming <= instanceMaxBytes) break;
    evicted.push(r.id);
    used -= Number(r.size);
  }
  if (used + incoming > instanceMaxBytes) {
    throw storeUnavailable('too_large', 'the file is larger than the instance media store', { maxBytes: instanceMaxBytes });
  }
  if (evicted.length > 0) {
    await q.query('UPDATE media SET deleted_at = $2 WHERE id = ANY($1::text[])', [evicted, new Date(now)]);
  }
  return evicted;
}

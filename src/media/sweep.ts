/**
 * The media sweeper: brings disk and index back into agreement. Safe to run at any time and after a kill at
 * any point of a put or a delete (see the step order in store.ts); running it twice changes nothing more.
 *
 * 1. expired rows and tombstones (deleted or evicted): unlink the file, then delete the row;
 * 2. instances over their quota (MEDIA_STORE_MAX_MB lowered): evict oldest first, then as in 1;
 * 3. the disk: temp files and files without a row (a put killed between rename and insert) are removed once
 *    older than the grace period and not being written by this process; a temp file written before this process
 *    started (one process writes a DATA_DIR: a killed one's upload) at the first sweep. Found from the outside:
 *    10 MB temp files of uploads cut off by a crash stayed for the grace period after the restart.
 * A live row whose file is missing is left alone: it is the 410 MEDIA_GONE case until it expires.
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { withTransaction, type Pool, type Queryable } from '../store/pool.js';
import { INSTANCE_ID_RE, MEDIA_ID_RE } from './record.js';
import { isMissing, unlinkQuiet } from './files.js';

export interface SweepReport {
  /** rows past retention removed */
  expired: number;
  /** tombstones (deleted or evicted earlier) completed */
  tombstones: number;
  /** media evicted now because an instance was over its quota */
  evicted: number;
  /** files without an index row removed */
  orphanFiles: number;
  /** abandoned temp files removed */
  tempFiles: number;
}

export interface SweepContext {
  pool: Pool;
  root: string;
  instanceMaxBytes: number;
  orphanGraceMs: number;
  /** when this process's store was made, by the real clock of the files' mtimes */
  startedAt?: number;
  inFlight: ReadonlySet<string>;
  evictFor(q: Queryable, instanceId: string, incoming: number, now: number): Promise<string[]>;
  finishDeletes(items: { id: string; instanceId: string }[]): Promise<void>;
  fileOf(instanceId: string, mediaId: string): string;
}

// a put's temp file, or a copy's from media_blobs (the media id, then one of its own: store.ts `copyShared`)
const TEMP_RE = /^\.md_[0-9a-f]{24}(\.md_[0-9a-f]{24})?\.tmp$/;
const BATCH = 500;

async function listDir(dir: string): Promise<{ name: string; isDir: boolean }[]> {
  try {
    return (await readdir(dir, { withFileTypes: true })).map((d) => ({ name: d.name, isDir: d.isDirectory() }));
  } catch (err) {
    if (isMissing(err)) return [];
    throw err;
  }
}

async function removeIfStale(ctx: SweepContext, file: string, now: number, before = Number.NEGATIVE_INFINITY): Promise<boolean> {
  if (ctx.inFlight.has(file)) return false;
  try {
    const st = await stat(file);
    if (now - st.mtimeMs < ctx.orphanGraceMs && st.mtimeMs >= before) return false;
  } catch {
    return false;
  }
  await unlinkQuiet(file);
  return true;
}

export async function sweepMedia(ctx: SweepContext, now: number): Promise<SweepReport> {
  const report: SweepReport = { expired: 0, tombstones: 0, evicted: 0, orphanFiles: 0, tempFiles: 0 };
  const at = new Date(now);

  // 1. expired rows and tombstones
  for (;;) {
    const { rows } = await ctx.pool.query<{ id: string; instance_id: string; tomb: boolean }>(
      `SELECT id, instance_id, deleted_at IS NOT NULL AS tomb FROM media
        WHERE deleted_at IS NOT NULL OR expires_at <= $1 ORDER BY id LIMIT ${BATCH}`,
      [at],
    );
    if (rows.length === 0) break;
    for (const r of rows) await unlinkQuiet(ctx.fileOf(r.instance_id, r.id));
    await ctx.pool.query('DELETE FROM media WHERE id = ANY($1::text[]) AND (deleted_at IS NOT NULL OR expires_at <= $2)', [
      rows.map((r) => r.id),
      at,
    ]);
    for (const r of rows) {
      if (r.tomb) report.tombstones++;
      else report.expired++;
    }
    if (rows.length < BATCH) break;
  }

  // 2. quotas
  const { rows: over } = await ctx.pool.query<{ instance_id: string }>(
    `SELECT instance_id FROM media WHERE deleted_at IS NULL AND expires_at > $1
      GROUP BY instance_id HAVING sum(size) > $2`,
    [at, ctx.instanceMaxBytes],
  );
  for (const { instance_id: instanceId } of over) {
    const evicted = await withTransaction(ctx.pool, (c) => ctx.evictFor(c, instanceId, 0, now));
    await ctx.finishDeletes(evicted.map((id) => ({ id, instanceId })));
    report.evicted += evicted.length;
  }

  // 3. the disk
  for (const d of await listDir(ctx.root)) {
    if (!d.isDir || !INSTANCE_ID_RE.test(d.name)) continue;
    const dir = path.join(ctx.root, d.name);
    const names = (await listDir(dir)).filter((e) => !e.isDir).map((e) => e.name);
    for (const name of names.filter((n) => TEMP_RE.test(n))) {
      if (await removeIfStale(ctx, path.join(dir, name), now, ctx.startedAt)) report.tempFiles++;
    }
    const ids = names.filter((n) => MEDIA_ID_RE.test(n));
    if (ids.length === 0) continue;
    const { rows } = await ctx.pool.query<{ id: string }>(
      'SELECT id FROM media WHERE instance_id = $1 AND id = ANY($2::text[])',
      [d.name, ids],
    );
    const indexed = new Set(rows.map((r) => r.id));
    for (const id of ids.filter((i) => !indexed.has(i))) {
      if (await removeIfStale(ctx, path.join(dir, id), now)) report.orphanFiles++;
    }
  }
  return report;
}

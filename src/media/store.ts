/**
 * The media store: files under `<dataDir>/media/<instanceId>/<mediaId>` (named by id only, never by a caller's
 * filename), indexed by the `media` table.
 *
 * Crash safety comes from the order of steps, so that the disk and the index agree after a kill at any point
 * once the sweeper (sweep.ts) has run:
 * - put: write `.<mediaId>.tmp` → fsync → rename to `<mediaId>` → insert the row. A kill leaves a temp file or
 *   a file without row; the sweeper removes both (after a grace period, so it never races a put in progress).
 * - delete / evict: mark the row deleted → unlink the file → delete the row. A kill leaves a tombstone with or
 *   without its file; the sweeper finishes the job. Until then the media already answers 404.
 * - expiry: rows past `expires_at` answer 404 at once; the sweeper unlinks their files, then deletes the rows.
 * A live row whose file vanished by other means (disk loss, an operator's rm) is the 410 MEDIA_GONE case and
 * stays until it expires.
 *
 * Shared (several nodes on one database, `shared`): the bytes are also written to `media_blobs` in the put's
 * transaction, and a node without the file (it was stored through another node, or the instance moved here)
 * reads them from there and keeps a copy, written as a put writes (temp name, fsync, rename). Found from the
 * outside: an upload through one node was 410 MEDIA_GONE on the others, and a send of it accepted there failed
 * at dispatch on the owner.
 */
import { createHash } from 'node:crypto';
import { mkdir, open, readFile, rename, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { DomainError, notFound } from '../errors.js';
import { systemClock, type Clock } from '../clock.js';
import { newMediaId } from '../ids.js';
import { withTransaction, type Pool } from '../store/pool.js';
import { toBuffer, type ByteSource } from './capped.js';
import { isMissing, unlinkQuiet, writeAll } from './files.js';
import { evictOldest, MiB, MIN_FREE_DISK_BYTES, statfsFree, STORE_FILE_MAX_BYTES, storeUnavailable } from './limits.js';
import { INSTANCE_ID_RE, MEDIA_COLUMNS, MEDIA_ID_RE, rowToRecord, type MediaOrigin, type MediaRecord, type MediaRow } from './record.js';
import { sweepMedia, type SweepContext, type SweepReport } from './sweep.js';

export { readCapped, cappedStream } from './capped.js';

export interface MediaStoreOptions {
  pool: Pool;
  dataDir: string;
  clock?: Clock;
  /** MEDIA_RETENTION_HOURS, default 72 */
  retentionHours?: number;
  /** MEDIA_STORE_MAX_MB, default 2048 */
  instanceMaxMb?: number;
  fileMaxBytes?: number;
  minFreeBytes?: number;
  /** free bytes on the file system holding `dir`; injectable for tests */
  freeDiskBytes?: (dir: string) => Promise<number>;
  /** how old a temp file or an unindexed file must be before the sweeper removes it; default 15 min */
  orphanGraceMs?: number;
  /** several nodes share the database: the bytes are kept in PostgreSQL too, for the nodes that did not store them */
  shared?: boolean;
}

export interface MediaMeta {
  mimetype: string;
  filename?: string | null;
  origin: MediaOrigin;
  messageId?: string | null;
}

export type PutInput = MediaMeta & ({ data: Buffer } | { stream: ByteSource });

/** A file written completely to a temp name, not yet visible: `commit` indexes it, `discard` drops it. */
export interface StagedMedia {
  readonly mediaId: string;
  readonly size: number;
  readonly sha256: string;
  commit(meta: MediaMeta): Promise<MediaRecord>;
  discard(): Promise<void>;
}

export interface OpenedMedia {
  record: MediaRecord;
  /** bytes on disk (the Content-Length to send) */
  size: number;
  stream: Readable;
}

export interface MediaStore {
  readonly root: string;
  stage(instanceId: string, source: ByteSource | Buffer): Promise<StagedMedia>;
  put(instanceId: string, input: PutInput): Promise<MediaRecord>;
  /** metadata; 404 MEDIA_NOT_FOUND (unknown, deleted, expired, other instance) or 410 MEDIA_GONE (file missing) */
  get(instanceId: string, mediaId: string): Promise<MediaRecord>;
  /** the newest live record stored for an incoming message, or null */
  findByMessage(instanceId: string, messageId: string): Promise<MediaRecord | null>;
  open(instanceId: string, mediaId: string): Promise<OpenedMedia>;
  read(instanceId: string, mediaId: string): Promise<{ record: MediaRecord; data: Buffer }>;
  delete(instanceId: string, mediaId: string): Promise<void>;
  sweep(now?: number): Promise<SweepReport>;
}

const mediaNotFound = () => notFound('MEDIA_NOT_FOUND', 'media not found');

/** The size of a part of media_blobs (sql/0024_media_blobs.sql). */
export const BLOB_PART_BYTES = 1024 * 1024;
const mediaGone = () => new DomainError('MEDIA_GONE', 'the media file is gone; upload it again');

export function createMediaStore(opts: MediaStoreOptions): MediaStore {
  const pool = opts.pool;
  const clock = opts.clock ?? systemClock;
  // one process writes a DATA_DIR: a temp file from before this store was made is a dead process's (a second
  // early: a file's mtime is as coarse as the kernel's tick)
  const startedAt = Date.now() - 1_000;
  const root = path.resolve(opts.dataDir, 'media');
  const retentionMs = (opts.retentionHours ?? 72) * 3_600_000;
  const instanceMaxBytes = (opts.instanceMaxMb ?? 2048) * MiB;
  const fileMaxBytes = opts.fileMaxBytes ?? STORE_FILE_MAX_BYTES;
  const minFreeBytes = opts.minFreeBytes ?? MIN_FREE_DISK_BYTES;
  const freeDiskBytes = opts.freeDiskBytes ?? statfsFree;
  /** absolute paths being written by this process right now: the sweeper leaves them alone */
  const inFlight = new Set<string>();

  const dirOf = (instanceId: string) => {
    // ids go into paths: only the exact shapes we issue are allowed there
    if (!INSTANCE_ID_RE.test(instanceId)) throw new Error('media store: malformed instance id');
    return path.join(root, instanceId);
  };
  const fileOf = (instanceId: string, mediaId: string) => path.join(dirOf(instanceId), mediaId);

  const evictFor: SweepContext['evictFor'] = (q, instanceId, incoming, now) => evictOldest(q, instanceId, incoming, now, instanceMaxBytes);

  /** Second and third step of a delete: unlink, then drop the tombstone. A kill in between is swept later. */
  async function finishDeletes(items: { id: string; instanceId: string }[]): Promise<void> {
    if (items.length === 0) return;
    for (const it of items) await unlinkQuiet(fileOf(it.instanceId, it.id));
    await pool.query('DELETE FROM media WHERE id = ANY($1::text[]) AND deleted_at IS NOT NULL', [items.map((i) => i.id)]);
  }

  async function commit(instanceId: string, staged: { mediaId: string; size: number; sha256: string; tmp: string; final: string }, meta: MediaMeta): Promise<MediaRecord> {
    const now = clock.now();
    let committed: { record: MediaRecord; evicted: string[] };
    try {
      await rename(staged.tmp, staged.final);
      // read before the transaction: it holds a connection only for its statements
      const bytes = opts.shared ? await readFile(staged.final) : null;
      committed = await withTransaction(pool, async (client) => {
        const evicted = await evictFor(client, instanceId, staged.size, now);
        const { rows } = await client.query<MediaRow>(
          `INSERT INTO media (id, instance_id, origin, message_id, mimetype, filename, size, sha256, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${MEDIA_COLUMNS}`,
          [staged.mediaId, instanceId, meta.origin, meta.messageId ?? null, meta.mimetype, meta.filename ?? null,
            staged.size, staged.sha256, new Date(now), new Date(now + retentionMs)],
        );
        // one statement a part; a Buffer travels in binary (no hex text of 32 MiB to build or parse)
        if (bytes) for (let part = 0; part * BLOB_PART_BYTES < bytes.length; part++) {
          await client.query('INSERT INTO media_blobs (media_id, part, data) VALUES ($1, $2, $3)', [
            staged.mediaId, part, bytes.subarray(part * BLOB_PART_BYTES, (part + 1) * BLOB_PART_BYTES),
          ]);
        }
        return { record: rowToRecord(rows[0] as MediaRow), evicted };
      });
    } catch (err) {
      await unlinkQuiet(staged.tmp);
      await unlinkQuiet(staged.final);
      if (err instanceof Error && 'code' in err && err.code === '23503') throw notFound('INSTANCE_NOT_FOUND', 'instance not found');
      throw err;
    } finally {
      inFlight.delete(staged.tmp);
      inFlight.delete(staged.final);
    }
    // The new media is committed; a failure while removing evicted files must not fail the put: their rows
    // are tombstones already and the sweeper completes them.
    await finishDeletes(committed.evicted.map((id) => ({ id, instanceId }))).catch(() => undefined);
    return committed.record;
  }

  async function stage(instanceId: string, source: ByteSource | Buffer): Promise<StagedMedia> {
    const dir = dirOf(instanceId);
    await mkdir(root, { recursive: true, mode: 0o700 });
    if ((await freeDiskBytes(root)) < minFreeBytes) {
      throw storeUnavailable('low_disk', 'not enough free disk space to store media');
    }
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const mediaId = newMediaId();
    const tmp = path.join(dir, `.${mediaId}.tmp`);
    const final = path.join(dir, mediaId);
    inFlight.add(tmp);
    inFlight.add(final);
    const hash = createHash('sha256');
    let size = 0;
    let fh: FileHandle | null = null;
    try {
      fh = await open(tmp, 'wx', 0o600);
      for await (const raw of Buffer.isBuffer(source) ? [source] : source) {
        const chunk = toBuffer(raw);
        size += chunk.length;
        if (size > fileMaxBytes) {
          throw storeUnavailable('too_large', `the file exceeds the store ceiling of ${fileMaxBytes} bytes`, { maxBytes: fileMaxBytes });
        }
        hash.update(chunk);
        await writeAll(fh, chunk);
      }
      await fh.sync();
      await fh.close();
      fh = null;
    } catch (err) {
      await fh?.close().catch(() => undefined);
      await unlinkQuiet(tmp);
      inFlight.delete(tmp);
      inFlight.delete(final);
      throw err;
    }
    const staged = { mediaId, size, sha256: hash.digest('hex'), tmp, final };
    let settled = false;
    return {
      mediaId,
      size,
      sha256: staged.sha256,
      commit: (meta) => {
        if (settled) throw new Error('media store: staged media already settled');
        settled = true;
        return commit(instanceId, staged, meta);
      },
      discard: async () => {
        if (settled) return;
        settled = true;
        await unlinkQuiet(tmp);
        inFlight.delete(tmp);
        inFlight.delete(final);
      },
    };
  }

  async function findLive(instanceId: string, mediaId: string): Promise<MediaRecord> {
    if (!MEDIA_ID_RE.test(mediaId) || !INSTANCE_ID_RE.test(instanceId)) throw mediaNotFound();
    const { rows } = await pool.query<MediaRow>(
      `SELECT ${MEDIA_COLUMNS} FROM media
        WHERE id = $1 AND instance_id = $2 AND deleted_at IS NULL AND expires_at > $3`,
      [mediaId, instanceId, new Date(clock.now())],
    );
    const row = rows[0];
    if (!row) throw mediaNotFound();
    return rowToRecord(row);
  }

  /**
   * The bytes of a live media this node has no file of, from `media_blobs` (shared only), written here as a put
   * writes them; false when the database does not have them all (stored before it shared: 410 MEDIA_GONE).
   */
  async function copyShared(instanceId: string, record: MediaRecord): Promise<boolean> {
    if (!opts.shared) return false;
    const { mediaId } = record;
    const dir = dirOf(instanceId);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // a name of its own: two requests copying the same media at once each write their own temp file
    const tmp = path.join(dir, `.${mediaId}.${newMediaId()}.tmp`);
    inFlight.add(tmp);
    let complete = false;
    try {
      const fh = await open(tmp, 'wx', 0o600);
      try {
        // part by part: a statement moves at most 1 MiB (a 16 MiB read in one statement, 32 MiB of hex text to
        // parse, held the node's event loop for seconds and passed the store's deadline; found from the outside)
        let written = 0;
        for (let part = 0; written < record.size || part === 0; part++) {
          const { rows } = await pool.query<{ data: Buffer }>('SELECT data FROM media_blobs WHERE media_id = $1 AND part = $2', [mediaId, part]);
          const data = rows[0]?.data;
          if (!data) break;
          await writeAll(fh, data);
          written += data.length;
        }
        complete = written === record.size;
        if (complete) await fh.sync();
      } finally {
        await fh.close();
      }
      if (complete) await rename(tmp, fileOf(instanceId, mediaId));
    } finally {
      if (!complete) await unlinkQuiet(tmp);
      inFlight.delete(tmp);
    }
    return complete;
  }

  async function openFile(instanceId: string, mediaId: string): Promise<{ record: MediaRecord; fh: FileHandle; size: number }> {
    const record = await findLive(instanceId, mediaId);
    const file = fileOf(instanceId, mediaId);
    let fh: FileHandle;
    try {
      fh = await open(file, 'r');
    } catch (err) {
      if (!isMissing(err)) throw err;
      if (!(await copyShared(instanceId, record))) throw mediaGone();
      fh = await open(file, 'r');
    }
    try {
      return { record, fh, size: (await fh.stat()).size };
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  return {
    root,
    stage,

    async put(instanceId, input) {
      const staged = await stage(instanceId, 'data' in input ? input.data : input.stream);
      return staged.commit(input);
    },

    async get(instanceId, mediaId) {
      const record = await findLive(instanceId, mediaId);
      try {
        await stat(fileOf(instanceId, mediaId));
      } catch (err) {
        if (!isMissing(err)) throw err;
        if (!(await copyShared(instanceId, record))) throw mediaGone();
      }
      return record;
    },

    async findByMessage(instanceId, messageId) {
      if (!INSTANCE_ID_RE.test(instanceId)) return null;
      const { rows } = await pool.query<MediaRow>(
        `SELECT ${MEDIA_COLUMNS} FROM media
          WHERE instance_id = $1 AND message_id = $2 AND deleted_at IS NULL AND expires_at > $3
          ORDER BY created_at DESC LIMIT 1`,
        [instanceId, messageId, new Date(clock.now())],
      );
      return rows[0] ? rowToRecord(rows[0]) : null;
    },

    async open(instanceId, mediaId) {
      const { record, fh, size } = await openFile(instanceId, mediaId);
      return { record, size, stream: fh.createReadStream() };
    },

    async read(instanceId, mediaId) {
      const { record, fh } = await openFile(instanceId, mediaId);
      try {
        return { record, data: await fh.readFile() };
      } finally {
        await fh.close();
      }
    },

    async delete(instanceId, mediaId) {
      if (!MEDIA_ID_RE.test(mediaId) || !INSTANCE_ID_RE.test(instanceId)) throw mediaNotFound();
      const now = new Date(clock.now());
      const { rowCount } = await pool.query(
        `UPDATE media SET deleted_at = $3
          WHERE id = $1 AND instance_id = $2 AND deleted_at IS NULL AND expires_at > $3`,
        [mediaId, instanceId, now],
      );
      if (!rowCount) throw mediaNotFound();
      await finishDeletes([{ id: mediaId, instanceId }]);
    },

    sweep(now = clock.now()) {
      return sweepMedia(
        { pool, root, instanceMaxBytes, orphanGraceMs: opts.orphanGraceMs ?? 15 * 60_000, startedAt, inFlight, evictFor, finishDeletes, fileOf },
        now,
      );
    },
  };
}

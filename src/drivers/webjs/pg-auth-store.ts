/**
 * A whatsapp-web.js RemoteAuth store on PostgreSQL (issue 15 item 5): a webjs session's link lives in the
 * database, so that whichever node owns the instance next resumes it without a new QR.
 *
 * RemoteAuth (node_modules/whatsapp-web.js/src/authStrategies/RemoteAuth.js) zips the profile's required
 * folders to `<dataPath>/<session>.zip` and calls `save({session})`; before the browser starts it calls
 * `sessionExists` and `extract({session, path})` and unzips what lands at `path`; on logout, `delete`.
 *
 * The zip is streamed both ways, never held whole in this process, and no connection is held for the length
 * of a transfer (the embedded PostgreSQL has one):
 * - save: the file is read in slices, each inserted into webjs_auth_parts by its own statement; one last
 *   statement turns the parts into the row of webjs_auth (insert or replace) and removes them. A reader
 *   therefore sees the old zip or the new one, never a mix, and concurrent saves of one session are
 *   last-writer-wins (the last to commit), each of them complete.
 * - extract: the row's version (its xmin) is read first; each slice is read only from that version
 *   (substring of an uncompressed out-of-line value fetches just its chunks). A save that replaces the row
 *   meanwhile makes a slice come back empty-handed: the download starts over with the new version. The file
 *   is written beside `path` (mode 0600: it is a credential; its folder is made if missing, as on a node
 *   that never ran the session) and renamed onto it when complete.
 * - delete also removes a save in progress, so that a logout is not undone by a backup that was on its way.
 *
 * Errors name the session (`RemoteAuth-<instanceId>`), never any content.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type WAWebJS from 'whatsapp-web.js';
import { withTransaction, type Pool } from '../../store/pool.js';

/** Bytes per slice moved in one statement. */
export const AUTH_CHUNK_BYTES = 1024 * 1024;
/** The statement that assembles a saved zip may take longer than the store's usual statement deadline. */
const ASSEMBLE_TIMEOUT_MS = 120_000;
/** The client's own wait for that statement (pg's per-query setting, as `unbounded` in store/pool.ts). */
const assembleWait = { query_timeout: ASSEMBLE_TIMEOUT_MS + 5_000 } as const;
/** How often a download starts over because saves keep replacing the row before it gives up. */
const MAX_READ_ATTEMPTS = 5;
/** Parts of a save that died midway (the process was killed) are removed by a save this much later. */
const STALE_PARTS_INTERVAL = '1 day';
/** RemoteAuth's names are `RemoteAuth-<clientId>`, clientId matching /^[-_\w]+$/; anything else is refused. */
const SESSION_NAME = /^[-\w]+$/;

export interface PgAuthStoreOptions {
  pool: Pool;
  /** RemoteAuth's dataPath: where it writes `<session>.zip` before calling save(). */
  dataPath: string;
  /** Slice size (tests use small slices to make many of them). */
  chunkBytes?: number;
}

/** The row changed while it was being read. */
class VersionChanged extends Error {}

export class PgAuthStore implements WAWebJS.Store {
  private readonly pool: Pool;
  private readonly dataPath: string;
  private readonly chunkBytes: number;

  constructor(opts: PgAuthStoreOptions) {
    this.pool = opts.pool;
    this.dataPath = path.resolve(opts.dataPath);
    this.chunkBytes = opts.chunkBytes ?? AUTH_CHUNK_BYTES;
    if (!Number.isInteger(this.chunkBytes) || this.chunkBytes < 1) throw new RangeError('chunkBytes must be a positive integer');
  }

  async sessionExists({ session }: { session: string }): Promise<boolean> {
    const r = await this.pool.query('SELECT 1 FROM webjs_auth WHERE session = $1', [sessionName(session)]);
    return r.rowCount === 1;
  }

  /** Store `<dataPath>/<session>.zip` as the session's link, replacing what was stored. */
  async save({ session }: { session: string }): Promise<void> {
    const name = sessionName(session);
    const file = path.join(this.dataPath, `${name}.zip`);
    const upload = randomUUID();
    await this.pool.query(`DELETE FROM webjs_auth_parts WHERE created_at < now() - interval '${STALE_PARTS_INTERVAL}'`);
    try {
      let parts = 0;
      for await (const chunk of createReadStream(file, { highWaterMark: this.chunkBytes })) {
        if (!(chunk instanceof Buffer)) throw new TypeError('the session archive did not read as bytes');
        await this.pool.query('INSERT INTO webjs_auth_parts (upload, seq, session, chunk) VALUES ($1, $2, $3, $4)', [upload, parts, name, chunk]);
        parts += 1;
      }
      if (parts === 0) throw new Error(`webjs session ${name}: the archive to save is empty`);
      const stored = await withTransaction(this.pool, async (client) => {
        await client.query(`SET LOCAL statement_timeout = ${ASSEMBLE_TIMEOUT_MS}`);
        // every part must still be there: a delete() in the meantime removed them and wins over this save
        const r = await client.query({
          text: `WITH parts AS (DELETE FROM webjs_auth_parts WHERE upload = $2 RETURNING seq, chunk)
                 INSERT INTO webjs_auth (session, data, updated_at)
                 SELECT $1, string_agg(chunk, ''::bytea ORDER BY seq), now() FROM parts HAVING count(*) = $3
                 ON CONFLICT (session) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
          values: [name, upload, parts],
          ...assembleWait,
        });
        return r.rowCount === 1;
      });
      if (!stored) throw new Error(`webjs session ${name}: the save was overtaken by a delete of the session`);
    } catch (err) {
      await this.pool.query('DELETE FROM webjs_auth_parts WHERE upload = $1', [upload]).catch(() => undefined);
      throw err;
    }
  }

  /** Write the session's stored zip to `path` (replacing the file once it is complete). */
  async extract({ session, path: target }: { session: string; path: string }): Promise<void> {
    const name = sessionName(session);
    for (let attempt = 1; ; attempt++) {
      const head = await this.pool.query<{ version: string; size: number }>(
        'SELECT xmin::text AS version, octet_length(data) AS size FROM webjs_auth WHERE session = $1',
        [name],
      );
      const row = head.rows[0];
      if (!row) throw new Error(`webjs session ${name} is not stored`);
      // a node that never ran this session has no dataPath yet (RemoteAuth writes there only after extract)
      await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      const partial = `${target}.${randomUUID()}.part`;
      try {
        await pipeline(Readable.from(this.slices(name, row.version, row.size)), createWriteStream(partial, { mode: 0o600 }));
        await rename(partial, target);
        return;
      } catch (err) {
        if (!(err instanceof VersionChanged)) throw err;
        if (attempt >= MAX_READ_ATTEMPTS) throw new Error(`webjs session ${name} was replaced ${attempt} times while it was read; try again`);
      } finally {
        await rm(partial, { force: true });
      }
    }
  }

  async delete({ session }: { session: string }): Promise<void> {
    const name = sessionName(session);
    await withTransaction(this.pool, async (client) => {
      await client.query('DELETE FROM webjs_auth_parts WHERE session = $1', [name]);
      await client.query('DELETE FROM webjs_auth WHERE session = $1', [name]);
    });
  }

  /** The slices of one version of the row, in order; VersionChanged when that version is gone. */
  private async *slices(name: string, version: string, size: number): AsyncGenerator<Buffer> {
    for (let offset = 0; offset < size; offset += this.chunkBytes) {
      const r = await this.pool.query<{ slice: Buffer }>(
        'SELECT substring(data FROM $3 FOR $4) AS slice FROM webjs_auth WHERE session = $1 AND xmin = $2::xid',
        [name, version, offset + 1, this.chunkBytes],
      );
      const slice = r.rows[0]?.slice;
      if (!slice) throw new VersionChanged();
      yield slice;
    }
  }
}

function sessionName(session: string): string {
  if (!SESSION_NAME.test(session)) throw new Error('webjs session names are letters, digits, _ and - only');
  return session;
}

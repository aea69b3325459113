/**
 * Embedded PostgreSQL for the zero-configuration start: PGlite (PostgreSQL compiled to WASM) persisted in
 * DATA_DIR/pg, served by pglite-socket on a unix socket inside DATA_DIR/run (mode 0700), so the very same
 * `pg` code that talks to a real server talks to it. It serializes transactions, which is fine for one node.
 *
 * A DATA_DIR that held a database does not quietly get a new, empty one: once DATA_DIR/pg holds a database, the
 * file DATA_DIR/embedded-database.json says so (`EMBEDDED_MARKER`), and a start that finds that file but no
 * database in pg/ refuses (`EmbeddedDatabaseGone`) until the operator restores pg/ or removes the file. Found
 * from the outside: `rm -rf DATA_DIR/pg` and a restart gave an empty database without a word, every instance,
 * key and job gone, beside the old admin token and sandbox state. While the gateway runs, pg/ is looked at every
 * EMBEDDED_CHECK_MS: removed or replaced under it (PostgreSQL's open files outlive the unlink, and the gateway
 * went on accepting sends into a database that was gone, for up to a minute, all lost), `onGone` is told.
 */
import { createHash } from 'node:crypto';
import { mkdir, chmod, lstat, readdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { MAX_SOCKET_PATH } from '../socket-path.js';

export interface EmbeddedPostgres {
  /** connection settings for `pg` */
  connection: { host: string; port: number; user: string; database: string };
  stop(): Promise<void>;
}

const SOCKET_PORT = 5432;
const SOCKET_NAME = `.s.PGSQL.${SOCKET_PORT}`;

/**
 * Where the socket is served: DATA_DIR/run, or, when its path there is longer than a unix socket's path may be, a
 * directory of this user's own in the temporary directory, named by a hash of DATA_DIR's real path (one process
 * per DATA_DIR holds it: src/bootstrap.ts), made with mode 0700 and refused unless it is a directory of this user's
 * that nobody else may enter. Found from the outside: libuv cut the long path short without a word, so the socket
 * landed at a truncated path beside DATA_DIR (in the temporary directory, outside run/'s 0700), or the start failed
 * with EADDRINUSE on a path that named nothing in use.
 */
export async function socketDirFor(dataDir: string, runDir: string): Promise<string> {
  if (Buffer.byteLength(path.join(runDir, SOCKET_NAME)) <= MAX_SOCKET_PATH) return runDir;
  const hash = createHash('sha256').update(await realpath(dataDir)).digest('hex').slice(0, 24);
  const dir = path.join(os.tmpdir(), `mgw-pg-${hash}`);
  if (Buffer.byteLength(path.join(dir, SOCKET_NAME)) > MAX_SOCKET_PATH) {
    throw new Error(`DATA_DIR ${dataDir} is too deep for the embedded PostgreSQL's socket (${path.join(runDir, SOCKET_NAME)}), and so is the temporary directory ${os.tmpdir()}: a unix socket's path holds at most ${MAX_SOCKET_PATH} bytes; give a shorter DATA_DIR or TMPDIR`);
  }
  await mkdir(dir, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  const st = await lstat(dir);
  const mine = typeof process.getuid !== 'function' || st.uid === process.getuid();
  if (!st.isDirectory() || !mine || (st.mode & 0o077) !== 0) {
    throw new Error(`the embedded PostgreSQL's socket directory ${dir} (DATA_DIR ${dataDir} is too deep for one in run/) is not a directory of this user's that only it may enter: remove it, or give a shorter DATA_DIR`);
  }
  return dir;
}

/** The file beside DATA_DIR/pg that says this DATA_DIR holds an embedded database. */
export const EMBEDDED_MARKER = 'embedded-database.json';

/** How often a running embedded database's directory is looked at (`onGone`). */
export const EMBEDDED_CHECK_MS = 1_000;

/** A DATA_DIR whose embedded database is gone: the start refuses rather than make an empty one. */
export class EmbeddedDatabaseGone extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EmbeddedDatabaseGone';
  }
}

interface Marker {
  /** when this DATA_DIR was first seen holding its database (ISO-8601) */
  since: string;
}

/** PostgreSQL's own file in a data directory it made: present once initdb has run. */
const VERSION_FILE = 'PG_VERSION';

/**
 * What a running database's directory is watched by (`watchEmbeddedDir`): itself, its PG_VERSION and the
 * directories of its tables, its shared catalog and its WAL. None is ever replaced while PostgreSQL runs (only
 * their contents change), so each one's identity stays; removed or put there anew (a backup restored into the
 * running pg/, parts of it deleted), PostgreSQL's open files go on being written where no start will find them.
 */
const WATCHED = ['.', VERSION_FILE, 'base', 'global', 'pg_wal'] as const;

/**
 * Whether pg/ holds a database (its PG_VERSION is there); an error other than "not there" (a permission taken
 * away) is thrown, not read as "no database": the start then names that error and the path.
 */
async function holdsDatabase(pgDir: string): Promise<boolean> {
  try {
    await stat(path.join(pgDir, VERSION_FILE));
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw err;
  }
}

/** The marker's content, or null when there is none (one that cannot be read as such counts as there). */
async function readMarker(file: string): Promise<Marker | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    const since = (JSON.parse(text) as { since?: unknown }).since;
    return { since: typeof since === 'string' ? since : 'an unknown date' };
  } catch {
    return { since: 'an unknown date' };
  }
}

/** What a thrown value says: an Error's message, else its JSON (PGlite throws plain objects). */
function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  try {
    return JSON.stringify(err).slice(0, 300);
  } catch {
    return String(err);
  }
}

/** The entries of a directory (none when it is not there). */
const entriesOf = (dir: string): Promise<string[]> => readdir(dir).catch((err: NodeJS.ErrnoException) => {
  if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return [];
  throw err;
});

/**
 * Before the embedded database is opened: refuse a DATA_DIR whose marker says it held one that pg/ no longer
 * holds (`EmbeddedDatabaseGone`). A pg/ that cannot be read (a permission taken away) fails with that error.
 */
export async function checkEmbeddedDir(dataDir: string): Promise<void> {
  const pgDir = path.join(dataDir, 'pg');
  // PGlite's file system does not follow a symlink: an intact database behind one failed as "damaged"
  const link = await lstat(pgDir).then((st) => st.isSymbolicLink(), () => false);
  if (link) throw new Error(`${pgDir} is a symbolic link, which the embedded PostgreSQL cannot follow: put the directory itself there (or point DATA_DIR at the directory that holds it)`);
  if (await holdsDatabase(pgDir)) return;
  const marker = await readMarker(path.join(dataDir, EMBEDDED_MARKER));
  if (marker === null) return;
  const markerFile = path.join(dataDir, EMBEDDED_MARKER);
  const left = await entriesOf(pgDir);
  throw new EmbeddedDatabaseGone(
    left.length === 0
      ? `DATA_DIR ${dataDir} held an embedded database (since ${marker.since}) and ${pgDir} no longer holds it: restore ${pgDir} from a backup, ` +
          `or remove ${markerFile} to start with an empty database (every instance, API key and job of the old one lost)`
      : `DATA_DIR ${dataDir} held an embedded database (since ${marker.since}) and ${pgDir} is damaged: PostgreSQL's ${VERSION_FILE} is gone, ` +
          `${left.length} other entries are left (${left.slice(0, 5).join(', ')}${left.length > 5 ? ', …' : ''}): restore ${pgDir} from a backup; ` +
          `removing ${markerFile} would start an empty database over what is left (every instance, API key and job of the old one lost)`,
  );
}

/** Once pg/ holds a database: note it in DATA_DIR (written whole, or not at all), unless it is noted already. */
export async function markEmbeddedDir(dataDir: string, now: Date = new Date()): Promise<void> {
  const file = path.join(dataDir, EMBEDDED_MARKER);
  if ((await readMarker(file)) !== null || !(await holdsDatabase(path.join(dataDir, 'pg')))) return;
  const tmp = `${file}.${process.pid}.tmp`;
  const marker: Marker = { since: now.toISOString() };
  await writeFile(tmp, `${JSON.stringify({ ...marker, note: 'DATA_DIR/pg holds this gateway\'s embedded database: a start refuses while this file is here and pg/ is not' })}\n`, { mode: 0o600 });
  await rename(tmp, file);
}

/** A file's identity (removed and made again, it is another), gone, or not known now (a stat that failed otherwise). */
type Identity = { there: string } | 'gone' | 'unknown';

async function identity(file: string): Promise<Identity> {
  try {
    const st = await stat(file);
    return { there: `${st.dev}:${st.ino}:${st.birthtimeMs}` };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // a permission changed, no file handles left: not told as gone
    return code === 'ENOENT' || code === 'ENOTDIR' ? 'gone' : 'unknown';
  }
}

/**
 * Look at `pgDir` every `checkMs` (WATCHED): one of its parts gone, or another than the one opened, `onGone` is
 * told once; a part that cannot be looked at now (a permission) is not told. With `dataDir`, a marker removed
 * meanwhile is written again (`markEmbeddedDir`): a restart after a later loss would otherwise make an empty
 * database without a word. Answers the function that stops looking.
 */
export async function watchEmbeddedDir(
  pgDir: string,
  onGone: (message: string) => void,
  checkMs: number = EMBEDDED_CHECK_MS,
  dataDir?: string,
): Promise<(() => void) & { lookNow(): Promise<void> }> {
  // besides WATCHED: each database's directory (base/<oid>: the gateway's tables) and the control file, which
  // PostgreSQL writes in place (found by the probe of the first fix: rm -rf pg/base/5, rm pg/global/pg_control)
  const databases = (await entriesOf(path.join(pgDir, 'base'))).map((oid) => path.join('base', oid));
  const parts: readonly string[] = [...WATCHED, path.join('global', 'pg_control'), ...databases];
  const opened = await Promise.all(parts.map((part) => identity(path.join(pgDir, part))));
  let told = false;
  let looking = false;
  const look = async () => {
    const now = await Promise.all(parts.map((part) => identity(path.join(pgDir, part))));
    let change: { part: string; how: 'removed (or moved away)' | 'replaced' } | null = null;
    for (const [i, part] of parts.entries()) {
      const was = opened[i] as Identity;
      const is = now[i] as Identity;
      if (is === 'unknown' || typeof was !== 'object') continue;
      if (is === 'gone') change = { part, how: 'removed (or moved away)' };
      else if (is.there !== was.there) change = { part, how: 'replaced' };
      if (change !== null) break;
    }
    if (change === null) {
      // the marker read only when it is gone (a stat, not its file read every second)
      if (dataDir !== undefined && (await identity(path.join(dataDir, EMBEDDED_MARKER))) === 'gone') await markEmbeddedDir(dataDir).catch(() => undefined);
      return;
    }
    if (told) return;
    told = true;
    clearInterval(timer);
    const { part, how } = change;
    onGone(part === '.'
      ? `the embedded database's directory ${pgDir} was ${how} under the running gateway: nothing it accepts now could be kept`
      : `the embedded database's ${path.join(pgDir, part)} was ${how} under the running gateway: nothing it accepts now could be kept`);
  };
  const timer = setInterval(() => {
    if (looking) return;
    looking = true;
    void look().finally(() => (looking = false));
  }, checkMs);
  timer.unref();
  // the stop's last look, once no statement runs any more: a removal in the last second of a stop is told too
  // (found by the probe: pg/ removed right after a SIGTERM, the stop ended within the second, exit 0)
  const lookNow = async () => {
    clearInterval(timer);
    if (!told) await look();
  };
  return Object.assign(() => clearInterval(timer), { lookNow });
}

export async function startEmbeddedPostgres(dataDir: string, opts: { onGone?: (message: string) => void; checkMs?: number } = {}): Promise<EmbeddedPostgres> {
  const pgDir = path.join(dataDir, 'pg');
  const runDir = path.join(dataDir, 'run');
  await checkEmbeddedDir(dataDir);
  await mkdir(pgDir, { recursive: true, mode: 0o700 });
  await mkdir(runDir, { recursive: true, mode: 0o700 });
  await chmod(runDir, 0o700);
  const socketDir = await socketDirFor(dataDir, runDir);
  const socketPath = path.join(socketDir, SOCKET_NAME);
  // A socket file left by a killed process would make listen() fail.
  await rm(socketPath, { force: true });
  const existing = await holdsDatabase(pgDir);
  const db = await PGlite.create(pgDir).catch((err: unknown) => {
    if (!existing) throw err;
    // PGlite's own words for a database it cannot open are "Aborted()" or an errno object: name the directory
    throw new Error(`the embedded database in ${pgDir} could not be opened (${describe(err)}): its files may be damaged or incomplete (a part of it removed, or copied while a gateway ran); restore ${pgDir} from a backup taken with the gateway stopped`);
  });
  await markEmbeddedDir(dataDir);
  const { onGone } = opts;
  const watch = onGone ? await watchEmbeddedDir(pgDir, onGone, opts.checkMs, dataDir) : null;
  const server = new PGLiteSocketServer({ db, path: socketPath, maxConnections: 64 });
  await server.start();
  return {
    connection: { host: socketDir, port: SOCKET_PORT, user: 'postgres', database: 'postgres' },
    async stop() {
      await server.stop();
      await db.close();
      await watch?.lookNow();
      if (socketDir !== runDir) await rm(socketDir, { recursive: true, force: true });
    },
  };
}

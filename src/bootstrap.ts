/**
 * First-start duties: the admin token (generated into DATA_DIR when ADMIN_TOKEN is unset, mode 0600, shown
 * once), the data directory itself, and its lock (one process per DATA_DIR).
 */
import { createHash } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { BEARER_TOKEN_RULE, BEARER_TOKEN_TEXT } from './config.js';
import { newAdminToken } from './ids.js';
import { MAX_SOCKET_PATH } from './socket-path.js';

/**
 * Create DATA_DIR if need be. A path that cannot be a directory is told as such, naming the variable (found from
 * the outside: a DATA_DIR naming a file ended the start with a bare "EEXIST: file already exists, mkdir …").
 */
export async function ensureDataDir(dataDir: string): Promise<void> {
  try {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'EEXIST' || code === 'ENOTDIR'
      ? 'is not a directory (a file is in its way)'
      : code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
        ? `cannot be created or written by this user (${code})`
        : null;
    if (why === null) throw err;
    throw new Error(`DATA_DIR ${dataDir} ${why}: set DATA_DIR to a directory this process may write`, { cause: err });
  }
}

/** What a second process on the same DATA_DIR is told (it starts nothing). */
export const dataDirInUse = (dataDir: string) =>
  `another gateway process is using DATA_DIR ${dataDir}: stop it first, or give this one a DATA_DIR of its own`;

/** How often a held lock looks whether its socket files are still there (`lockDataDir`). */
export const LOCK_CHECK_MS = 1_000;

/** The held lock of a DATA_DIR: let go of it (the gateway's stop). */
export interface DataDirLock {
  release(): Promise<void>;
}

/**
 * One process per DATA_DIR: unix sockets bound and held while the gateway runs (bind is atomic, so of two
 * starts one gets each). A second process found the first one's embedded database and opened the same files,
 * removed its socket, and with a NODE_ID and a CLUSTER_SECRET of its own ran beside it: both owned the demo
 * instance and sent one idempotent request twice. A socket file nobody answers on is what a killed process left:
 * it is removed and bound again.
 *
 * Two sockets, both needed (`lockPaths`): one in DATA_DIR/run, one no file stands for (the only one where
 * DATA_DIR/run is too deep for a socket's path). Found from the outside: with one, `rm -rf DATA_DIR/run` (a
 * directory named like runtime leftovers) let a second start open the running one's embedded database, and a
 * symlink to a deep DATA_DIR, short enough for a socket in its run/, was another lock than the deep path's own;
 * the first process crashing then left the database unable to start ("Aborted()"). Both are named from the
 * directory itself now, and a held lock binds again, within LOCK_CHECK_MS, a socket whose file went away
 * (`onLost` is told if another process took it meanwhile: two gateways on one DATA_DIR).
 */
export async function lockDataDir(
  dataDir: string,
  opts: { checkMs?: number; onLost?: (message: string) => void } = {},
): Promise<DataDirLock> {
  await mkdir(path.join(dataDir, 'run'), { recursive: true, mode: 0o700 });
  const real = await realpath(dataDir);
  const files = lockPaths(real, await stat(real));
  const held: HeldSocket[] = [];
  try {
    for (const file of files) held.push(await bindLock(file, dataDir));
  } catch (err) {
    for (const h of held) await h.release();
    throw err;
  }
  let lostTold = false;
  const check = async () => {
    for (const [i, h] of held.entries()) {
      if (await h.stillOurs()) continue;
      try {
        if (!abstract(h.file)) await mkdir(path.dirname(h.file), { recursive: true, mode: 0o700 });
        held[i] = await bindLock(h.file, dataDir);
      } catch (err) {
        if (!lostTold) opts.onLost?.(`the lock of DATA_DIR ${dataDir} (${h.file}) was removed and another process holds it now: two gateways may be using the same DATA_DIR (${err instanceof Error ? err.message : String(err)})`);
        lostTold = true;
      }
    }
  };
  let checking: Promise<void> | null = null;
  const timer = setInterval(() => void (checking ??= check().finally(() => (checking = null))), opts.checkMs ?? LOCK_CHECK_MS);
  timer.unref();
  return {
    async release() {
      clearInterval(timer);
      await checking;
      for (const h of held) await h.release();
    },
  };
}

/** A lock socket bound by this process. */
interface HeldSocket {
  file: string;
  /** whether the file at `file` is still this socket's (not removed, not another process's) */
  stillOurs(): Promise<boolean>;
  release(): Promise<void>;
}

/** A socket file's identity: a file removed and made again may get the same inode, not the same change time. */
const identity = async (file: string): Promise<string | null> => {
  const st = await stat(file).catch(() => null);
  return st ? `${st.dev}:${st.ino}:${st.ctimeMs}` : null;
};

async function bindLock(file: string, dataDir: string): Promise<HeldSocket> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const server = net.createServer((socket) => socket.end());
    const bound = await new Promise<boolean>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(false) : reject(err)));
      server.listen(file, () => resolve(true));
    });
    if (bound) {
      server.unref();
      const id = abstract(file) ? null : await identity(file);
      const stillOurs = async () => abstract(file) || (id !== null && (await identity(file)) === id);
      return {
        file,
        stillOurs,
        async release() {
          // Closing a unix socket's server unlinks its path (libuv), whatever file is there by then: one whose
          // file went away (bound again, or another process's now) is left open, unreferenced, until the exit.
          if (await stillOurs()) await new Promise<void>((resolve) => server.close(() => resolve()));
        },
      };
    }
    if (await answers(file)) throw new Error(dataDirInUse(dataDir));
    if (!abstract(file)) await rm(file, { force: true });
  }
  throw new Error(dataDirInUse(dataDir));
}

/**
 * The lock sockets' names. In DATA_DIR/run where that fits a unix socket's path (libuv cuts a longer one short
 * without a word, so that the file lands elsewhere). And one no file stands for: on Linux in the abstract
 * namespace, named by DATA_DIR's device and inode (a symlink, a bind mount, another TMPDIR all name the same
 * directory; nothing can remove it; it ends with the process); elsewhere in the temporary directory under a hash of
 * the real path. Found from the outside: with the second socket in the temporary directory only, a DATA_DIR too deep
 * for run/ reached through a bind mount, or started with another TMPDIR, was another lock.
 */
export function lockPaths(realDataDir: string, dir: { dev: number; ino: number }): string[] {
  const beside = process.platform === 'linux'
    ? `\0mgw-data-dir-${dir.dev}-${dir.ino}`
    : path.join(os.tmpdir(), `mgw-${createHash('sha256').update(realDataDir).digest('hex').slice(0, 24)}.lock`);
  const inRun = path.join(realDataDir, 'run', 'gateway.lock');
  return Buffer.byteLength(inRun) <= MAX_SOCKET_PATH ? [inRun, beside] : [beside];
}
/** Whether `file` names a socket in the abstract namespace (no file: never removed, never bound again). */
const abstract = (file: string): boolean => file.startsWith('\0');

/** Whether a process listens on the unix socket `file`. */
function answers(file: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(file);
    const done = (v: boolean) => (socket.destroy(), resolve(v));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.setTimeout(2_000, () => done(true));
  });
}

/** What a start made for the operator to see once and has not shown yet (DATA_DIR/unshown.json). */
export interface UnshownState {
  /** the admin token in DATA_DIR/admin-token */
  adminToken?: true;
  /**
   * the demo instance whose link this node is to make: kept until a start finds it linked (the link lives in the
   * sandbox's journal, made when its session first starts, which may be after the banner)
   */
  demoInstanceId?: string;
  /**
   * the demo's key rows (api_keys ids, never a key) that starts here made and did not show: its key is stored
   * hashed only, so showing it means issuing a new one, and that only while these are its only active keys (not
   * one shown or made elsewhere since). Absent once the banner showed a key.
   */
  demoKeyIds?: string[];
}

/**
 * The secrets of the first start until its banner has shown them. Found by the outside README probe: the admin
 * token and the demo instance were made before the port was bound and shown only after, so a first start that
 * failed on a busy PORT (or a SIGTERM at the wrong moment) lost both for good, and the demo's link, held in memory
 * only, with them. What is made is written down here first (before the token file, in the demo's transaction),
 * and every start shows it again until one has shown it (`shown`, after the banner): the file names what,
 * never a secret.
 */
export class Unshown {
  private constructor(
    private readonly file: string,
    private state: UnshownState,
  ) {}

  static async read(dataDir: string): Promise<Unshown> {
    const file = path.join(dataDir, 'unshown.json');
    let raw: unknown = {};
    try {
      raw = JSON.parse(await readFile(file, 'utf8'));
    } catch (err) {
      // none: nothing to show again; unreadable as JSON (cut short): what it named is not known, start afresh
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && !(err instanceof SyntaxError)) throw err;
    }
    const state: UnshownState = {};
    if (typeof raw === 'object' && raw !== null) {
      const r = raw as Record<string, unknown>;
      if (r.adminToken === true) state.adminToken = true;
      if (typeof r.demoInstanceId === 'string') state.demoInstanceId = r.demoInstanceId;
      if (Array.isArray(r.demoKeyIds) && r.demoKeyIds.every((k): k is string => typeof k === 'string')) state.demoKeyIds = r.demoKeyIds;
    }
    return new Unshown(file, state);
  }

  get adminToken(): boolean {
    return this.state.adminToken === true;
  }

  get demoInstanceId(): string | null {
    return this.state.demoInstanceId ?? null;
  }

  /** the demo's key rows made here and not shown (empty: its key was shown, only its link is left to make) */
  get demoKeyIds(): readonly string[] {
    return this.state.demoKeyIds ?? [];
  }

  /** Write down what is made and not shown yet. */
  set(patch: UnshownState): void {
    this.save({ ...this.state, ...patch });
  }

  /** Forget the demo instance named (it is gone, linked, or its key was replaced elsewhere). */
  dropDemo(): void {
    const { demoInstanceId: _gone, demoKeyIds: _keys, ...rest } = this.state;
    this.save(rest);
  }

  /**
   * Replaced whole (a temporary file renamed over it), so never half written; removed when it names nothing.
   * Synchronous: a few bytes, at a start and at the banner's moment.
   */
  private save(next: UnshownState): void {
    if (next.adminToken === undefined && next.demoInstanceId === undefined) rmSync(this.file, { force: true });
    else {
      writeFileSync(`${this.file}.tmp`, `${JSON.stringify(next)}\n`, { mode: 0o600 });
      renameSync(`${this.file}.tmp`, this.file);
    }
    this.state = next;
  }

  /**
   * Called once the banner has shown them: what was shown is not shown again. Synchronous (the banner's moment).
   * The demo's link stays noted (`demoInstanceId`) until a start finds it made: a kill right after the banner,
   * before the demo's session first started, would lose it otherwise.
   */
  shown(what: { adminToken: boolean; demo: boolean }): void {
    const rest: UnshownState = {};
    if (this.state.adminToken && !what.adminToken) rest.adminToken = true;
    if (this.state.demoInstanceId !== undefined) rest.demoInstanceId = this.state.demoInstanceId;
    if (this.state.demoKeyIds !== undefined && !what.demo) rest.demoKeyIds = this.state.demoKeyIds;
    this.save(rest);
  }
}

/**
 * The admin token and whether it is to be shown: generated by this call, or by an earlier start that did not get
 * to show it (`unshown`). Then, and only then, the banner shows it.
 */
export async function resolveAdminToken(dataDir: string, fromEnv: string | undefined, unshown?: Unshown): Promise<{ token: string; generated: boolean }> {
  if (fromEnv) return { token: fromEnv, generated: false };
  const file = path.join(dataDir, 'admin-token');
  try {
    const token = (await readFile(file, 'utf8')).trim();
    if (BEARER_TOKEN_RULE.test(token)) return { token, generated: unshown?.adminToken ?? false };
    // written by hand with characters a bearer token cannot hold: it could never be used (never overwritten)
    if (token.length >= 16) throw new Error(`the admin token in ${file} ${BEARER_TOKEN_TEXT}; correct it, or delete the file to have one generated`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    // first start: generate below
  }
  const token = newAdminToken();
  // written down first: a start that ends between the two still shows the token next time
  unshown?.set({ adminToken: true });
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  return { token, generated: true };
}

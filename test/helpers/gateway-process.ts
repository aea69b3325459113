/**
 * The gateway (or another long-running command of this repository) as a child process, as the e2e tests and
 * the crash checker run it: spawned with its output kept, awaited until its output says where it listens
 * (failing with that output if it exits first or is not ready in time), stopped with a signal and awaited.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface StartOptions {
  /** default: this node running the gateway from source (TS_IMPORT, then src/main.ts in the repository) */
  command?: string;
  args?: string[];
  cwd?: string;
  env: NodeJS.ProcessEnv;
  /** in a process group of its own, as a command started from a terminal */
  detached?: boolean;
  /** the URL it listens on once its output says so, else null; default: the gateway's banner */
  ready?: (out: string) => string | null;
  /** default 30 s; a process not ready by then is SIGKILLed */
  startTimeoutMs?: number;
  /** keep only the last this many characters of its output (default: all of it) */
  tailChars?: number;
}

export interface RunningProcess {
  proc: ChildProcess;
  url: string;
  /** its stdout and stderr as they came (the last `tailChars` of them if that was given) */
  output(): string;
  /** resolves once the process is gone */
  exited: Promise<Exit>;
  /** true once the process ended although nobody killed it through kill() */
  crashed(): boolean;
  /** send `signal` (unless it is gone already) and wait until it is gone */
  kill(signal: NodeJS.Signals): Promise<Exit>;
}

/**
 * How a child process runs this repository's TypeScript: `npm test`'s loader (scripts/ts-loader, reading the run's
 * compiled cache) when the tests run under it, else tsx, as `npm start` does. The gateway's code is the same either
 * way; only the start is cheaper (about a second of CPU a process less than tsx on a two-core machine).
 */
export const TS_IMPORT: string[] = ['--import', process.env.MGW_TS_LOADER ?? 'tsx'];

/** The gateway's banner (src/run-main.ts) names where it listens. */
export const gatewayListening = (out: string): string | null => /messaging gateway listening on (http:\/\/\S+)/.exec(out)?.[1] ?? null;

/** Spawn a process and wait until `ready` finds its URL in its output. */
export async function startProcess(opts: StartOptions): Promise<RunningProcess> {
  const command = opts.command ?? process.execPath;
  const args = opts.args ?? (opts.command === undefined ? [...TS_IMPORT, 'src/main.ts'] : []);
  const what = [command === process.execPath ? 'node' : command, ...args].join(' ');
  const ready = opts.ready ?? gatewayListening;
  const startTimeoutMs = opts.startTimeoutMs ?? 30_000;
  const proc = spawn(command, args, { cwd: opts.cwd ?? ROOT, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'], detached: opts.detached ?? false });

  let out = '';
  let killed = false;
  let gone = false;
  const exited = new Promise<Exit>((resolve) => {
    proc.once('exit', (code, signal) => {
      gone = true;
      resolve({ code, signal });
    });
    // not started at all (e.g. no such command): there will be no 'exit'
    proc.once('error', (err) => {
      gone = true;
      out += `\n${String(err)}`;
      resolve({ code: null, signal: null });
    });
  });
  const kill = async (signal: NodeJS.Signals): Promise<Exit> => {
    killed = true;
    if (!gone) proc.kill(signal);
    return exited;
  };

  const url = await new Promise<string>((resolve, reject) => {
    let found: string | null = null;
    const limit = setTimeout(() => {
      reject(new Error(`${what} was not ready within ${startTimeoutMs} ms:\n${out}`));
      void kill('SIGKILL');
    }, startTimeoutMs);
    const onData = (chunk: string) => {
      out += chunk;
      if (opts.tailChars !== undefined) out = out.slice(-opts.tailChars);
      if (found !== null) return;
      found = ready(out);
      if (found !== null) {
        clearTimeout(limit);
        resolve(found);
      }
    };
    for (const stream of [proc.stdout, proc.stderr]) {
      stream?.setEncoding('utf8');
      stream?.on('data', onData);
    }
    void exited.then((how) => {
      clearTimeout(limit);
      reject(new Error(`${what} ended (${how.signal ?? `code ${String(how.code)}`}) before it was ready:\n${out}`));
    });
  });
  return { proc, url, output: () => out, exited, crashed: () => gone && !killed, kill };
}

export interface SandboxedGateway {
  /** 0 (the default): any free port; a fixed one lets clients find every restarted gateway where the last one was */
  port?: number;
  dataDir: string;
  databaseUrl: string;
  /** the sandbox network's URL (SANDBOX), a server of its own that outlives the gateway */
  sandboxUrl: string;
  adminToken: string;
  /** more variables for the gateway */
  env?: Record<string, string>;
  /** modules of this repository loaded before the gateway (`--import`), e.g. test/helpers/standin-network.ts */
  preload?: string[];
}

/** The gateway from source on loopback against a database and an external sandbox network, no demo instance. */
export function startSandboxedGateway(gw: SandboxedGateway, opts: Pick<StartOptions, 'startTimeoutMs' | 'tailChars'> = {}): Promise<RunningProcess> {
  return startProcess({
    ...opts,
    args: [...TS_IMPORT, ...(gw.preload ?? []).flatMap((m) => ['--import', `./${m}`]), 'src/main.ts'],
    env: {
      ...process.env,
      PORT: String(gw.port ?? 0),
      HOST: '127.0.0.1',
      DATA_DIR: gw.dataDir,
      DATABASE_URL: gw.databaseUrl,
      SANDBOX: gw.sandboxUrl,
      ADMIN_TOKEN: gw.adminToken,
      DEMO_INSTANCE: 'false',
      LOG_LEVEL: 'warn',
      ...gw.env,
    },
  });
}

/** The variables that point a gateway somewhere, and those of the test run and of the npm running it. */
const NOT_INHERITED = new Set(['DATABASE_URL', 'TEST_DATABASE_URL', 'ADMIN_TOKEN', 'SANDBOX', 'DEMO_INSTANCE', 'HOST', 'PORT', 'DATA_DIR', 'NODE_TEST_CONTEXT', 'NODE_OPTIONS', 'INIT_CWD']);

/** The environment of a user's clean shell: this process's, less NOT_INHERITED and npm's `npm_*`. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!NOT_INHERITED.has(k) && !k.toLowerCase().startsWith('npm_')) env[k] = v;
  return env;
}

/** The first port of the kernel's range for the local end of outgoing connections (and for `listen(0)`). */
function ephemeralFloor(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 0 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

/** Where freePort draws from: under the ephemeral range, 12,000 ports at most, from 1,024 at least. */
const PICK_CEILING = ephemeralFloor();
const PICK_FLOOR = Math.max(1_024, PICK_CEILING - 12_000);

/** Whether a server can listen on `port` of the loopback interface now. */
async function bindable(port: number): Promise<boolean> {
  const s = net.createServer();
  const ok = await new Promise<boolean>((resolve) => s.once('error', () => resolve(false)).listen(port, '127.0.0.1', () => resolve(true)));
  if (ok) await new Promise<void>((resolve) => s.close(() => resolve()));
  return ok;
}

/**
 * A port that nobody listens on right now on the loopback interface (bound, then released), for a process the test
 * starts later. Drawn at random from under the kernel's ephemeral range: a port of that range (what `listen(0)`
 * gives) is also the local end of any outgoing connection, and one made by another test file in the time between
 * the release and the process's own bind took it (seen: a node of test/e2e/cluster.test.ts refused to start, its
 * port in use). Under the range only another test's pick can take it, one chance in thousands, and never by being
 * handed out by the kernel.
 */
export async function freePort(): Promise<number> {
  if (PICK_CEILING - PICK_FLOOR >= 1_000) {
    for (let i = 0; i < 50; i++) {
      const port = PICK_FLOOR + Math.floor(Math.random() * (PICK_CEILING - PICK_FLOOR));
      if (await bindable(port)) return port;
    }
  }
  const s = net.createServer();
  await new Promise<void>((resolve, reject) => s.once('error', reject).listen(0, '127.0.0.1', () => resolve()));
  const { port } = s.address() as net.AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** One JSON request to a running gateway with a bearer token (an API key or the admin token). */
export async function callGateway(url: string, key: string, method: string, route: string, body?: unknown) {
  const res = await fetch(url + route, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as { success: boolean; data: Record<string, unknown> } };
}

/** A gateway's answer with its envelope and its text (for an assertion's message). */
export interface GatewayAnswer {
  status: number;
  body: { success?: boolean; data?: Record<string, unknown>; code?: string; error?: string };
  text: string;
}

/**
 * One JSON request to a gateway process with a bearer token, bounded by `timeoutMs` when given (a request that
 * may wait through a stop is not).
 */
export async function requestGateway(url: string, token: string, method: string, route: string, body?: unknown, timeoutMs?: number): Promise<GatewayAnswer> {
  const res = await fetch(url + route, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    ...(timeoutMs !== undefined ? { signal: AbortSignal.timeout(timeoutMs) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as GatewayAnswer['body'], text };
}

/**
 * `f`'s first answer that is neither null nor false, asked every `pollMs` of real time (processes, not a clock of
 * ours) for at most `maxMs`; a failed ask is asked again, and named if the wait times out.
 */
export async function until<T>(what: string, f: () => Promise<T | null | false>, maxMs = 60_000, pollMs = 100): Promise<T> {
  const end = Date.now() + maxMs;
  let last: unknown = null;
  while (Date.now() < end) {
    try {
      const v = await f();
      if (v !== null && v !== false) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

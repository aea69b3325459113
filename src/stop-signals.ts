/**
 * What stops a long-running process of ours (the gateway, `mgw sandbox`) gracefully: SIGTERM, SIGINT, and —
 * when it was launched through npm — its parent going away. (SIGHUP keeps its default: a handler would undo
 * `nohup`.)
 *
 * Why the parent: npm runs a script through `sh -c` and forwards SIGTERM/SIGINT only to that shell; dash
 * neither execs the command nor passes the signal on (on SIGTERM it dies, on SIGINT it waits), so the gateway
 * would be left serving. The start script therefore `exec`s node (npm → node: npm's forwarded signal reaches
 * it), and as a safety net for every other launch through npm (`npx mgw …`, a SIGKILLed npm) a process started
 * by npm (it sets `npm_command`) watches its parent pid and stops gracefully once it has been re-parented.
 * A process started directly (`node …`, a service manager, a container's init) is not watched: the signals
 * reach it there, and `nohup node … &` must survive its shell.
 */

export interface StopOptions {
  env?: NodeJS.ProcessEnv;
  /** how often the parent is checked (ms) */
  parentCheckMs?: number;
  /** called on a second signal while stopping (the user insists): default exits at once with 130 */
  onForce?: () => void;
  /** the clock of FORCE_AFTER_MS (tests); default Date.now */
  now?: () => number;
}

/**
 * A signal this soon after the first is the same request delivered twice, not a user insisting: Ctrl-C in a
 * terminal signals the whole foreground process group, so a gateway under `npm start` gets SIGINT from the
 * terminal and again from npm, which forwards it, a few milliseconds apart. Found from the outside: Ctrl-C on
 * `npm start` exited 130 at once instead of stopping gracefully with 0.
 */
export const FORCE_AFTER_MS = 1_000;

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * Who launched this process: the pid `npm start` hands over (`launcherOf`), else the parent it had when this
 * module was first evaluated, as early as a process of ours gets (src/main.ts imports it before it loads the
 * gateway's modules, seconds under tsx). Found from the outside: read once those had loaded, an npm SIGKILLed in
 * the meantime was no parent any more (the process already belonged to init), and the gateway started and served
 * on, its port and DATA_DIR held, with no one to stop it.
 */
const launchedBy = launcherOf(process.env) ?? process.ppid;

/**
 * The launcher's pid as `npm start` hands it over (package.json: `MGW_LAUNCHED_BY=$PPID`, the shell's parent, npm,
 * read before node even starts): found by the probe of the fix, an npm SIGKILLed within the first second, while
 * node and tsx were still starting, left the gateway serving with init already its parent by then. Taken out of
 * the environment at once, so that no process this one starts takes it for its own launcher.
 */
function launcherOf(env: NodeJS.ProcessEnv): number | null {
  const given = env.MGW_LAUNCHED_BY;
  delete env.MGW_LAUNCHED_BY;
  return given !== undefined && /^[1-9]\d{0,9}$/.test(given) ? Number(given) : null;
}

/** How often the parent is checked (ms), by default. */
const PARENT_CHECK_MS = 500;

/** Whether this process was launched by npm (or asked explicitly) and should stop with its parent. */
export function stopsWithParent(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.MGW_STOP_WITH_PARENT === '0') return false;
  return env.MGW_STOP_WITH_PARENT === '1' || env.npm_command !== undefined || env.npm_lifecycle_event !== undefined;
}

/**
 * Call `stop(reason)` once on the first stop request; a second signal (FORCE_AFTER_MS or more after it) forces
 * an immediate exit.
 * Returns a function that removes the handlers (tests, or a process that stopped by itself), with `request`: a
 * stop the process asks of itself (it cannot go on), which counts as the first request as a signal would.
 */
export function onStopRequest(stop: (reason: string) => void, opts: StopOptions = {}): (() => void) & { request(reason: string): void } {
  const now = opts.now ?? Date.now;
  let requestedAt: number | null = null;
  const request = (reason: string) => {
    if (requestedAt !== null) return;
    requestedAt = now();
    stop(reason);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (requestedAt === null) return request(signal);
    if (now() - requestedAt < FORCE_AFTER_MS) return;
    if (opts.onForce) opts.onForce();
    else process.exit(130);
  };
  for (const s of SIGNALS) process.on(s, onSignal);

  let timer: NodeJS.Timeout | null = null;
  if (stopsWithParent(opts.env ?? process.env)) {
    timer = setInterval(() => {
      // re-parented (to init or a subreaper): whoever started us is gone
      if (process.ppid !== launchedBy) request('parent exited');
    }, opts.parentCheckMs ?? PARENT_CHECK_MS);
    timer.unref();
  }
  const remove = () => {
    for (const s of SIGNALS) process.off(s, onSignal);
    if (timer) clearInterval(timer);
  };
  return Object.assign(remove, { request });
}

/**
 * `load()` (the dynamic import of a process's modules) with SIGTERM and SIGINT heard while it runs: a signal then
 * ends the process at once with 0, saying so on stderr; nothing was started yet, so there is nothing to stop.
 * Loading the gateway's modules takes seconds under tsx (4–5 s on a slow machine), and before this a signal in
 * that time killed the process with the default signal (exit 143, no line: found from the outside).
 *
 * Once `load` settles the handlers do nothing, and stay: whoever runs next installs its own (onStopRequest).
 * Removed instead, the signal's listeners fell to none for a moment before the next one was installed, and a
 * SIGTERM in the second after (as the embedded PostgreSQL began to start) was lost: no stop, the start went on
 * (seen here three times of three, 1.2–1.8 s after the launch; the cause inside node was not found).
 */
export async function loadStoppably<T>(what: string, load: () => Promise<T>): Promise<T> {
  let loading = true;
  const early = (signal: NodeJS.Signals) => {
    if (!loading) return;
    process.stderr.write(`stopped by ${signal} while loading ${what}: nothing was started\n`);
    process.exit(0);
  };
  for (const s of SIGNALS) process.on(s, early);
  // launched through npm and npm gone while loading (SIGKILLed): nothing was started yet either
  const orphaned = stopsWithParent()
    ? setInterval(() => {
      if (!loading || process.ppid === launchedBy) return;
      process.stderr.write(`stopped while loading ${what}: the process that launched it exited; nothing was started\n`);
      process.exit(0);
    }, PARENT_CHECK_MS)
    : null;
  orphaned?.unref();
  try {
    return await load();
  } finally {
    loading = false;
    if (orphaned) clearInterval(orphaned);
  }
}

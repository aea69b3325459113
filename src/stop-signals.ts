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
}

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** Whether this process was launched by npm (or asked explicitly) and should stop with its parent. */
export function stopsWithParent(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.MGW_STOP_WITH_PARENT === '0') return false;
  return env.MGW_STOP_WITH_PARENT === '1' || env.npm_command !== undefined || env.npm_lifecycle_event !== undefined;
}

/**
 * Call `stop(reason)` once on the first stop request; a second signal forces an immediate exit.
 * Returns a function that removes the handlers (tests, or a process that stopped by itself).
 */
export function onStopRequest(stop: (reason: string) => void, opts: StopOptions = {}): () => void {
  let requested = false;
  const request = (reason: string) => {
    if (requested) return;
    requested = true;
    stop(reason);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (requested) {
      if (opts.onForce) opts.onForce();
      else process.exit(130);
      return;
    }
    request(signal);
  };
  for (const s of SIGNALS) process.on(s, onSignal);

  let timer: NodeJS.Timeout | null = null;
  if (stopsWithParent(opts.env ?? process.env)) {
    const parent = process.ppid;
    timer = setInterval(() => {
      // re-parented (to init or a subreaper): whoever started us is gone
      if (process.ppid !== parent) request('parent exited');
    }, opts.parentCheckMs ?? 500);
    timer.unref();
  }
  return () => {
    for (const s of SIGNALS) process.off(s, onSignal);
    if (timer) clearInterval(timer);
  };
}

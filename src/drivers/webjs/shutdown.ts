/**
 * Ending a session's browser for good: close it gracefully (Chromium flushes the profile, i.e. the link),
 * then SIGKILL whatever of the session still runs (processes.ts). A launch still under way may start its
 * browser after the first sweep, so the start is awaited (bounded) and swept again.
 */
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { LibClient } from './library.js';
import { settleWithin } from './outcome.js';
import { killSessionBrowser, waitGone } from './processes.js';

const KILL_WAIT_MS = 5_000;

export interface ShutdownInput {
  client: LibClient | null;
  userDataDir: string;
  /** The browser's main process, if the watch learned it. */
  leaderPid: number | null;
  /** The library's start, settled either way; null when it never began. */
  started: Promise<void> | null;
  /** False while the library may still be launching the browser. */
  browserSeen: boolean;
  closeTimeoutMs: number;
  clock: Clock;
  log: Logger;
}

export async function shutdownBrowser(input: ShutdownInput): Promise<void> {
  // The kill is what prevents orphans: it must finish even if nothing else keeps the process alive
  // (the clock's timers are unref'd).
  const keepAlive = setInterval(() => undefined, 60_000);
  try {
    await steps(input);
  } finally {
    clearInterval(keepAlive);
  }
}

async function steps({ client, userDataDir, leaderPid, started, browserSeen, closeTimeoutMs, clock, log }: ShutdownInput): Promise<void> {
  const leader = (): number | null => leaderPid ?? client?.pupBrowser?.process()?.pid ?? null;
  if (client) await settleWithin(Promise.resolve().then(() => client.destroy()), closeTimeoutMs, clock);
  const killed = killSessionBrowser(userDataDir, leader());
  if (started && !browserSeen) {
    await settleWithin(started, closeTimeoutMs, clock);
    killed.push(...killSessionBrowser(userDataDir, leader()));
  }
  if (killed.length > 0) log.info({ pids: killed }, 'killed browser processes');
  if (!(await waitGone(userDataDir, killed, clock, KILL_WAIT_MS))) {
    log.error({ userDataDir }, 'browser processes survived SIGKILL');
  }
  client?.removeAllListeners();
}

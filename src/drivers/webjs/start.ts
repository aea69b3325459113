/**
 * The steps around a session's start (session.ts runs them from initialize()): clearing a browser left by an
 * earlier run, building the library's client (Chromium must be there), and watching for the browser the
 * library launches in the middle of its own initialize().
 */
import { existsSync } from 'node:fs';
import type { Clock, TimerHandle } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { BrowserWatch } from './browser.js';
import { realClientFactory, type LibClient } from './library.js';
import { clientOptions, DEFAULT_CHROME_PATH, type SessionPaths, type WebjsDriverOptions } from './options.js';
import { describeError } from './outcome.js';
import { killSessionBrowser, waitGone } from './processes.js';

const BROWSER_POLL_MS = 100;
const KILL_WAIT_MS = 5_000;

/** A browser left by an earlier run of the gateway would hold this profile's lock: kill it and wait for it to go. */
export async function clearStaleBrowser(userDataDir: string, clock: Clock, log: Logger): Promise<void> {
  const stale = killSessionBrowser(userDataDir, null);
  if (stale.length === 0) return;
  log.warn({ pids: stale }, 'killed a browser left over from an earlier run');
  await waitGone(userDataDir, stale, clock, KILL_WAIT_MS);
}

/** The library's client for this session, or why the start failed before the library was asked anything. */
export function buildClient(opts: WebjsDriverOptions, paths: SessionPaths): { client: LibClient } | { failure: string } {
  const chromePath = opts.chromePath ?? DEFAULT_CHROME_PATH;
  if (!opts.clientFactory && !existsSync(chromePath)) return { failure: `start failed: no Chromium at ${chromePath} (set CHROME_PATH)` };
  try {
    return { client: (opts.clientFactory ?? realClientFactory)(clientOptions(opts, paths)) };
  } catch (err) {
    return { failure: `start failed: ${describeError(err)}` };
  }
}

/**
 * Attaching the browser watch to the library's browser. The library sets `pupBrowser` in the middle of its
 * initialize(): while the session starts, poll for it and watch from that moment on.
 */
export class BrowserAttacher {
  private timer: TimerHandle | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly watch: BrowserWatch,
    private readonly client: () => LibClient | null,
    private readonly phase: () => string,
  ) {}

  /** Watch the browser if the library has launched it, the session is starting or running and no watch is on. */
  attach(): void {
    const browser = this.client()?.pupBrowser;
    if (!browser || this.watch.isAttached()) return;
    const phase = this.phase();
    if (phase === 'starting' || phase === 'running') this.watch.attach(browser, this.client()?.pupPage ?? null);
  }

  startPolling(): void {
    this.stopPolling();
    if (this.phase() !== 'starting' || this.watch.isAttached()) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      this.attach();
      this.startPolling();
    }, BROWSER_POLL_MS);
  }

  stopPolling(): void {
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
  }
}

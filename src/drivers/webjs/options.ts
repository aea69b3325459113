/**
 * What a webjs driver is configured with, and the whatsapp-web.js Client options that follow from it.
 *
 * Disk layout under DATA_DIR:
 *   sessions/session-<instanceId>/   the Chromium profile = the link (LocalAuth); deleting it unlinks
 *   sessions/RemoteAuth-<instanceId>/  the profile with WEBJS_AUTH=postgres (RemoteAuth): restored from
 *                                    PostgreSQL (pg-auth-store.ts) at each start, backed up there while linked
 *   wwebjs-cache/<version>.html      WhatsApp Web's index page as last loaded (LocalWebCache)
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Clock } from '../../clock.js';
import type { WebjsBlockable } from '../../config.js';
import type { Logger } from '../../log.js';
import type { Pool } from '../../store/pool.js';
import type { DriverOptions } from '../contract.js';
import { webjsLibrary, type LibClientFactory, type LibClientOptions } from './library.js';
import { blockResources, withPageSetup } from './page-blocking.js';
import { PgAuthStore } from './pg-auth-store.js';

/**
 * Where a session's link is kept: `local`, the Chromium profile under DATA_DIR (LocalAuth; one node), or
 * `postgres`, RemoteAuth with the PostgreSQL store (any node resumes the link; WEBJS_AUTH=postgres).
 */
export type WebjsAuth =
  | { kind: 'local' }
  | {
      kind: 'postgres';
      pool: Pool;
      /** RemoteAuth's backup period while linked; RemoteAuth accepts 60000 and more. */
      backupSyncIntervalMs?: number;
    };

export interface WebjsDriverOptions extends DriverOptions {
  /** CHROME_PATH: the system Chromium (puppeteer never downloads one). */
  chromePath?: string;
  /** Extra Chromium switches (WEBJS_CHROME_ARGS), e.g. `--proxy-server=…`; after the driver's own. */
  chromeArgs?: readonly string[];
  /** Resource types WhatsApp Web's page may not load (WEBJS_BLOCK_RESOURCES; page-blocking.ts). Default none. */
  blockResources?: readonly WebjsBlockable[];
  /** Pin a WhatsApp Web version (library default otherwise). */
  webVersion?: string;
  /** The library's wait for WhatsApp Web to load in the page (its `authTimeoutMs`). */
  authTimeoutMs?: number;
  /** Backstop for initialize(): launch + page load + library injection. */
  startTimeoutMs?: number;
  probeIntervalMs?: number;
  probeTimeoutMs?: number;
  /** Failed probes in a row that count as a dead (hung) browser. */
  maxProbeFailures?: number;
  /** How long a graceful browser close may take before the processes are killed. */
  closeTimeoutMs?: number;
  clock?: Clock;
  logger?: Logger;
  /** Where the link is kept (default local). */
  auth?: WebjsAuth;
  /**
   * Start in pairing mode: the library asks for a pairing code for this number while it starts (and renews it),
   * instead of showing QR codes. whatsapp-web.js 1.34 delivers a code reliably only this way.
   */
  pairWithPhoneNumber?: { phoneNumber: string; showNotification?: boolean };
  /** The whatsapp-web.js Client constructor; tests pass a stand-in for the network. */
  clientFactory?: LibClientFactory;
}

export const DEFAULT_CHROME_PATH = '/usr/bin/chromium';

/**
 * Headless, no sandbox (containers), no GPU, none of Chromium's own background traffic, and none of the
 * processes a gateway's page never uses (docs/webjs.md "Resource use" has the measurements):
 *   - WebUIOmniboxPopup, WebUIOmniboxAimPopup: headless Chromium preloads the address bar's popup (browser UI
 *     in a renderer of its own, the largest after the page's) although no address bar is ever shown;
 *   - SpareRendererForSitePerProcess: a renderer kept started for the next navigation, which never comes;
 *   - --disable-software-rasterizer: no SwiftShader (software WebGL) in the GPU process; 2D canvas (the QR
 *     code) is drawn without it.
 * puppeteer merges the `--disable-features` list with its own.
 */
export const CHROME_ARGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,SpareRendererForSitePerProcess',
  '--disable-software-rasterizer',
];

export const DEFAULTS = {
  authTimeoutMs: 60_000,
  startTimeoutMs: 120_000,
  probeIntervalMs: 30_000,
  probeTimeoutMs: 10_000,
  maxProbeFailures: 3,
  closeTimeoutMs: 10_000,
  /** RemoteAuth's backup of a linked session to PostgreSQL (its own minimum is 60 s). */
  backupSyncIntervalMs: 300_000,
} as const;

/** RemoteAuth refuses a shorter backup period. */
export const MIN_BACKUP_SYNC_INTERVAL_MS = 60_000;

export interface SessionPaths {
  sessionsDir: string;
  /** The Chromium profile; also the unique marker of this session's processes (processes.ts). */
  userDataDir: string;
  webCacheDir: string;
}

/**
 * The paths the auth strategy itself derives: `path.resolve(dataPath)` + `session-<clientId>` (LocalAuth) or
 * `RemoteAuth-<clientId>` (RemoteAuth).
 */
export function sessionPaths(dataDir: string, instanceId: string, auth: WebjsAuth['kind'] = 'local'): SessionPaths {
  const root = path.resolve(dataDir);
  const sessionsDir = path.join(root, 'sessions');
  return {
    sessionsDir,
    userDataDir: path.join(sessionsDir, `${auth === 'postgres' ? 'RemoteAuth' : 'session'}-${instanceId}`),
    webCacheDir: path.join(root, 'wwebjs-cache'),
  };
}

/**
 * Remove the session's link kept here: the profile on disk and, with WEBJS_AUTH=postgres, the copy in
 * PostgreSQL (also when the library's own logout did not run or timed out).
 */
export async function forgetLink(o: WebjsDriverOptions, paths: SessionPaths): Promise<void> {
  await rm(paths.userDataDir, { recursive: true, force: true, maxRetries: 4 });
  const auth = o.auth;
  if (auth?.kind === 'postgres') {
    await new PgAuthStore({ pool: auth.pool, dataPath: paths.sessionsDir }).delete({ session: `RemoteAuth-${o.instanceId}` });
  }
}

/** LocalAuth accepts only these characters in a client id. */
export function isValidClientId(instanceId: string): boolean {
  return /^[-_\w]+$/i.test(instanceId);
}

export function clientOptions(o: WebjsDriverOptions, paths: SessionPaths): LibClientOptions {
  const options: LibClientOptions = {
    authStrategy: authStrategy(o, paths),
    authTimeoutMs: o.authTimeoutMs ?? DEFAULTS.authTimeoutMs,
    webVersionCache: { type: 'local', path: paths.webCacheDir },
    puppeteer: {
      executablePath: o.chromePath ?? DEFAULT_CHROME_PATH,
      headless: true,
      args: [...CHROME_ARGS, ...(o.chromeArgs ?? [])],
      // The gateway owns the process signals and destroys its drivers on shutdown; puppeteer's own SIGINT
      // handler would call process.exit(). Its exit hook still kills browsers if the process ends abruptly.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    },
  };
  if (o.webVersion !== undefined) options.webVersion = o.webVersion;
  if (o.pairWithPhoneNumber) options.pairWithPhoneNumber = { showNotification: true, ...o.pairWithPhoneNumber };
  return options;
}

/**
 * The library's auth strategy for the configured WebjsAuth (clientId is the instance id either way), with the
 * page's resource blocking installed from it when any is configured.
 */
function authStrategy(o: WebjsDriverOptions, paths: SessionPaths): NonNullable<LibClientOptions['authStrategy']> {
  const strategy = linkStrategy(o, paths);
  const blocked = o.blockResources ?? [];
  return blocked.length === 0 ? strategy : withPageSetup(strategy, (page) => blockResources(page, blocked));
}

function linkStrategy(o: WebjsDriverOptions, paths: SessionPaths): NonNullable<LibClientOptions['authStrategy']> {
  const auth = o.auth ?? { kind: 'local' };
  const { LocalAuth, RemoteAuth } = webjsLibrary();
  if (auth.kind === 'local') return new LocalAuth({ clientId: o.instanceId, dataPath: paths.sessionsDir });
  return new RemoteAuth({
    clientId: o.instanceId,
    dataPath: paths.sessionsDir,
    store: new PgAuthStore({ pool: auth.pool, dataPath: paths.sessionsDir }),
    backupSyncIntervalMs: auth.backupSyncIntervalMs ?? DEFAULTS.backupSyncIntervalMs,
  });
}

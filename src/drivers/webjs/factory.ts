/**
 * The runtime's DriverFactory for webjs instances. `base` carries what comes from the configuration
 * (chromePath from CHROME_PATH, the auth from WEBJS_AUTH, clock, logger, timeouts); the runtime adds
 * instanceId, dataDir and callTimeoutMs per instance.
 */
import type { Config } from '../../config.js';
import type { Pool } from '../../store/pool.js';
import type { DriverFactory } from '../contract.js';
import { WebjsDriver } from './driver.js';
import { forgetLink, isValidClientId, MIN_BACKUP_SYNC_INTERVAL_MS, sessionPaths, type WebjsAuth, type WebjsDriverOptions } from './options.js';

export function webjsDriverFactory(base: Partial<WebjsDriverOptions> = {}): DriverFactory {
  const backup = base.auth?.kind === 'postgres' ? base.auth.backupSyncIntervalMs : undefined;
  if (backup !== undefined && !(Number.isInteger(backup) && backup >= MIN_BACKUP_SYNC_INTERVAL_MS)) {
    throw new RangeError(`backupSyncIntervalMs must be an integer of at least ${MIN_BACKUP_SYNC_INTERVAL_MS} (RemoteAuth's minimum)`);
  }
  return (opts) => new WebjsDriver({ ...base, ...opts });
}

/** WEBJS_AUTH: `local` keeps each link in its Chromium profile, `postgres` in the gateway's database. */
export function webjsAuthFor(mode: Config['WEBJS_AUTH'], pool: Pool): WebjsAuth {
  return mode === 'postgres' ? { kind: 'postgres', pool } : { kind: 'local' };
}

/**
 * An instance deleted: its link kept by this node removed, as a logout removes it (its Chromium profile in
 * DATA_DIR/sessions and, with WEBJS_AUTH=postgres, its copy in the database). Its driver has stopped by then.
 * Found from the outside: a deleted instance's profile stayed on disk. The phone lists the device until the
 * network drops it (a logout before the delete removes it there too).
 */
export async function forgetWebjsLink(base: Partial<WebjsDriverOptions>, dataDir: string, instanceId: string): Promise<void> {
  if (!isValidClientId(instanceId)) return;
  await forgetLink({ ...base, instanceId, dataDir, callTimeoutMs: 0 }, sessionPaths(dataDir, instanceId, base.auth?.kind ?? 'local'));
}

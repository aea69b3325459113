/**
 * The runtime's DriverFactory for webjs instances. `base` carries what comes from the configuration
 * (chromePath from CHROME_PATH, the auth from WEBJS_AUTH, clock, logger, timeouts); the runtime adds
 * instanceId, dataDir and callTimeoutMs per instance.
 */
import type { Config } from '../../config.js';
import type { Pool } from '../../store/pool.js';
import type { DriverFactory } from '../contract.js';
import { WebjsDriver } from './driver.js';
import { MIN_BACKUP_SYNC_INTERVAL_MS, type WebjsAuth, type WebjsDriverOptions } from './options.js';

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

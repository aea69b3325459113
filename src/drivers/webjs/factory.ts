/**
 * The runtime's DriverFactory for webjs instances. `base` carries what comes from the configuration
 * (chromePath from CHROME_PATH, clock, logger, timeouts); the runtime adds instanceId, dataDir and
 * callTimeoutMs per instance.
 */
import type { DriverFactory } from '../contract.js';
import { WebjsDriver } from './driver.js';
import type { WebjsDriverOptions } from './options.js';

export function webjsDriverFactory(base: Partial<WebjsDriverOptions> = {}): DriverFactory {
  return (opts) => new WebjsDriver({ ...base, ...opts });
}

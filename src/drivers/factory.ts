/** Which driver an instance gets: the sandbox network or whatsapp-web.js on the system Chromium. */
import type { DriverFactory } from './contract.js';
import type { Config } from '../config.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Sandbox } from '../sandbox/embed.js';
import { webjsDriverFactory } from './webjs/factory.js';

export function driverFactoryFor(deps: { config: Config; clock: Clock; log: Logger; sandbox: Sandbox | null }): (kind: 'sandbox' | 'webjs') => DriverFactory {
  const webjs = webjsDriverFactory({ chromePath: deps.config.CHROME_PATH, clock: deps.clock, logger: deps.log.child({ driver: 'webjs' }) });
  return (kind) => {
    if (kind === 'webjs') return webjs;
    if (!deps.sandbox) {
      return () => {
        throw new Error('the sandbox network is off (SANDBOX=off); this instance cannot start');
      };
    }
    return deps.sandbox.driverFactory;
  };
}

/** Which driver an instance gets: the sandbox network or whatsapp-web.js on the system Chromium. */
import type { DriverFactory } from './contract.js';
import type { Config } from '../config.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Sandbox } from '../sandbox/embed.js';
import { webjsAuthFor, webjsDriverFactory } from './webjs/factory.js';
import type { Pool } from '../store/pool.js';

export function driverFactoryFor(deps: { config: Config; clock: Clock; log: Logger; sandbox: Sandbox | null; pool: Pool }): (kind: 'sandbox' | 'webjs') => DriverFactory {
  const webjs = webjsDriverFactory({
    chromePath: deps.config.CHROME_PATH,
    chromeArgs: deps.config.WEBJS_CHROME_ARGS,
    blockResources: deps.config.WEBJS_BLOCK_RESOURCES,
    clock: deps.clock,
    logger: deps.log.child({ driver: 'webjs' }),
    // WEBJS_AUTH=postgres: the link lives in PostgreSQL, so whichever node owns the instance resumes it
    auth: webjsAuthFor(deps.config.WEBJS_AUTH, deps.pool),
  });
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

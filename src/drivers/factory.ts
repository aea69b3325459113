/** Which driver an instance gets: the sandbox network or whatsapp-web.js on the system Chromium. */
import type { DriverFactory } from './contract.js';
import type { Config } from '../config.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Sandbox } from '../sandbox/embed.js';
import { forgetWebjsLink, webjsAuthFor, webjsDriverFactory } from './webjs/factory.js';
import type { Pool } from '../store/pool.js';

type FactoryDeps = { config: Config; clock: Clock; log: Logger; sandbox: Sandbox | null; pool: Pool };

const webjsBase = (deps: FactoryDeps) => ({
  chromePath: deps.config.CHROME_PATH,
  chromeArgs: deps.config.WEBJS_CHROME_ARGS,
  blockResources: deps.config.WEBJS_BLOCK_RESOURCES,
  clock: deps.clock,
  logger: deps.log.child({ driver: 'webjs' }),
  // WEBJS_AUTH=postgres: the link lives in PostgreSQL, so whichever node owns the instance resumes it
  auth: webjsAuthFor(deps.config.WEBJS_AUTH, deps.pool),
});

/**
 * A deleted instance's link, dropped where this node keeps one: the in-process sandbox's session, a webjs
 * Chromium profile (and its copy in the database with WEBJS_AUTH=postgres). Whatever the instance's driver was:
 * each is nothing to remove for an instance of the other.
 */
export async function forgetInstanceLinks(deps: FactoryDeps, instanceId: string): Promise<void> {
  deps.sandbox?.forget(instanceId);
  await forgetWebjsLink(webjsBase(deps), deps.config.DATA_DIR, instanceId);
}

export function driverFactoryFor(deps: FactoryDeps): (kind: 'sandbox' | 'webjs') => DriverFactory {
  const webjs = webjsDriverFactory(webjsBase(deps));
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

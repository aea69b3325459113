/** The DriverFactory for sandbox instances: one SandboxDriver per start, all over the same network API. */
import type { Clock } from '../../clock.js';
import type { DriverFactory } from '../contract.js';
import type { InitializeOptions, SandboxNetworkApi } from './api.js';
import { SandboxDriver } from './driver.js';

export interface SandboxDriverFactoryOptions {
  clock?: Clock;
  /** the number to link automatically for an instance, if any (the demo instance) */
  autoLink?: (instanceId: string) => InitializeOptions['autoLink'] | undefined;
}

export function sandboxDriverFactory(api: SandboxNetworkApi, opts: SandboxDriverFactoryOptions = {}): DriverFactory {
  return (o) => {
    const autoLink = opts.autoLink?.(o.instanceId);
    return new SandboxDriver({ instanceId: o.instanceId, api, ...(opts.clock ? { clock: opts.clock } : {}), ...(autoLink ? { autoLink } : {}) });
  };
}

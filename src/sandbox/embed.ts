/**
 * The sandbox network as the gateway runs it: in-process (SANDBOX=embedded, the default; state in
 * DATA_DIR/sandbox.json so links survive restarts) or a separate `mgw sandbox` process (SANDBOX=<its URL>),
 * so that a killed gateway does not lose what the network received. The control API (/sandbox/v1,
 * src/http/routes/sandbox-control.ts) is mounted by the gateway behind the admin token, over `network`, only when
 * the network runs in-process.
 */
import path from 'node:path';
import type { Config } from '../config.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { DriverFactory } from '../drivers/contract.js';
import { SandboxNetwork } from './network.js';
import { inProcessSandboxApi } from '../drivers/sandbox/in-process.js';
import { remoteSandboxApi } from '../drivers/sandbox/remote.js';
import { sandboxDriverFactory } from '../drivers/sandbox/factory.js';
import type { SandboxNetworkApi } from '../drivers/sandbox/api.js';

export interface Sandbox {
  /** the in-process network, null when it runs as its own process */
  network: SandboxNetwork | null;
  api: SandboxNetworkApi;
  driverFactory: DriverFactory;
  /** link this instance automatically to `phone` on its first start (demo instance) */
  setAutoLink(instanceId: string, phone: string): void;
  /** the instance was deleted: the in-process network forgets its session (a network of its own process keeps it) */
  forget(instanceId: string): void;
  close(): Promise<void>;
}

export async function createSandbox(deps: { config: Config; clock: Clock; log: Logger }): Promise<Sandbox> {
  const autoLinks = new Map<string, string>();
  const remote = /^https?:\/\//.test(deps.config.SANDBOX);
  const network = remote ? null : new SandboxNetwork({ clock: deps.clock, statePath: path.join(deps.config.DATA_DIR, 'sandbox.json') });
  const api = network ? inProcessSandboxApi(network) : remoteSandboxApi({ url: deps.config.SANDBOX });
  const driverFactory = sandboxDriverFactory(api, {
    clock: deps.clock,
    autoLink: (instanceId) => {
      const phone = autoLinks.get(instanceId);
      return phone ? { phoneNumber: phone, pushname: 'Demo' } : undefined;
    },
  });
  return {
    network,
    api,
    driverFactory,
    setAutoLink: (instanceId, phone) => void autoLinks.set(instanceId, phone),
    forget(instanceId) {
      autoLinks.delete(instanceId);
      network?.forget(instanceId);
    },
    async close() {
      network?.close();
    },
  };
}

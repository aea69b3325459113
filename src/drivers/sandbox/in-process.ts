/**
 * The sandbox network in the same process: calls go straight to the network's operation table. Arguments,
 * results and events are deep-copied, so nothing live crosses the boundary, exactly as over the wire. The
 * caller's client id goes to the session as it would over the wire, so a driver replaced by another one in
 * the same process is treated as a replaced remote driver is (session.ts).
 */
import type { SandboxNetwork } from '../../sandbox/network.js';
import { dispatch } from '../../sandbox/operations.js';
import type { SandboxNetworkApi } from './api.js';

export function inProcessSandboxApi(network: SandboxNetwork): SandboxNetworkApi {
  return {
    async call(instanceId, method, args, opts) {
      const result = await dispatch(network.session(instanceId), method, structuredClone(args), opts?.clientId);
      return structuredClone(result);
    },
    async subscribe(instanceId, listener, opts) {
      return network.session(instanceId).clients.subscribe((event) => {
        const copy = structuredClone(event);
        // A listener's bug must not break the network's own bookkeeping half-way; it still surfaces.
        try {
          listener(copy);
        } catch (err) {
          queueMicrotask(() => {
            throw err;
          });
        }
      }, opts?.clientId);
    },
  };
}

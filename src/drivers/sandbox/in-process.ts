/**
 * The sandbox network in the same process: calls go straight to the network's operation table. Arguments,
 * results and events are deep-copied, so nothing live crosses the boundary, exactly as over the wire.
 */
import type { SandboxNetwork } from '../../sandbox/network.js';
import { dispatch } from '../../sandbox/operations.js';
import type { SandboxNetworkApi } from './api.js';

export function inProcessSandboxApi(network: SandboxNetwork): SandboxNetworkApi {
  return {
    async call(instanceId, method, args) {
      const result = await dispatch(network.session(instanceId), method, structuredClone(args));
      return structuredClone(result);
    },
    async subscribe(instanceId, listener) {
      return network.session(instanceId).subscribe((event) => {
        const copy = structuredClone(event);
        // A listener's bug must not break the network's own bookkeeping half-way; it still surfaces.
        try {
          listener(copy);
        } catch (err) {
          queueMicrotask(() => {
            throw err;
          });
        }
      });
    },
  };
}

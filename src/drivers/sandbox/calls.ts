/**
 * The sandbox driver's calls in flight: each network call is tracked until it settles, so that the driver can
 * reject all of them at once (with their network side aborted) when its session ends.
 */
import { DriverError } from '../contract.js';
import type { SandboxArgs, SandboxMethod, SandboxNetworkApi, SandboxResult } from './api.js';

interface Pending {
  reject: (err: DriverError) => void;
  abort: AbortController;
}

export class PendingCalls {
  private readonly pending = new Set<Pending>();

  constructor(
    private readonly api: SandboxNetworkApi,
    private readonly instanceId: string,
    /** the driver's client id, sent with every call (the network refuses a client it no longer serves) */
    private readonly clientId: string,
    /** A call succeeded (the driver's health records it). */
    private readonly onOk: () => void,
  ) {}

  /** One network call; any failure that is not a DriverError already becomes CALL_FAILED. */
  call<M extends SandboxMethod>(method: M, args: SandboxArgs<M>): Promise<SandboxResult<M>> {
    return new Promise<SandboxResult<M>>((resolve, reject) => {
      const entry: Pending = { reject, abort: new AbortController() };
      this.pending.add(entry);
      this.api.call(this.instanceId, method, args, { signal: entry.abort.signal, clientId: this.clientId }).then(
        (result) => {
          this.pending.delete(entry);
          this.onOk();
          resolve(result);
        },
        (err: unknown) => {
          this.pending.delete(entry);
          reject(err instanceof DriverError ? err : new DriverError('the sandbox call failed', 'CALL_FAILED', false));
        },
      );
    });
  }

  /** Reject every call in flight with `err` and abort its network side. */
  releaseAll(err: DriverError): void {
    const all = [...this.pending];
    this.pending.clear();
    for (const p of all) {
      p.reject(err);
      p.abort.abort();
    }
  }
}

/**
 * A small HTTP load generator for the benchmarks: `concurrency` keep-alive loops against one URL for
 * `durationMs`, reporting requests per second and latency percentiles. Runs in its own process
 * (bench/lib/load-worker.ts) so the server under test does not share its event loop.
 */
import { runWorker } from './worker-process.js';

export interface LoadResult {
  requests: number;
  errors: number;
  /** what the errors were: an HTTP status or a socket error code, with how many times */
  failures: Record<string, number>;
  /** the first failed response: its status and the start of its body */
  sample?: string;
  rps: number;
  p50: number;
  p99: number;
  /** the load generator's own CPU time per request (µs): it shares the machine with the server under test */
  clientCpuUs: number;
}

export interface LoadSpec {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  /** JSON body; `{{n}}` in it is replaced by a counter (unique idempotency keys, phones…) */
  body?: string;
  concurrency: number;
  durationMs: number;
  /** bearer keys taken in turn, one per request (requests spread over many instances); overrides authorization */
  keys?: string[];
  /** status codes counted as success besides 2xx */
  okStatus?: number[];
  /** the only status codes counted as success (another 2xx is an error): e.g. [200], every answer a replay */
  onlyStatus?: number[];
  /**
   * The load generator: node's http client (default), or HTTP/1.1 on plain sockets (bench/lib/raw-load-worker.ts),
   * a quarter of the CPU per request: the acceptance benchmarks' yardstick, pgbench, has a lean client too.
   */
  client?: 'node-http' | 'raw';
}

export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  return runWorker<LoadResult>(spec.client === 'raw' ? 'raw-load-worker.ts' : 'load-worker.ts', spec);
}

export const fmt = (n: number, digits = 1) => n.toFixed(digits);

/**
 * A figure computed from loads, or that it was not measured when one of them had errors: a rate counts answered
 * requests, and with refusals among them (a fixture that ran out of room) it is not the server's rate.
 */
export const unlessErrors = (loads: readonly Pick<LoadResult, 'errors'>[], figure: () => string) => {
  const errors = loads.reduce((n, l) => n + l.errors, 0);
  return errors === 0 ? figure() : `not measured: ${errors} requests failed (above)`;
};

/** `errors N`, and when there were any, what they were and the first one's body (a bench must not hide them) */
export const errorsText = (r: LoadResult) =>
  r.errors === 0 ? 'errors 0' : `errors ${r.errors} ${JSON.stringify(r.failures)}${r.sample ? ` first: ${r.sample}` : ''}`;

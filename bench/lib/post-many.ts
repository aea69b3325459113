/**
 * A fixed number of POSTs (not a fixed duration, as bench/lib/load.ts does): `total` requests, `{{n}}` in the
 * body replaced by 0…total-1, `concurrency` keep-alive loops, in a process of its own so that the server under
 * test does not share its event loop. Used where each request makes something that must exist afterwards
 * (bench/instances.ts creates N instances).
 */
import { runWorker } from './worker-process.js';

export interface PostManySpec {
  url: string;
  headers?: Record<string, string>;
  /** JSON body; `{{n}}` is replaced by the request's number */
  body: string;
  total: number;
  concurrency: number;
}

export interface PostManyResult {
  ok: number;
  errors: number;
  /** the first failed answer (status and body), for the benchmark's output */
  firstError: string | null;
  elapsedMs: number;
  p50: number;
  p99: number;
}

export function postMany(spec: PostManySpec): Promise<PostManyResult> {
  return runWorker<PostManyResult>('post-many-worker.ts', spec);
}

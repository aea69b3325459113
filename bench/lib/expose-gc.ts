/**
 * V8's `gc()`, for a benchmark that reads memory after a full collection. A process started without
 * `--expose-gc` (npm run bench starts each benchmark without it) runs `file` again in a child with it and with
 * npm start's V8 flags (every benchmark runs the gateway with them), and exits with the child's status.
 */
import { spawnSync } from 'node:child_process';
import { startFlags } from './start-flags.js';

export function exposedGc(file: string): () => void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) return gc;
  const r = spawnSync(process.execPath, ['--expose-gc', ...startFlags(), '--import', 'tsx', file], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

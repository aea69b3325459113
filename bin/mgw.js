#!/usr/bin/env node
// The `mgw` command: src/cli/main.ts in this very process, through tsx's loader (no build step, and no child
// process: a signal to `mgw` reaches the gateway or the sandbox it runs, and nothing is left orphaned).
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
if (process.argv[2] === 'start') {
  // a signal while the CLI's and the gateway's modules load (seconds under tsx) ends `mgw start` with 0 and a line,
  // as it does `npm start` (src/main.ts); killed with the default signal (143, no line) before this
  const { loadStoppably } = await import('../src/stop-signals.ts');
  await loadStoppably('mgw', () => import('../src/cli/main.ts'));
} else await import('../src/cli/main.ts');

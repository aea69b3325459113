#!/usr/bin/env node
// The `mgw` command: src/cli/main.ts in this very process, through tsx's loader (no build step, and no child
// process: a signal to `mgw` reaches the gateway or the sandbox it runs, and nothing is left orphaned).
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
await import('../src/cli/main.ts');

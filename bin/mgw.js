#!/usr/bin/env node
// The `mgw` command: runs src/cli/main.ts through tsx (no build step needed).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const r = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), path.join(root, 'src/cli/main.ts'), ...process.argv.slice(2)], {
  stdio: 'inherit',
});
process.exit(r.status ?? 1);

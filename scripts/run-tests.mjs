#!/usr/bin/env node
// `npm test`: every test/**/*.test.ts through node's built-in test runner (with tsx for TypeScript).
// Arguments narrow the run: `npm test -- unit` runs only files whose path contains "unit".
import { readdirSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';

function walk(dir) {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith('.test.ts') ? [p] : [];
  });
}
const filters = process.argv.slice(2);
const files = walk('test').sort().filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const r = spawnSync(
  process.execPath,
  // a test that hangs fails after TEST_TIMEOUT_MS (default 10 min) with its name, instead of holding the run
  ['--import', 'tsx', '--test', '--test-reporter=spec', `--test-concurrency=${process.env.TEST_CONCURRENCY ?? 2}`, `--test-timeout=${process.env.TEST_TIMEOUT_MS ?? 600_000}`, ...files],
  { stdio: 'inherit' },
);
process.exit(r.status ?? 1);

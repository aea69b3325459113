/**
 * `npm test`'s TypeScript loader (scripts/ts-loader), in node processes of its own on files of a temporary
 * directory: a `.js` import finds the `.ts` beside it (as tsx and TypeScript's NodeNext have it) unless a `.js` is
 * there; a file loads from the run's cache (MGW_TS_CACHE) while its copy is as new as the source, and is compiled
 * again when the source changed after; and a stack trace names the `.ts` file and line (a source map: the code
 * node runs is minified as tsx's is).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { literally } from '../helpers/regexp.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const LOADER = pathToFileURL(path.join(ROOT, 'scripts/ts-loader/register.mjs')).href;

let dir = '';
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-ts-loader-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Run `file` under the loader; its stdout, stderr and exit code. */
function run(file: string, cache = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', LOADER, file], { env: { ...process.env, MGW_TS_CACHE: cache }, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
      resolve({ code, stdout, stderr });
    });
  });
}

test('a .js import resolves to the .ts beside it; a real .js is loaded as it is', async () => {
  const d = path.join(dir, 'resolve');
  await mkdir(d);
  await writeFile(path.join(d, 'only-ts.ts'), 'export const from: string = "only-ts.ts";\n');
  await writeFile(path.join(d, 'both.ts'), 'export const from: string = "both.ts";\n');
  await writeFile(path.join(d, 'both.js'), 'export const from = "both.js";\n');
  await writeFile(path.join(d, 'main.ts'), [
    "import { from as a } from './only-ts.js';",
    "import { from as b } from './both.js';",
    'const typed: number = 1;',
    'console.log(a, b, typed);',
  ].join('\n'));
  const r = await run(path.join(d, 'main.ts'));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'only-ts.ts both.js 1');
});

test('the run\'s cache is used while its copy is as new as the source; a newer source is compiled again', async () => {
  const d = path.join(dir, 'cache');
  const cache = path.join(dir, 'cache-dir');
  await mkdir(d);
  const file = path.join(d, 'value.ts');
  await writeFile(file, 'console.log("source" as string);\n');
  const copy = path.join(cache, `${file}.js`);
  await mkdir(path.dirname(copy), { recursive: true });
  // a copy that differs from the source, to tell which one ran
  await writeFile(copy, 'console.log("cached copy");\n');
  const old = new Date(Date.now() - 60_000);
  await utimes(file, old, old);
  const fromCache = await run(file, cache);
  assert.equal(fromCache.code, 0, fromCache.stderr);
  assert.equal(fromCache.stdout.trim(), 'cached copy');

  // the source edited after the copy was made: the copy is stale
  const later = new Date(Date.now() + 60_000);
  await utimes(file, later, later);
  const recompiled = await run(file, cache);
  assert.equal(recompiled.code, 0, recompiled.stderr);
  assert.equal(recompiled.stdout.trim(), 'source');

  // no cache at all: compiled on the spot
  const bare = await run(file);
  assert.equal(bare.stdout.trim(), 'source');
});

test('a stack trace names the .ts file and its line', async () => {
  const d = path.join(dir, 'stack');
  await mkdir(d);
  const file = path.join(d, 'throws.ts');
  await writeFile(file, [
    'interface Shape { n: number }',
    'const shapes: Shape[] = [];',
    '',
    'export const size = (s: Shape): number => s.n;',
    'console.log(shapes.map(size).length);',
    'function fails(): never {',
    '  throw new Error("from line 7");',
    '}',
    'fails();',
  ].join('\n'));
  const r = await run(file);
  assert.notEqual(r.code, 0);
  assert.equal(r.stdout.trim(), '0');
  assert.match(r.stderr, new RegExp(`${literally(file)}:7:\\d+`), r.stderr);
});

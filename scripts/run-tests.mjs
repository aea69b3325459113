#!/usr/bin/env node
// `npm test`: every test/**/*.test.ts through node's built-in test runner.
// Arguments narrow the run: `npm test -- unit` runs only files whose path contains "unit".
//
// TypeScript runs through scripts/ts-loader (what tsx does for `npm start`, the same esbuild transform), with
// every file of src/, machines/, test/, bench/ and scripts/ compiled once here into a cache for this run: each test
// file's process, and each gateway a test starts, then loads compiled JavaScript instead of paying tsx's start
// (about a second of CPU a process on a two-core machine; hundreds of processes a run).
//
// With TEST_DATABASE_URL, one migrated template database is made for the run and copied for each test file's
// database (test/helpers/db.ts); at the end it goes, with any database a killed test file left behind.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { register } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { compileAll } from './ts-loader/compile.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LOADER = pathToFileURL(path.join(ROOT, 'scripts/ts-loader/register.mjs')).href;

function walk(dir, ext) {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? walk(p, ext) : p.endsWith(ext) ? [p] : [];
  });
}
const filters = process.argv.slice(2);
const files = walk(path.join(ROOT, 'test'), '.test.ts')
  .map((f) => path.relative(ROOT, f))
  .sort()
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}

// the cache: <cache>/<absolute path of the .ts>.js; the loader compiles anything newer than its copy itself
const cache = mkdtempSync(path.join(os.tmpdir(), 'mgw-test-ts-'));
const base = process.env.TEST_DATABASE_URL;
// in the name of every database of this run (test/helpers/db.ts), so that those a killed file left are found
const tag = randomBytes(4).toString('hex');
process.env.MGW_TEST_RUN = tag;
/** test/helpers/db.ts, once imported (with TEST_DATABASE_URL only), and the run's template, once made */
let db = null;
let template = null;
let child = null;

/** What the run made goes: its databases (those a test file left are named) and the cache. */
async function cleanUp() {
  if (base && db) {
    try {
      const left = (await db.dropRunDatabases(base, tag)).filter((name) => name !== template);
      if (left.length > 0) console.error(`npm test: dropped ${left.length} database(s) that test files ended without dropping: ${left.join(', ')}`);
    } catch (err) {
      console.error(`npm test: this run's databases (named *_${tag}_*) were not dropped: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  rmSync(cache, { recursive: true, force: true });
}
const exitCode = (signal) => 128 + (os.constants.signals[signal] ?? 0);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    // the runner's own turn: a Ctrl+C reaches it too (the terminal signals the whole process group); a SIGTERM or
    // SIGHUP to this process alone is passed on. Either way the run cleans up once it has ended (below).
    if (child !== null) {
      if (signal !== 'SIGINT') child.kill(signal);
      return;
    }
    // before the runner started: clean up now, then end as the signal would
    void cleanUp().finally(() => process.exit(exitCode(signal)));
  });
}
const sources = ['src', 'machines', 'test', 'bench', 'scripts'].flatMap((d) => walk(path.join(ROOT, d), '.ts'));
try {
  for (const [file, code] of await compileAll(sources)) {
    const copy = path.join(cache, `${file}.js`);
    mkdirSync(path.dirname(copy), { recursive: true });
    writeFileSync(copy, code);
  }
} catch (err) {
  await cleanUp();
  throw err;
}

// the template database, made through the same loader in this process
register('./ts-loader/hooks.mjs', import.meta.url, { data: { cache } });
if (base) {
  db = await import('../test/helpers/db.ts');
  try {
    template = await db.createTemplateDb(base);
  } catch (err) {
    // the tests that need the server say what is wrong with it; each file migrates its own database meanwhile
    console.error(`npm test: no template database (${err instanceof Error ? err.message : String(err)}); each test file migrates its own`);
  }
}

child = spawn(
  process.execPath,
  // a test that hangs fails after TEST_TIMEOUT_MS (default 10 min) with its name, instead of holding the run
  ['--import', LOADER, '--test', '--test-reporter=spec', `--test-concurrency=${process.env.TEST_CONCURRENCY ?? 2}`, `--test-timeout=${process.env.TEST_TIMEOUT_MS ?? 600_000}`, ...files],
  { cwd: ROOT, stdio: 'inherit', env: { ...process.env, MGW_TS_CACHE: cache, MGW_TS_LOADER: LOADER, ...(template ? { MGW_TEST_TEMPLATE_DB: template } : {}) } },
);
child.on('exit', async (code, signal) => {
  await cleanUp();
  process.exit(code ?? (signal ? exitCode(signal) : 1));
});

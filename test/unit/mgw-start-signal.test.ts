/**
 * `mgw start`: a SIGTERM while the CLI's modules load ends it with 0 and a line, as `npm start` (src/main.ts).
 * Found from the outside: bin/mgw.js loaded src/cli/main.ts and every verb's module before any handler was
 * installed (src/cli/verbs/processes.ts loadStoppably comes after them), and a SIGTERM in that time (0.7 to 2 s
 * after the launch on a busy machine) killed it with the default signal, exit 143 and no line. A module hook holds
 * the load of one of the CLI's modules, so that the signal surely comes while they load.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

test('a SIGTERM while `mgw start` loads the CLI exits 0, saying so', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-start-signal-'));
  try {
    await writeFile(path.join(dir, 'hooks.mjs'), `export async function resolve(spec, context, next) {
  if (spec.includes('verbs/status')) { process.stderr.write('loading cli\\n'); await new Promise((r) => setTimeout(r, 60_000)); }
  return next(spec, context);
}\n`);
    await writeFile(path.join(dir, 'register.mjs'), `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(path.join(dir, 'hooks.mjs')).href)});\n`);
    const bin = fileURLToPath(new URL('../../bin/mgw.js', import.meta.url));
    const child = spawn(process.execPath, ['--import', pathToFileURL(path.join(dir, 'register.mjs')).href, bin, 'start'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, PORT: '0', DATA_DIR: path.join(dir, 'data'), npm_command: undefined, npm_lifecycle_event: undefined },
    });
    let stderr = '';
    await new Promise<void>((resolve) => child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (stderr.includes('loading cli')) resolve();
    }));
    child.kill('SIGTERM');
    const [exit, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])));
    assert.deepEqual([exit, signal], [0, null], stderr);
    assert.match(stderr, /stopped by SIGTERM while loading mgw: nothing was started/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

/**
 * The embedded database's files, as a process runs the gateway (src/store/embedded.ts). Its directory removed under a running gateway:
 * found from the outside, `rm -rf DATA_DIR/pg` let the gateway accept sends for up to a minute into a database
 * that was gone, and the restart made an empty one without a word. Now the gateway stops (exit 1) within a look of
 * the directory, the next start refuses and says how to go on, and once the operator removes the marker (a
 * deliberate fresh start) it starts on an empty database.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanEnv, startProcess } from '../helpers/gateway-process.js';
import { EMBEDDED_MARKER } from '../../src/store/embedded.js';
import { MAX_SOCKET_PATH } from '../../src/socket-path.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Run the gateway to its end (a start that fails). */
function runToEnd(env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  for (const stream of [child.stdout, child.stderr]) {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => (out += chunk));
  }
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out })));
}

test('DATA_DIR/pg removed under a running gateway: it stops with exit 1; the restart refuses until the marker is removed', { timeout: 240_000 }, async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-embedded-gone-'));
  const env = { ...cleanEnv(), DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'info' };
  try {
    const first = await startProcess({ env, startTimeoutMs: 120_000 });
    await rm(path.join(dir, 'pg'), { recursive: true, force: true });
    const exit = await first.exited;
    assert.equal(exit.code, 1, first.output());
    // rm -rf takes the files before their directory: the watch names what it found gone first, pg or a file in it
    assert.match(first.output(), /"level":50[^\n]*the embedded database's (directory \S+pg|\S+pg\/\S+) was removed \(or moved away\) under the running gateway: nothing it accepts now could be kept; stopping/);

    const again = await runToEnd(env);
    assert.equal(again.code, 1, again.out);
    assert.match(again.out, /gateway failed to start: DATA_DIR \S+ held an embedded database \(since \d{4}-\d\d-\d\dT[^)]*\) and \S+pg no longer holds it: restore \S+pg from a backup, or remove \S+embedded-database\.json to start with an empty database/);
    assert.doesNotMatch(again.out, /messaging gateway listening/);

    await rm(path.join(dir, EMBEDDED_MARKER));
    const fresh = await startProcess({ env, startTimeoutMs: 120_000 });
    try {
      assert.match(fresh.output(), /demo API key \(shown once\)/, 'an empty database: a new demo instance');
      assert.equal((await fetch(`${fresh.url}/health`)).status, 200);
    } finally {
      assert.equal((await fresh.kill('SIGTERM')).code, 0, fresh.output());
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a part of DATA_DIR/pg removed under a running gateway (its tables\' directory): it stops with exit 1; the restart names the directory and what to do', { timeout: 240_000 }, async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-embedded-part-'));
  const env = { ...cleanEnv(), DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'info' };
  try {
    const first = await startProcess({ env, startTimeoutMs: 120_000 });
    await rm(path.join(dir, 'pg', 'base'), { recursive: true, force: true });
    const exit = await first.exited;
    assert.equal(exit.code, 1, first.output());
    assert.match(first.output(), /"level":50[^\n]*the embedded database's \S+pg\/base was removed \(or moved away\) under the running gateway: nothing it accepts now could be kept; stopping/);
    const again = await runToEnd(env);
    assert.equal(again.code, 1, again.out);
    assert.match(again.out, /gateway failed to start: the embedded database in \S+pg could not be opened \([^\n]*\): its files may be damaged or incomplete [^\n]*restore \S+pg from a backup taken with the gateway stopped/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a DATA_DIR too deep for a socket in its run/: the embedded database serves in a private directory of the temporary one, and nothing lands beside DATA_DIR', { timeout: 120_000 }, async () => {
  const parent = await mkdtemp(path.join(os.tmpdir(), 'mgw-deep-'));
  // DATA_DIR itself longer than a socket's path may be: libuv cut run/.s.PGSQL.5432 to a path in `parent`, a
  // socket beside DATA_DIR outside its run/ (and DATA_DIRs 3 to 14 bytes shorter failed with EADDRINUSE)
  const dir = path.join(parent, 'd'.repeat(MAX_SOCKET_PATH + 3 - parent.length - 1));
  const env = { ...cleanEnv(), DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'info' };
  try {
    const gw = await startProcess({ env, startTimeoutMs: 120_000 });
    try {
      assert.equal((await fetch(`${gw.url}/health`)).status, 200);
      assert.deepEqual(await readdir(parent), [path.basename(dir)], 'nothing but DATA_DIR in its parent');
    } finally {
      assert.equal((await gw.kill('SIGTERM')).code, 0, gw.output());
    }
  } finally {
    await rm(parent, { recursive: true, force: true });
  }
});

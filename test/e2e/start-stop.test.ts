/**
 * SIGTERM or SIGINT while the gateway starts is a graceful stop, as the README promises for a running one: the
 * start stops what it began, says so, and the process exits 0. Found by the outside README probe: a SIGTERM
 * before the gateway listened (the embedded PostgreSQL's first init takes 30–40 s) killed it with the default
 * signal, exit 143 and no line. The gateway runs as a process, as the README starts it, on an empty DATA_DIR.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanEnv, startProcess } from '../helpers/gateway-process.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Start the gateway, send `signal` once its output has `at`, and wait for its end. */
function stopWhen(env: NodeJS.ProcessEnv, at: string, signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let sent = false;
  for (const stream of [child.stdout, child.stderr]) {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      out += chunk;
      if (!sent && out.includes(at)) {
        sent = true;
        child.kill(signal);
      }
    });
  }
  return new Promise((resolve) => child.once('exit', (code, sig) => resolve({ code, signal: sig, out })));
}

for (const [at, signal] of [['starting embedded PostgreSQL', 'SIGTERM'], ['migrating the database', 'SIGINT']] as const) {
  test(`${signal} at "${at}": the start stops what it began and exits 0 with its lines; the next start is a whole one`, { timeout: 180_000 }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-startstop-'));
    const env = { ...cleanEnv(), DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'info' };
    try {
      const r = await stopWhen(env, at, signal);
      assert.equal(r.code, 0, `exit ${String(r.code ?? r.signal)}:\n${r.out}`);
      assert.match(r.out, new RegExp(`"reason":"${signal}"[^\\n]*"msg":"stopping: the start is cut short, stopping what it started"`));
      assert.match(r.out, /"msg":"stopped before the start finished"/);
      assert.doesNotMatch(r.out, /messaging gateway listening/);
      // the data directory was let go (its lock, the embedded PostgreSQL closed): the next start uses it, whole
      const next = await startProcess({ env, startTimeoutMs: 120_000 });
      try {
        assert.match(next.output(), /admin token \(shown once/);
        assert.equal((await fetch(`${next.url}/health`)).status, 200);
      } finally {
        assert.equal((await next.kill('SIGTERM')).code, 0, next.output());
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
}

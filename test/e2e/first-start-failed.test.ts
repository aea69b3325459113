/**
 * A first start that fails does not lose what it made for the operator. Found by the outside README probe: the
 * admin token and the demo instance were made before PORT was bound and shown only after, so a first start on a
 * busy port lost the token and the demo key for good, and the demo, its link held in memory only, stayed
 * `waiting_qr`. The gateway runs as a process, as the README starts it: an empty DATA_DIR, nothing else set.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { callGateway, cleanEnv, startProcess } from '../helpers/gateway-process.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function runToExit(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stderr })));
}

const adminTokenLine = /admin token \(shown once; also in .*\): (\S+)/;
const demoKeyLine = /demo API key \(shown once\): (\S+)/;

test('a first start that fails on a busy PORT: the next start shows the admin token and a demo key, and the demo is linked; the one after shows neither', { timeout: 240_000 }, async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-firstfail-'));
  const busy = net.createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
  const env = { ...cleanEnv(), DATA_DIR: dir, LOG_LEVEL: 'warn' };
  try {
    const failed = await runToExit({ ...env, PORT: String((busy.address() as net.AddressInfo).port) });
    assert.equal(failed.code, 1, failed.stderr);
    assert.match(failed.stderr, /is in use/);
    assert.doesNotMatch(failed.stderr, adminTokenLine);

    const second = await startProcess({ env: { ...env, PORT: '0', LOG_LEVEL: 'info' }, startTimeoutMs: 120_000 });
    let demoKey: string;
    try {
      const out = second.output();
      const token = adminTokenLine.exec(out)?.[1];
      assert.equal(token, (await readFile(path.join(dir, 'admin-token'), 'utf8')).trim(), `the token of the file, shown:\n${out}`);
      demoKey = demoKeyLine.exec(out)?.[1] ?? assert.fail(`no demo key shown:\n${out}`);
      assert.match(out, /demo instance on the sandbox network, linked as \+4915550100001/);
      // the start-up line counts the demo (it said 0 beside it); log lines are written at the end of their turn
      for (let i = 0; i < 50 && !second.output().includes('"msg":"instances starting"'); i++) await new Promise((r) => setTimeout(r, 100));
      assert.match(second.output(), /"instances":1,[^\n]*"msg":"instances starting"/);
      // the key shown works, and the demo made by the failed start links as the first start's would have
      let status = await callGateway(second.url, demoKey, 'GET', '/api/status');
      for (let i = 0; i < 50 && status.body.data.phoneNumber !== '4915550100001'; i++) {
        await new Promise((r) => setTimeout(r, 200));
        status = await callGateway(second.url, demoKey, 'GET', '/api/status');
      }
      assert.equal(status.status, 200);
      assert.equal(status.body.data.phoneNumber, '4915550100001', JSON.stringify(status.body));
      const list = await callGateway(second.url, token ?? '', 'GET', '/admin/v1/instances');
      assert.equal((list.body.data.items as unknown[]).length, 1, 'one demo, not a second one');
    } finally {
      assert.equal((await second.kill('SIGTERM')).code, 0, second.output());
    }

    const third = await startProcess({ env: { ...env, PORT: '0' }, startTimeoutMs: 120_000 });
    try {
      assert.doesNotMatch(third.output(), adminTokenLine);
      assert.doesNotMatch(third.output(), demoKeyLine);
      assert.equal((await callGateway(third.url, demoKey, 'GET', '/api/status')).status, 200, 'the key shown is kept');
    } finally {
      assert.equal((await third.kill('SIGTERM')).code, 0, third.output());
    }
  } finally {
    await new Promise<void>((r) => busy.close(() => r()));
    await rm(dir, { recursive: true, force: true });
  }
});

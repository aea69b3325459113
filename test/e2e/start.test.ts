/**
 * The README's two-command start, as a user runs it: `npm start` (here `node --import tsx src/main.ts`, what
 * the script runs) on an empty data directory, no DATABASE_URL (embedded PostgreSQL), no ADMIN_TOKEN. It must
 * print where it listens, the admin token and the demo instance's key; `/health` and `/api/status` with that
 * key answer in the envelope; the demo instance connects on the sandbox network; SIGTERM stops it cleanly.
 * A second start on the same directory prints no secret again and the same key still works.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const START_LIMIT_MS = 90_000;

let dataDir = '';
const running = new Set<ChildProcess>();
after(async () => {
  for (const child of running) child.kill('SIGKILL');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

interface Started {
  child: ChildProcess;
  url: string;
  /** everything the process wrote so far (stdout and stderr) */
  output: () => string;
  exited: Promise<number | null>;
}

/** The environment of a user's shell, minus anything that would point the gateway elsewhere. */
function cleanEnv(dir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ['DATABASE_URL', 'TEST_DATABASE_URL', 'ADMIN_TOKEN', 'SANDBOX', 'DEMO_INSTANCE', 'HOST', 'NODE_TEST_CONTEXT']) delete env[k];
  return { ...env, DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'info' };
}

/** Start the gateway and wait (on its output, not a timer) for the line that says where it listens. */
function start(dir: string): Promise<Started> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env: cleanEnv(dir), stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => {
    running.delete(child);
    resolve(code);
  }));
  return new Promise<Started>((resolve, reject) => {
    const limit = setTimeout(() => reject(new Error('the gateway did not print its address in time')), START_LIMIT_MS);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /messaging gateway listening on (http:\/\/\S+)/.exec(out);
      // the banner is written in one go: wait for its last line when a demo key is announced
      if (m?.[1] && (!out.includes('demo API key') || /try: .*\/api\/status/.test(out))) {
        clearTimeout(limit);
        resolve({ child, url: m[1], output: () => out, exited });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then((code) => {
      clearTimeout(limit);
      reject(new Error(`the gateway exited with ${code} before listening`));
    });
  });
}

async function getJson(url: string, key?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, key ? { headers: { authorization: `Bearer ${key}` } } : {});
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Poll the real process over HTTP until the demo instance is connected (it runs on the wall clock). */
async function untilConnected(url: string, key: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 600; i++) {
    const r = await getJson(`${url}/api/status`, key);
    const data = r.body.data as Record<string, unknown> | undefined;
    if (data?.status === 'connected') return data;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('the demo instance did not connect');
}


test('npm start on an empty data directory: health, the printed demo key, connected, SIGTERM exits 0; a restart keeps the key', async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-e2e-'));
  const first = await start(dataDir);
  const out = first.output();
  const url = first.url;
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const key = /demo API key \(shown once\): (wapi_demo_[A-Za-z0-9_-]+)/.exec(out)?.[1];
  const adminToken = /admin token \(shown once[^)]*\): (\S+)/.exec(out)?.[1];
  assert.ok(key, 'the demo API key is printed');
  assert.ok(adminToken && adminToken.length >= 16, 'the admin token is printed');

  const health = await getJson(`${url}/health`);
  assert.equal(health.status, 200);
  assert.equal(health.body.success, true);
  assert.deepEqual(Object.keys(health.body.instances as object).sort(), ['degraded', 'offline', 'online', 'quarantined', 'starting', 'total']);
  assert.equal((health.body.instances as { total: number }).total, 1);

  const status = await getJson(`${url}/api/status`, key);
  assert.equal(status.status, 200);
  assert.equal(status.body.success, true);
  assert.ok(status.body.data && typeof status.body.data === 'object');
  const data = await untilConnected(url, key);
  assert.equal(data.connected, true);
  assert.match(String(data.phoneNumber), /^\d{8,15}$/);
  const unauth = await getJson(`${url}/api/status`);
  assert.equal(unauth.status, 401);
  assert.deepEqual([unauth.body.success, unauth.body.code], [false, 'UNAUTHORIZED']);
  const admin = await getJson(`${url}/admin/v1/instances`, adminToken);
  assert.equal(admin.status, 200);
  assert.equal((admin.body.data as { items: unknown[] }).items.length, 1);

  // the token file is the operator's only: mode 0600 in a 0700 directory
  assert.equal((await stat(path.join(dataDir, 'admin-token'))).mode & 0o777, 0o600);
  assert.equal((await stat(dataDir)).mode & 0o077, 0);

  first.child.kill('SIGTERM');
  assert.equal(await first.exited, 0, 'SIGTERM stops the gateway with exit code 0');
  // shown on the banner, never in a log line (bunyan writes one JSON object per line)
  const logLines = first.output().split('\n').filter((l) => l.startsWith('{'));
  assert.ok(logLines.length > 0, 'the gateway logged (LOG_LEVEL=info), so the check below means something');
  assert.equal(logLines.filter((l) => l.includes(key) || l.includes(adminToken)).length, 0, 'no log line carries a secret');

  const second = await start(dataDir);
  assert.ok(!second.output().includes('shown once'), 'a second start prints no secret');
  assert.ok(!second.output().includes(key) && !second.output().includes(adminToken));
  const again = await untilConnected(second.url, key);
  assert.equal(again.phoneNumber, data.phoneNumber, 'the link persisted across the restart');
  assert.equal((await getJson(`${second.url}/admin/v1/instances`, adminToken)).status, 200);
  second.child.kill('SIGTERM');
  assert.equal(await second.exited, 0);
});

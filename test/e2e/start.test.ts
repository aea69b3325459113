/**
 * The README's quick start, run verbatim as a newcomer runs it: the commands of README.md's `sh quick-start`
 * block (read from the README itself, so the two cannot drift), in a fresh directory holding what a clone
 * would hold (the tracked and not-ignored files of this working tree: no node_modules, no data/), with no
 * DATA_DIR, DATABASE_URL, ADMIN_TOKEN (npm works offline from its cache; PORT=0 only to avoid clashes).
 * It must print where it listens, the admin token and the demo key; the API answers with that key; the data
 * lands in ./data of that directory. A SIGTERM, then a SIGINT, to the `npm start` process stop the whole
 * tree gracefully: no process left, the port free; a SIGKILLed npm does not orphan the gateway. The same
 * signals for `mgw sandbox`.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, existsSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { processTree, processesIn, untilGone, portFree } from '../helpers/process-tree.js';
import { cleanEnv, startProcess, type RunningProcess } from '../helpers/gateway-process.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const START_LIMIT_MS = 120_000;

/** The commands of the README's quick-start block, each as argv (simple words only: no shell syntax). */
function quickStartCommands(readme: string): string[][] {
  const block = /^```sh quick-start\n([\s\S]*?)^```/m.exec(readme)?.[1];
  assert.ok(block, 'README.md has a ```sh quick-start block');
  const lines = block.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
  for (const l of lines) assert.match(l, /^[\w@./=:-]+( [\w@./=:-]+)*$/, `quick-start line is a plain command: ${l}`);
  return lines.map((l) => l.split(' '));
}

const COMMANDS = quickStartCommands(readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
const SETUP = COMMANDS.slice(0, -1);
const START = COMMANDS[COMMANDS.length - 1] ?? [];

let fresh = '';
const running: RunningProcess[] = [];
after(async () => {
  for (const started of running) await started.kill('SIGKILL');
  if (fresh) {
    for (const pid of processesIn(fresh)) process.kill(pid, 'SIGKILL');
    await rm(fresh, { recursive: true, force: true });
  }
});

/** A directory with what a clone of this working tree would hold. */
function freshCopy(dir: string): void {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((f) => f !== '' && existsSync(path.join(ROOT, f)));
  for (const f of files) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    copyFileSync(path.join(ROOT, f), path.join(dir, f));
  }
}

/** The environment of a user's shell: nothing pointing the gateway elsewhere, nothing of the npm running us. */
function userEnv(): NodeJS.ProcessEnv {
  return { ...cleanEnv(), PORT: '0', LOG_LEVEL: 'info', npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', PUPPETEER_SKIP_DOWNLOAD: 'true' };
}

/** Spawn `argv` in the fresh directory (its own process group, as from a terminal) and wait for `ready`. */
async function launch(argv: string[], ready: (out: string) => string | null): Promise<RunningProcess> {
  const [command = '', ...args] = argv;
  const started = await startProcess({ command, args, cwd: fresh, env: userEnv(), detached: true, ready, startTimeoutMs: START_LIMIT_MS });
  running.push(started);
  return started;
}

/** The gateway's banner is written in one go: wait for its last line when a demo key is announced. */
const gatewayReady = (out: string) => {
  const m = /messaging gateway listening on (http:\/\/\S+)/.exec(out);
  return m?.[1] && (!out.includes('demo API key') || /try: .*\/api\/status/.test(out)) ? m[1] : null;
};
const sandboxReady = (out: string) => /sandbox network listening on (http:\/\/\S+?)[\s(]/.exec(out)?.[1] ?? null;

/** Send `signal` to the launched process only (not its group) and check that the whole tree ends. */
async function stopWith(started: RunningProcess, signal: NodeJS.Signals): Promise<void> {
  const pid = started.proc.pid;
  assert.ok(pid !== undefined);
  const tree = processTree(pid);
  const port = Number(new URL(started.url).port);
  assert.ok(tree.length >= 1);
  process.kill(pid, signal);
  // bounded: a tree that does not stop fails here (and `after` kills it) instead of hanging the run
  assert.deepEqual(await untilGone(tree), [], `${signal}: every process of the tree ended (${tree.join(', ')})`);
  await started.exited;
  assert.deepEqual(processesIn(fresh), [], `${signal}: no process left working in the directory`);
  assert.equal(await portFree(port), true, `${signal}: port ${port} is free again`);
}

async function getJson(url: string, key?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, key ? { headers: { authorization: `Bearer ${key}` } } : {});
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Poll the real process over HTTP until the demo instance is connected (it runs on the wall clock). */
async function untilConnected(url: string, key: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 1200; i++) {
    const r = await getJson(`${url}/api/status`, key);
    const data = r.body.data as Record<string, unknown> | undefined;
    if (data?.status === 'connected') return data;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('the demo instance did not connect');
}

let demoKey = '';
let adminToken = '';
let phone = '';

test('the README quick start verbatim in a fresh copy: the printed key works, data in ./data; SIGTERM to npm start stops everything', async () => {
  assert.deepEqual(START.slice(0, 2), ['npm', 'start'], 'the quick start ends in npm start');
  fresh = await mkdtemp(path.join(os.tmpdir(), 'mgw-fresh-'));
  freshCopy(fresh);
  for (const argv of SETUP) {
    const [cmd = '', ...args] = argv;
    execFileSync(cmd, args, { cwd: fresh, env: userEnv(), stdio: 'pipe', timeout: START_LIMIT_MS });
  }

  const first = await launch(START, gatewayReady);
  const out = first.output();
  assert.match(first.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  demoKey = /demo API key \(shown once\): (wapi_demo_[A-Za-z0-9_-]+)/.exec(out)?.[1] ?? '';
  adminToken = /admin token \(shown once[^)]*\): (\S+)/.exec(out)?.[1] ?? '';
  assert.ok(demoKey, 'the demo API key is printed');
  assert.ok(adminToken.length >= 16, 'the admin token is printed');
  assert.ok(out.includes(`also in ${path.join(fresh, 'data')}/admin-token`), 'the banner names the resolved data directory');

  const health = await getJson(`${first.url}/health`);
  assert.equal(health.status, 200);
  assert.equal((health.body.instances as { total: number }).total, 1);
  const data = await untilConnected(first.url, demoKey);
  assert.equal(data.connected, true);
  phone = String(data.phoneNumber);
  const unauth = await getJson(`${first.url}/api/status`);
  assert.deepEqual([unauth.status, unauth.body.code], [401, 'UNAUTHORIZED']);
  assert.equal((await getJson(`${first.url}/admin/v1/instances`, adminToken)).status, 200);
  // the quick start's ledger line: the demo's id from the banner, with the admin token
  const demoId = /demo instance id: ([0-9a-f-]{36}) /.exec(out)?.[1] ?? '';
  assert.ok(demoId, 'the demo instance id is printed');
  assert.equal((await getJson(`${first.url}/sandbox/v1/instances/${demoId}/ledger`, adminToken)).status, 200);

  // the default DATA_DIR is ./data of the directory npm start ran in; the token file is the operator's only
  assert.equal((await stat(path.join(fresh, 'data', 'admin-token'))).mode & 0o777, 0o600);
  assert.equal((await stat(path.join(fresh, 'data'))).mode & 0o077, 0);
  assert.ok(existsSync(path.join(fresh, 'data', 'pg')), 'the embedded database is in ./data/pg');

  await stopWith(first, 'SIGTERM');
  assert.match(first.output(), /"msg":"stopping: finishing in-flight dispatches"/, 'the gateway stopped gracefully');
  const logLines = first.output().split('\n').filter((l) => l.startsWith('{'));
  assert.ok(logLines.length > 0, 'the gateway logged (LOG_LEVEL=info), so the check below means something');
  assert.equal(logLines.filter((l) => l.includes(demoKey) || l.includes(adminToken)).length, 0, 'no log line carries a secret');
});

test('SIGINT to npm start stops everything; a restart prints no secret and the same key works', async () => {
  assert.ok(demoKey, 'the first test ran');
  const second = await launch(START, gatewayReady);
  assert.ok(!second.output().includes('shown once'), 'a second start prints no secret');
  assert.ok(!second.output().includes(demoKey) && !second.output().includes(adminToken));
  const again = await untilConnected(second.url, demoKey);
  assert.equal(String(again.phoneNumber), phone, 'the link persisted across the restart');
  await stopWith(second, 'SIGINT');
  assert.match(second.output(), /"msg":"stopping: finishing in-flight dispatches"/);
});

test('npm killed outright (SIGKILL): the gateway it launched notices and stops by itself', async () => {
  assert.ok(demoKey, 'the first test ran');
  const third = await launch(START, gatewayReady);
  const pid = third.proc.pid;
  assert.ok(pid !== undefined);
  const gateway = processTree(pid).filter((p) => p !== pid);
  assert.ok(gateway.length >= 1, 'npm runs the gateway as its child');
  process.kill(pid, 'SIGKILL');
  await third.exited;
  assert.deepEqual(await untilGone(gateway), [], 'the orphaned gateway stopped');
  assert.deepEqual(processesIn(fresh), []);
  assert.equal(await portFree(Number(new URL(third.url).port)), true);
  // its log goes to the pipe of the dead npm: the graceful stop is seen in the exit, not in the output
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`mgw sandbox: ${signal} stops it, the port is free`, async () => {
    assert.ok(fresh, 'the first test made the fresh directory');
    const sandbox = await launch(['bin/mgw.js', 'sandbox', '--port', '0', '--state', 'sandbox-state.json'], sandboxReady);
    const res = await fetch(`${sandbox.url}/sandbox/v1/instances/none/ledger`);
    assert.ok(res.status < 500, 'the sandbox answers HTTP');
    await res.arrayBuffer();
    await stopWith(sandbox, signal);
  });
}

/**
 * The TypeScript client's example program (clients/typescript/examples/send-and-wait.ts) against a real gateway
 * process, run the way clients/typescript/README.md says: the gateway started with `npm start` on an empty data
 * directory (the demo instance on the built-in sandbox network; its key read from the banner it prints once),
 * then `node --import tsx examples/send-and-wait.ts <phone> <text>` in clients/typescript with MGW_URL and
 * MGW_API_KEY. The program must exit 0 and print the accepted job and the outcome `sent`, and the sandbox
 * network's ledger must hold the text. PostgreSQL: a database of TEST_DATABASE_URL when set, else the
 * gateway's own embedded one (as a user's `npm start`).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { callGateway, cleanEnv, startProcess, type RunningProcess } from '../helpers/gateway-process.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLIENT = path.join(ROOT, 'clients', 'typescript');
const START_LIMIT_MS = 120_000;

let dataDir = '';
let db: TestDb | null = null;
let gateway: RunningProcess | null = null;
after(async () => {
  if (gateway) {
    const pid = gateway.proc.pid;
    // npm and the gateway it runs are one process group (detached): stop both, then make sure
    await gateway.kill('SIGTERM');
    if (pid !== undefined) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // the group is gone already
      }
    }
  }
  await db?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** The banner is written in one go: wait for its last line (the demo key comes before it). */
const bannerDone = (out: string): string | null => {
  const url = /messaging gateway listening on (http:\/\/\S+)/.exec(out)?.[1];
  return url && /try: .*\/api\/status/.test(out) ? url : null;
};

/** Run the example; resolves with its exit code and output (it never takes more than `timeoutMs`). */
function runExample(env: NodeJS.ProcessEnv, args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'examples/send-and-wait.ts', ...args], { cwd: CLIENT, env, timeout: timeoutMs }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
      resolve({ code, stdout, stderr });
    });
  });
}

test('examples/send-and-wait.ts against `npm start`: exit 0, the job accepted and sent, the network received it', async (t) => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-client-example-'));
  const database: Record<string, string> = {};
  if (process.env.TEST_DATABASE_URL) {
    db = await createTestDb('client_example', { migrate: false });
    if (db.url) database.DATABASE_URL = db.url;
  }
  gateway = await startProcess({
    command: 'npm',
    args: ['start'],
    cwd: ROOT,
    // a user's shell: no ADMIN_TOKEN, no DEMO_INSTANCE, no SANDBOX (the built-in network); port 0 to avoid clashes
    env: { ...cleanEnv(), ...database, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn', npm_config_update_notifier: 'false' },
    detached: true,
    ready: bannerDone,
    startTimeoutMs: START_LIMIT_MS,
  });
  const banner = gateway.output();
  const demoKey = /demo API key \(shown once\): (wapi_demo_[A-Za-z0-9_-]+)/.exec(banner)?.[1];
  const adminToken = /admin token \(shown once[^)]*\): (\S+)/.exec(banner)?.[1];
  assert.ok(demoKey, `the demo key is printed:\n${banner}`);
  assert.ok(adminToken, 'the admin token is printed');

  const phone = '4915112345678';
  const text = `hello from the client example ${Date.now()}`;
  const run = await runExample({ ...cleanEnv(), MGW_URL: gateway.url, MGW_API_KEY: demoKey }, [phone, text], 90_000);
  const printed = `${run.stdout}${run.stderr}`;
  for (const line of printed.trim().split('\n')) t.diagnostic(`example: ${line}`);
  assert.equal(run.code, 0, `the example exits 0:\n${printed}`);
  assert.match(run.stdout, /^accepted: job wq_\S+, key mgw:\S+, planned for /m, 'it prints the accepted job and its key');
  assert.match(run.stdout, /^outcome: sent \((confirmed|assumed), \S+\)$/m, 'it prints the outcome');
  assert.ok(!printed.includes(demoKey), 'the example does not print the key');

  // the outcome is honest: the sandbox network received that text from the demo instance
  const list = await callGateway(gateway.url, adminToken, 'GET', '/admin/v1/instances');
  const items = list.body.data.items as { id: string }[];
  assert.equal(items.length, 1);
  const ledger = await callGateway(gateway.url, adminToken, 'GET', `/sandbox/v1/instances/${items[0]?.id ?? ''}/ledger`);
  assert.equal(ledger.status, 200);
  assert.ok(JSON.stringify(ledger.body.data).includes(text), `the ledger holds the text: ${JSON.stringify(ledger.body.data).slice(0, 500)}`);

  await gateway.kill('SIGTERM');
  assert.equal((await gateway.exited).code, 0, 'npm start stops gracefully');
});

/**
 * At-most-once across a crash: the gateway runs as its own process against a separate sandbox network; it is
 * killed (SIGKILL) while a message is in `sending`. The restarted gateway marks that job `unknown` and never
 * sends it again; the network's ledger (which survived the kill) holds the message exactly once.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startSandboxServer, type SandboxServer } from '../../src/http/sandbox-server.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { waitFor } from '../helpers/gateway.js';

const ADMIN = 'crash-test-admin-token-0123456789';
let sandbox: SandboxServer;
let db: TestDb;
let dataDir = '';
let child: ChildProcess | null = null;

before(async () => {
  sandbox = await startSandboxServer({ port: 0, host: '127.0.0.1', statePath: null });
  db = await createTestDb('crash');
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-crash-'));
});
after(async () => {
  child?.kill('SIGKILL');
  await sandbox.close();
  await db.close();
  await rm(dataDir, { recursive: true, force: true });
});

async function startGatewayProcess(): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...process.env,
      PORT: '0',
      DATA_DIR: dataDir,
      DATABASE_URL: db.url ?? '',
      SANDBOX: sandbox.url,
      ADMIN_TOKEN: ADMIN,
      DEMO_INSTANCE: 'false',
      LOG_LEVEL: 'warn',
      DRIVER_CALL_TIMEOUT_MS: '600000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const url = await waitFor(() => /listening on (http:\/\/[^\s]+)/.exec(out)?.[1], 'gateway to listen');
  return { proc, url };
}

async function call(url: string, key: string, method: string, route: string, body?: unknown) {
  const res = await fetch(url + route, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as { success: boolean; data: Record<string, unknown> } };
}

test('a gateway killed during `sending` leaves the job unknown, never resent', { skip: !process.env.TEST_DATABASE_URL && 'needs TEST_DATABASE_URL (two processes share the database)' }, async () => {
  let gw = await startGatewayProcess();
  child = gw.proc;
  const created = await call(gw.url, ADMIN, 'POST', '/admin/v1/instances', {
    name: 'crashy', driver: 'sandbox', settings: { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null },
  });
  assert.equal(created.status, 201);
  const instanceId = String((created.body.data.instance as { id: string }).id);
  const apiKey = String(created.body.data.apiKey);
  sandbox.network.link(instanceId, { phoneNumber: '4915100000123' });
  await waitFor(async () => (await call(gw.url, apiKey, 'GET', '/api/status')).body.data.connected === true, 'connected');

  // the network takes the next message but never answers: the gateway holds it in `sending`
  sandbox.network.addNextCallFault(instanceId, { kind: 'hang', deliver: true });
  const sent = await call(gw.url, apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'exactly once' });
  assert.equal(sent.status, 202);
  const jobId = String(sent.body.data.jobId);
  await waitFor(async () => (await call(gw.url, apiKey, 'GET', `/api/v2/messages/${jobId}`)).body.data.state === 'sending', 'job in sending');
  await waitFor(() => sandbox.network.ledger(instanceId).some((e) => e.body === 'exactly once'), 'the network received it');

  gw.proc.kill('SIGKILL');
  await new Promise((r) => gw.proc.once('exit', r));

  gw = await startGatewayProcess();
  child = gw.proc;
  const job = await waitFor(async () => {
    const r = await call(gw.url, apiKey, 'GET', `/api/v2/messages/${jobId}`);
    return r.body.data.state === 'unknown' ? r.body.data : null;
  }, 'job unknown after restart');
  assert.equal(job.deliveryConfidence, 'unknown');
  assert.match(String(job.unknownReason), /may or may not have been sent/);

  // the queue works after the restart, and the unknown job was not sent again
  await waitFor(async () => (await call(gw.url, apiKey, 'GET', '/api/status')).body.data.connected === true, 'connected again');
  const next = await call(gw.url, apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'after restart' });
  assert.equal(next.status, 202);
  await waitFor(async () => (await call(gw.url, apiKey, 'GET', `/api/v2/messages/${String(next.body.data.jobId)}`)).body.data.state === 'sent', 'next message sent');
  const bodies = sandbox.network.ledger(instanceId).map((e) => e.body);
  assert.equal(bodies.filter((b) => b === 'exactly once').length, 1);
  assert.equal(bodies.filter((b) => b === 'after restart').length, 1);

  gw.proc.kill('SIGTERM');
  const code = await new Promise((r) => gw.proc.once('exit', r));
  assert.equal(code, 0, 'SIGTERM stops the gateway cleanly');
  child = null;
});

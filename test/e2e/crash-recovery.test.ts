/**
 * At-most-once across a crash: the gateway runs as its own process against a separate sandbox network; it is
 * killed (SIGKILL) while a message is in `sending`. The restarted gateway marks that job `unknown` and never
 * sends it again; the network's ledger (which survived the kill) holds the message exactly once.
 *
 * And the honest other side: killed while a media job in `sending` was still fetching its media URL (the
 * network never called), the job is `failed` after the restart, not `unknown`, and can be requeued. And killed
 * while the store was away after a v1 caller had been told its message was sent: the restart writes the outcome
 * the killed process knew (`sent`), not `unknown`.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startSandboxServer, type SandboxServer } from '../../src/http/sandbox-server.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { waitFor } from '../helpers/gateway.js';
import { callGateway as call, startSandboxedGateway, type RunningProcess } from '../helpers/gateway-process.js';
import { startTcpProxy, type CutMode } from '../helpers/tcp-proxy.js';

const ADMIN = 'crash-test-admin-token-0123456789';
let sandbox: SandboxServer;
let db: TestDb;
let dataDir = '';
let child: RunningProcess | null = null;

before(async () => {
  sandbox = await startSandboxServer({ port: 0, host: '127.0.0.1', statePath: null });
  db = await createTestDb('crash');
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-crash-'));
});
after(async () => {
  await child?.kill('SIGKILL');
  await sandbox.close();
  await db.close();
  await rm(dataDir, { recursive: true, force: true });
});

/**
 * The gateway process; the network's call that hangs must keep it in `sending` until the kill. Every host name
 * it resolves is STANDIN (test/helpers/standin-network.ts), where a test's media host listens.
 */
const STANDIN = '127.0.0.2';
const startGatewayProcess = (databaseUrl = db.url ?? '') =>
  startSandboxedGateway({
    dataDir,
    databaseUrl,
    sandboxUrl: sandbox.url,
    adminToken: ADMIN,
    env: { DRIVER_CALL_TIMEOUT_MS: '600000', MGW_TEST_STANDIN_ADDRESS: STANDIN },
    preload: ['test/helpers/standin-network.ts'],
  });

/** The job's status once the restarted gateway `gw` says it is in `state`. */
const jobReaching = (gw: RunningProcess, apiKey: string, jobId: string, state: string) =>
  waitFor(async () => {
    const r = await call(gw.url, apiKey, 'GET', `/api/v2/messages/${jobId}`);
    return r.body.data.state === state ? r.body.data : null;
  }, `job ${state} after the restart`);

const NEEDS_DB = { skip: !process.env.TEST_DATABASE_URL && 'needs TEST_DATABASE_URL (two processes share the database)' };

const NO_LIMITS = { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null };

/** A linked instance on `gw`: its id and key. */
async function linkedInstance(gw: RunningProcess, name: string): Promise<{ instanceId: string; apiKey: string }> {
  const created = await call(gw.url, ADMIN, 'POST', '/admin/v1/instances', { name, driver: 'sandbox', settings: NO_LIMITS });
  assert.equal(created.status, 201);
  const instanceId = String((created.body.data.instance as { id: string }).id);
  const apiKey = String(created.body.data.apiKey);
  sandbox.network.link(instanceId, { phoneNumber: '4915100000124' });
  await waitFor(async () => (await call(gw.url, apiKey, 'GET', '/api/status')).body.data.connected === true, 'connected');
  return { instanceId, apiKey };
}

/**
 * A media host on STANDIN: a HEAD (the acceptance's probe) gets a 4-byte PNG's head; a GET (the dispatch's
 * download) gets the head and then nothing, for ever, until `serve()`: from then on the whole image. `gets`
 * counts the GETs.
 */
async function stalledMediaHost(): Promise<{ port: number; gets: () => number; serve: () => void; close: () => Promise<void> }> {
  let gets = 0;
  let stall = true;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.once('data', (chunk) => {
      const head = 'HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 4\r\n\r\n';
      if (chunk.toString('latin1').startsWith('HEAD ')) return void socket.end(head);
      gets += 1;
      if (stall) socket.write(head);
      else socket.end(`${head}PNG!`);
    });
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, STANDIN, () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    gets: () => gets,
    serve: () => {
      stall = false;
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

test('a gateway killed during `sending` leaves the job unknown, never resent', NEEDS_DB, async () => {
  let gw = await startGatewayProcess();
  child = gw;
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

  await gw.kill('SIGKILL');

  gw = await startGatewayProcess();
  child = gw;
  const job = await jobReaching(gw, apiKey, jobId, 'unknown');
  assert.equal(job.deliveryConfidence, 'unknown');
  assert.match(String(job.unknownReason), /may or may not have been sent/);
  // as every unknown outcome (found from the outside: null here, UNKNOWN after a timeout or a failed call)
  assert.equal(job.resultCode, 'UNKNOWN');

  // the queue works after the restart, and the unknown job was not sent again
  await waitFor(async () => (await call(gw.url, apiKey, 'GET', '/api/status')).body.data.connected === true, 'connected again');
  const next = await call(gw.url, apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'after restart' });
  assert.equal(next.status, 202);
  await waitFor(async () => (await call(gw.url, apiKey, 'GET', `/api/v2/messages/${String(next.body.data.jobId)}`)).body.data.state === 'sent', 'next message sent');
  const bodies = sandbox.network.ledger(instanceId).map((e) => e.body);
  assert.equal(bodies.filter((b) => b === 'exactly once').length, 1);
  assert.equal(bodies.filter((b) => b === 'after restart').length, 1);

  const { code } = await gw.kill('SIGTERM');
  assert.equal(code, 0, 'SIGTERM stops the gateway cleanly');
  child = null;
});

test('a gateway killed while a media job fetched its media leaves the job failed (never called), requeueable', NEEDS_DB, async () => {
  const host = await stalledMediaHost();
  try {
    let gw = await startGatewayProcess();
    child = gw;
    const { instanceId, apiKey } = await linkedInstance(gw, 'fetching');
    const sent = await call(gw.url, apiKey, 'POST', '/api/v2/send-media', {
      phone: '4915112345678', mediaUrl: `http://media.example.com:${host.port}/picture.png`, caption: 'never fetched',
    });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    const jobId = String(sent.body.data.jobId);
    await waitFor(async () => host.gets() > 0 && (await call(gw.url, apiKey, 'GET', `/api/v2/messages/${jobId}`)).body.data.state === 'sending', 'job in sending, its media being fetched');

    await gw.kill('SIGKILL');
    gw = await startGatewayProcess();
    child = gw;
    const job = await jobReaching(gw, apiKey, jobId, 'failed');
    assert.equal(job.resultCode, 'INTERRUPTED_BEFORE_SEND');
    assert.match(String(job.errorMessage), /never called, nothing was sent/);
    assert.equal(job.unknownReason, null);
    assert.equal(sandbox.network.ledger(instanceId).length, 0, 'the network received nothing');

    // failed is requeueable: the message can go again, and goes once
    host.serve();
    await waitFor(async () => (await call(gw.url, apiKey, 'GET', '/api/status')).body.data.connected === true, 'connected again');
    const again = await call(gw.url, apiKey, 'POST', `/api/v2/messages/${jobId}/requeue`);
    assert.equal(again.status, 202, JSON.stringify(again.body));
    const next = String(again.body.data.jobId);
    await waitFor(async () => (await call(gw.url, apiKey, 'GET', `/api/v2/messages/${next}`)).body.data.state === 'sent', 'the requeued job sent');
    assert.deepEqual(sandbox.network.ledger(instanceId).map((e) => [e.type, e.body]), [['image', 'never fetched']]);

    const { code } = await gw.kill('SIGTERM');
    assert.equal(code, 0, 'SIGTERM stops the gateway cleanly');
    child = null;
  } finally {
    await host.close();
  }
});

/**
 * A gateway process that reaches its store through a TCP proxy, cut (`mode`) in the instant the network records the
 * message `body`: the network has it, and the gateway's write of its outcome meets the store cut. `run` gets the
 * gateway, its linked instance and `killAndRestart` (SIGKILL, the network's hook and the store put back, a gateway
 * started anew on the store directly); the hook and the proxy are put back whatever happens.
 */
async function cutAsRecorded(
  name: string,
  body: string,
  mode: CutMode,
  run: (gw: RunningProcess, instance: { instanceId: string; apiKey: string }, killAndRestart: () => Promise<RunningProcess>) => Promise<void>,
): Promise<void> {
  const url = new URL(db.url ?? '');
  const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
  const proxied = new URL(url);
  proxied.port = String(proxy.port);
  const record = sandbox.network.record.bind(sandbox.network);
  try {
    const gw = await startGatewayProcess(proxied.toString());
    child = gw;
    const instance = await linkedInstance(gw, name);
    sandbox.network.record = (id, entry) => {
      const e = record(id, entry);
      if (entry.body === body && proxy.state === null) void proxy.cut(mode);
      return e;
    };
    await run(gw, instance, async () => {
      await gw.kill('SIGKILL');
      sandbox.network.record = record;
      await proxy.restore();
      const again = await startGatewayProcess();
      child = again;
      return again;
    });
  } finally {
    sandbox.network.record = record;
    await proxy.close();
  }
}


test('a gateway killed while the store was away, after a v1 caller was told "sent": the restart writes that outcome, not unknown', NEEDS_DB, async () => {
  // the network takes the message, and the store goes away before the gateway can write that it went out
  await cutAsRecorded('told-sent', 'told sent', 'refuse', async (gw, { instanceId, apiKey }, killAndRestart) => {
    const told = await call(gw.url, apiKey, 'POST', '/api/send-message', { phone: '4915112345678', message: 'told sent' });
    assert.equal(told.status, 200, JSON.stringify(told.body));
    assert.equal(told.body.success, true);
    const { rows: before } = await db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE instance_id = $1', [instanceId]);
    assert.deepEqual(before.map((r) => r.state), ['sending'], 'the store never heard the outcome');

    const again = await killAndRestart();
    const job = await waitFor(async () => {
      const { rows } = await db.pool.query<{ state: string; delivery_confidence: string | null; message_id: string | null; result_code: string | null }>(
        'SELECT state, delivery_confidence, message_id, result_code FROM jobs WHERE instance_id = $1', [instanceId]);
      return rows[0] && rows[0].state !== 'sending' ? rows[0] : null;
    }, 'the job settled after the restart');
    assert.equal(job.state, 'sent', 'what the caller was told');
    assert.equal(job.delivery_confidence, 'confirmed');
    assert.equal(job.result_code, 'SENT');
    assert.equal(job.message_id, sandbox.network.ledger(instanceId).find((e) => e.body === 'told sent')?.messageId);
    assert.equal(sandbox.network.ledger(instanceId).filter((e) => e.body === 'told sent').length, 1, 'sent once');
    await assert.rejects(readFile(path.join(dataDir, 'run', 'degraded-sends.jsonl'), 'utf8'), { code: 'ENOENT' }, 'the journal is gone');

    const { code } = await again.kill('SIGTERM');
    assert.equal(code, 0, 'SIGTERM stops the gateway cleanly');
    child = null;
  });
});

test('a gateway killed while the store hangs (a partition), just after the network confirmed a send: the restart writes that outcome', NEEDS_DB, async () => {
  // found by the second probe: behind a store that hangs rather than refuses, the outcome's write took seconds to
  // fail, the outcome reached the disk only then, and a kill meanwhile made the confirmed send `unknown`
  await cutAsRecorded('partitioned', 'confirmed in a partition', 'blackhole', async (gw, { instanceId, apiKey }, killAndRestart) => {
    const sent = await call(gw.url, apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'confirmed in a partition' });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    const jobId = String(sent.body.data.jobId);
    const journal = path.join(dataDir, 'run', 'degraded-sends.jsonl');
    // on disk within a moment of the confirmation, though the store neither answers nor refuses
    await waitFor(async () => (await readFile(journal, 'utf8').catch(() => '')).includes(jobId), 'the outcome on disk', 200);

    const again = await killAndRestart();
    const job = await jobReaching(again, apiKey, jobId, 'sent');
    assert.equal(job.deliveryConfidence, 'confirmed');
    assert.equal(sandbox.network.ledger(instanceId).filter((e) => e.body === 'confirmed in a partition').length, 1, 'sent once');
    const { code } = await again.kill('SIGTERM');
    assert.equal(code, 0, 'SIGTERM stops the gateway cleanly');
    child = null;
  });
});

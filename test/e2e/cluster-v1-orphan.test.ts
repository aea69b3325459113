/**
 * A synchronous v1 send whose caller waits on a node that dies, for an instance another node owns: two real
 * gateway processes on one real PostgreSQL, the sandbox network in a server of its own (this test process) that
 * keeps the ledger of every message that reached it.
 *
 * Found by the outside probe: the v1 caller waited on node B, B forwarded the send to the owner A and waited
 * there for the outcome; B was SIGKILLed, the caller's connection closed without an answer (so it resends, as
 * docs/api.md tells it), and A still sent the job at its slot 5-8 s later: the resend would have been a second
 * copy. A's queue never starts again (where a single node expires such an orphan), and B's heartbeat only ages
 * after LEASE_TTL_MS. Now the connection of B's forwarded wait closing makes A check B at once
 * (src/cluster/lost-callers.ts): B is gone, the job is expired with the orphan reason (`message.expired`) well
 * before its slot and before B's heartbeat has aged, and nothing reaches the network.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startSandboxServer, type SandboxServer } from '../../src/http/sandbox-server.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { freePort, requestGateway, startSandboxedGateway, until as untilTrue, type RunningProcess } from '../helpers/gateway-process.js';
import { ORPHAN_REASON } from '../../src/queue/sync-callers.js';

const ADMIN = 'orphan-admin-token-0123456789';
const SECRET = 'orphan-cluster-secret-0123456789';
/** the default: B's heartbeat stays good for 10 s after its death, longer than the job waits for its slot */
const LEASE_TTL_MS = 10_000;
/** the pause between two messages: the v1 job's slot comes this long after the message before it */
const PAUSE_MS = 8_000;
const SETTINGS = { minDelayMs: PAUSE_MS, maxDelayMs: PAUSE_MS, quietHours: null, maxPerHour: null, maxPer24h: null };

interface Node {
  id: string;
  dataDir: string;
  port: number;
  proc: RunningProcess | null;
}

let sandbox: SandboxServer;
let db: TestDb;
const nodes: Node[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const url = (n: Node) => `http://127.0.0.1:${n.port}`;

const call = (n: Node, token: string, method: string, route: string, body?: unknown) => requestGateway(url(n), token, method, route, body, 30_000);
/** (every 50 ms: the expiry is timed against the kill) */
const until = <T>(what: string, f: () => Promise<T | null | false>, maxMs = 60_000) => untilTrue(what, f, maxMs, 50);

const owner = async (id: string) =>
  (await db.pool.query<{ node_id: string }>('SELECT node_id FROM instance_leases WHERE instance_id = $1 AND expires_at > now()', [id])).rows[0]?.node_id ?? null;

const jobByBody = async (instanceId: string, body: string) =>
  (await db.pool.query<{ id: string; state: string; caller_boot: string | null }>(
    `SELECT id, state, caller_boot FROM jobs WHERE instance_id = $1 AND payload->>'body' = $2`,
    [instanceId, body],
  )).rows[0] ?? null;

before(async () => {
  if (!process.env.TEST_DATABASE_URL) return;
  sandbox = await startSandboxServer({ port: 0, host: '127.0.0.1', statePath: null });
  db = await createTestDb('cluster_v1_orphan');
  for (const id of ['a', 'b']) nodes.push({ id, dataDir: await mkdtemp(path.join(os.tmpdir(), `mgw-orphan-${id}-`)), port: await freePort(), proc: null });
  for (const n of nodes) {
    n.proc = await startSandboxedGateway(
      {
        port: n.port, dataDir: n.dataDir, databaseUrl: db.url ?? '', sandboxUrl: sandbox.url, adminToken: ADMIN,
        env: { NODE_ID: n.id, CLUSTER_SECRET: SECRET, LEASE_TTL_MS: String(LEASE_TTL_MS), LOG_LEVEL: 'warn' },
      },
      { tailChars: 8_000, startTimeoutMs: 60_000 },
    );
  }
});

after(async () => {
  for (const n of nodes) await n.proc?.kill('SIGKILL').catch(() => undefined);
  await sandbox?.close();
  await db?.close();
  for (const n of nodes) await rm(n.dataDir, { recursive: true, force: true });
});

const skip = !process.env.TEST_DATABASE_URL && 'needs PostgreSQL (TEST_DATABASE_URL)';

test('a v1 caller waiting on a node that is SIGKILLed: the owner expires its job at once, never sends it', { skip }, async (t) => {
  const [a, b] = nodes as [Node, Node];
  const created = await call(a, ADMIN, 'POST', '/admin/v1/instances', { name: 'orphan', driver: 'sandbox', settings: SETTINGS });
  assert.equal(created.status, 201, created.text);
  const id = String((created.body.data?.instance as { id: string }).id);
  const key = String(created.body.data?.apiKey);
  sandbox.network.link(id, { phoneNumber: '4915550300001' });
  const hook = await call(a, ADMIN, 'PUT', `/admin/v1/instances/${id}/webhook`, { url: 'http://127.0.0.1:9/hook', secret: 'webhook-secret-0123456789', allowPrivate: true, events: ['message.expired'] });
  assert.equal(hook.status, 200, hook.text);
  const moved = await call(a, ADMIN, 'POST', `/admin/v1/instances/${id}/move`, { node: 'a' });
  assert.ok([200, 202].includes(moved.status), moved.text);
  await until('the instance runs connected on node a', async () => (await owner(id)) === 'a' && (await call(b, key, 'GET', '/api/status')).body.data?.connected === true);

  // a message goes out now: the v1 message after it waits PAUSE_MS for its slot
  const first = await call(a, key, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'before the orphan' });
  assert.equal(first.status, 202, first.text);
  await until('the first message sent', async () => (await jobByBody(id, 'before the orphan'))?.state === 'sent');

  // the v1 caller waits on node b, which forwards the send to the owner a
  const body = 'orphan of a killed node';
  const caller = fetch(`${url(b)}/api/send-message`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ phone: '4915112345678', message: body }),
  }).then((r) => `answered ${r.status}`, (err: unknown) => `no answer (${String((err as { cause?: { code?: string } }).cause?.code ?? err)})`);
  const job = await until('the v1 job accepted by node a', () => jobByBody(id, body), 10_000);
  assert.ok(job.caller_boot, 'the job carries its caller\'s process');
  // node b's wait reaches node a
  await sleep(300);
  await b.proc?.kill('SIGKILL');
  b.proc = null;
  const killedAt = Date.now();
  assert.match(await caller, /^no answer/, 'the caller got no answer: it resends');

  const expired = await until('the job expired', async () => {
    const j = await jobByBody(id, body);
    return j && j.state !== 'queued' && j.state !== 'scheduled' ? j : null;
  }, PAUSE_MS + 10_000);
  const expiredAfterMs = Date.now() - killedAt;
  t.diagnostic(`the job ${expired.state} ${expiredAfterMs} ms after node b was SIGKILLed`);
  assert.equal(expired.state, 'expired', `the job ${expired.state} (${expiredAfterMs} ms after the kill), not sent`);
  assert.ok(expiredAfterMs < 3_000, `expired ${expiredAfterMs} ms after the kill: before its slot and before b's heartbeat aged`);
  const event = await db.pool.query<{ body: string }>(`SELECT body FROM outbox WHERE instance_id = $1 AND event = 'message.expired'`, [id]);
  assert.equal(event.rows.length, 1, 'one message.expired');
  assert.ok(event.rows[0]?.body.includes(ORPHAN_REASON), `the orphan reason: ${event.rows[0]?.body}`);

  // past its slot and past b's heartbeat: still expired, and nothing reached the network
  await sleep(Math.max(PAUSE_MS, LEASE_TTL_MS) + 1_000 - (Date.now() - killedAt));
  assert.equal((await jobByBody(id, body))?.state, 'expired');
  assert.deepEqual(sandbox.network.ledger(id).map((e) => e.body), ['before the orphan'], 'only the first message reached the network');
});

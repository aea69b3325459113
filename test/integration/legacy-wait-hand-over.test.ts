/**
 * A v1 send whose instance is handed over to another node while its caller waits (SPEC.md "v1 routes": the
 * wait is for the job's outcome; DESIGN.md "Scale past one machine": moves and graceful stops hand instances
 * over). The job goes out at its new owner; the caller, waiting on the node that took the request, must get
 * that outcome (200 with the network's message id) within its wait, and the message must reach the network
 * exactly once. Found from the inside: the wait listened to the queue that accepted the job only, so a caller
 * waiting on the old owner was told "not connected" (503: nothing was sent) at the end of its wait for a message
 * that had gone out; one whose ask was forwarded to an owner that then moved the instance away got the outcome
 * only when its whole wait had passed; and one whose ask was forwarded to an owner that stopped gracefully was
 * told "no answer in time" (500) as that owner closed its connections.
 *
 * Three gateway nodes in this process on one real PostgreSQL (CLUSTER_SECRET, short leases), one simulated
 * clock for all of them (the queue's slots and the v1 wait; leases run on real time), the sandbox network in
 * a server of its own that keeps the ledger of what reached it.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/log.js';
import { startSandboxServer, type SandboxServer } from '../../src/http/sandbox-server.js';
import { simulatedClock } from '../../src/clock.js';
import { NEEDS_SERVER, createTestDb, type TestDb } from '../helpers/db.js';
import { ADMIN_TOKEN, settle, waitFor } from '../helpers/gateway.js';

const SECRET = 'legacy-hand-over-secret-0123456789';
/** each message waits 8 s (simulated) after the one before it: the wait begins well before its slot */
const PAUSE_MS = 8_000;
/** no ceilings: the 504 is unreachable, the job lives a second less than the wait (legacy-queued.ts) */
const SETTINGS = { minDelayMs: PAUSE_MS, maxDelayMs: PAUSE_MS, quietHours: null, maxPerHour: null, maxPer24h: null };
const WAIT_MS = 20_000;
const RECIPIENT = '4915112345678';
/** real time an answer is given to arrive once its message went out, before the test says it did not */
const ANSWER_GRACE_MS = 10_000;

const clock = simulatedClock();
let sandbox: SandboxServer;
let db: TestDb;
const nodes = new Map<string, Gateway>();
const dirs: string[] = [];
let instanceId: string;
let apiKey: string;

const urlOf = (node: string) => (nodes.get(node) as Gateway).url;
const sim = () => clock;

async function startNode(id: string): Promise<Gateway> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `mgw-hand-over-${id}-`));
  dirs.push(dir);
  const gw = await startGateway({
    config: loadConfig({
      PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir, ADMIN_TOKEN, DEMO_INSTANCE: 'false', LOG_LEVEL: 'fatal',
      CLUSTER_SECRET: SECRET, NODE_ID: id, LEASE_TTL_MS: '2000', SANDBOX: sandbox.url,
    }),
    database: db.config,
    clock,
    log: silentLogger(),
  });
  nodes.set(id, gw);
  return gw;
}

/** A v1 send-message through `node`, answered as status and parsed body. */
const sendV1 = (node: string, message: string) =>
  fetch(`${urlOf(node)}/api/send-message`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ phone: RECIPIENT, message }),
  }).then(async (r) => ({ status: r.status, text: await r.text() }));

const owner = async (): Promise<string | null> =>
  (await db.pool.query<{ node_id: string }>('SELECT node_id FROM instance_leases WHERE instance_id = $1 AND expires_at > now()', [instanceId])).rows[0]?.node_id ?? null;

const jobState = async (message: string): Promise<string | null> =>
  (await db.pool.query<{ state: string }>("SELECT state FROM jobs WHERE instance_id = $1 AND payload->>'body' = $2", [instanceId, message])).rows[0]?.state ?? null;

const ledgerOf = (message: string) => sandbox.network.ledger(instanceId).filter((e) => e.body === message);

/** Until `node` owns the instance and runs it connected (real time: leases are real time). */
async function runsOn(node: string): Promise<void> {
  await waitFor(async () => (await owner()) === node && (nodes.get(node) as Gateway).actors.view(instanceId).connected, `the instance connected on ${node}`, 4_000);
}

/** A send answered at once (its slot is now): it sets the instant the next message waits for. */
async function sentNow(via: string, message: string): Promise<void> {
  const pending = sendV1(via, message);
  // the slot after the last send may still be ahead: simulated time moves until the message went out
  for (let i = 0; i < 40 && ledgerOf(message).length === 0; i++) {
    await waitFor(async () => ledgerOf(message).length > 0 || (await jobState(message)) === 'scheduled', `"${message}" accepted`);
    if (ledgerOf(message).length > 0) break;
    sim().increment(1_000);
    await settle();
    await new Promise((r) => setTimeout(r, 20));
  }
  const r = await pending;
  assert.equal(r.status, 200, r.text);
}

/**
 * The caller's v1 send through `via`, waiting for a slot PAUSE_MS away; `moveIt` hands the instance over while it
 * waits; then simulated time runs until the message reached the network. The caller's answer must be that
 * outcome, within its wait (no more simulated time needed), and the message sent once.
 */
async function waitAcrossHandOver(via: string, message: string, moveIt: () => Promise<unknown>): Promise<void> {
  const started = sim().now();
  let answer: { status: number; text: string } | null = null;
  const pending = sendV1(via, message).then((r) => (answer = r));
  await waitFor(async () => (await jobState(message)) === 'scheduled', `"${message}" scheduled`);
  assert.equal(ledgerOf(message).length, 0, 'not sent before its slot');

  await moveIt();

  // the new owner sends it at its slot (simulated time moves in small steps, so the job cannot expire unseen)
  for (let i = 0; i < 40 && ledgerOf(message).length === 0; i++) {
    sim().increment(500);
    await settle();
    await new Promise((r) => setTimeout(r, 20));
  }
  const sent = ledgerOf(message);
  assert.equal(sent.length, 1, `"${message}" reached the network once (state ${await jobState(message)})`);
  assert.ok(sim().now() < started + WAIT_MS, 'sent within the wait');

  // the answer follows without more simulated time: the wait learnt the outcome from where the job went out
  const deadline = Date.now() + ANSWER_GRACE_MS;
  while (answer === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const inTime: { status: number; text: string } | null = answer;
  if (inTime === null) {
    // let the wait end (in steps, as time passes) to see what the caller is told instead
    for (let i = 0; i < 50 && answer === null; i++) {
      sim().increment(500);
      await settle();
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const r = await pending;
  assert.ok(inTime !== null, `the caller was answered only at the end of its wait, and then with ${r.status} ${r.text}`);
  assert.equal(r.status, 200, r.text);
  const body = JSON.parse(r.text) as { success: boolean; data: { messageId: string; status: string } };
  assert.deepEqual([body.success, body.data.status, body.data.messageId], [true, 'sent', sent[0]?.messageId], r.text);
  assert.equal(await jobState(message), 'sent');

  // and never again
  sim().increment(60_000);
  await settle();
  assert.equal(ledgerOf(message).length, 1, 'sent once');
}

/** POST /admin/v1/instances/:id/move through node `via` to node `to`, then until it runs there. */
async function move(via: string, to: string): Promise<void> {
  const r = await fetch(`${urlOf(via)}/admin/v1/instances/${instanceId}/move`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ node: to }),
  });
  assert.ok(r.status === 202 || r.status === 200, await r.text());
  await runsOn(to);
}

before(async () => {
  if (NEEDS_SERVER.skip) return;
  db = await createTestDb('legacy_hand_over');
  sandbox = await startSandboxServer({ port: 0, host: '127.0.0.1', statePath: null, clock });
  await startNode('a');
  await startNode('b');
  await startNode('c');
  const created = await fetch(`${urlOf('a')}/admin/v1/instances`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'handed-over', driver: 'sandbox', settings: SETTINGS }),
  });
  const data = ((await created.json()) as { data: { instance: { id: string }; apiKey: string } }).data;
  instanceId = data.instance.id;
  apiKey = data.apiKey;
  sandbox.network.link(instanceId, { phoneNumber: '4915550400001' });
  await waitFor(async () => (await owner()) !== null, 'an owner');
  await move('a', 'a');
});

after(async () => {
  for (const gw of nodes.values()) await gw.stop().catch(() => undefined);
  await sandbox?.close();
  await db?.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

test('waiting on the owner, the instance moved to another node: the caller gets the new owner\'s outcome, sent once', NEEDS_SERVER, async () => {
  await sentNow('a', 'before the move');
  await waitAcrossHandOver('a', 'waiting on the old owner', () => move('a', 'b'));
});

test('forwarded to the owner, the instance moved to a third node: the caller gets the outcome, sent once', NEEDS_SERVER, async () => {
  await sentNow('c', 'before the second move');
  await waitAcrossHandOver('c', 'forwarded across a move', () => move('c', 'a'));
});

test('forwarded to the owner, the instance moved to the node where the caller waits: the caller gets the outcome, sent once', NEEDS_SERVER, async () => {
  assert.equal(await owner(), 'a');
  await sentNow('c', 'before the move home');
  await waitAcrossHandOver('c', 'forwarded, then moved to the caller', () => move('a', 'c'));
});

test('forwarded to the owner, the owner stops gracefully: the caller gets the outcome from the node that took over, sent once', NEEDS_SERVER, async () => {
  assert.equal(await owner(), 'c');
  await sentNow('b', 'before the stop');
  let stopping: Promise<void> = Promise.resolve();
  await waitAcrossHandOver('b', 'forwarded across a stop', async () => {
    stopping = (nodes.get('c') as Gateway).stop();
    await waitFor(async () => {
      const o = await owner();
      return o !== null && o !== 'c' && (nodes.get(o) as Gateway).actors.view(instanceId).connected;
    }, 'another node runs it', 4_000);
  });
  await stopping;
  nodes.delete('c');
});

test('the instance deleted through a node that does not run it while the caller\'s message is being sent: the owner finishes the call first, and the caller is told it may have been delivered, never "nothing was sent"', NEEDS_SERVER, async () => {
  const running = await owner();
  assert.ok(running !== null && nodes.has(running), `a live owner: ${running}`);
  const other = [...nodes.keys()].find((n) => n !== running) as string;
  await sentNow(running, 'before the delete');
  // the next call hangs: the network takes the message and never answers (the call ends at its deadline)
  sandbox.network.addNextCallFault(instanceId, { kind: 'hang' });
  const message = 'being sent at the delete';
  const pending = sendV1(running, message);
  for (let i = 0; i < 40 && (await jobState(message)) !== 'sending'; i++) {
    sim().increment(500);
    await settle();
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(await jobState(message), 'sending');
  assert.equal(ledgerOf(message).length, 1, 'the network took it');
  const deleted = fetch(`${urlOf(other)}/admin/v1/instances/${instanceId}`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then(async (r) => ({
    status: r.status,
    text: await r.text(),
  }));
  // time runs until the call's deadline (on the gateway clock) ends the send, the owner's queue stops with its
  // outcome written, and the delete and the caller are answered
  let answer: { status: number; text: string } | null = null;
  let done: { status: number; text: string } | null = null;
  void pending.then((r) => (answer = r));
  void deleted.then((r) => (done = r));
  for (let i = 0; i < 200 && (answer === null || done === null); i++) {
    sim().increment(500);
    await settle();
    await new Promise((r) => setTimeout(r, 20));
  }
  const r = await pending;
  assert.notEqual(r.status, 503, `told nothing was sent: ${r.text}`);
  assert.equal(r.status, 500, r.text);
  assert.match(r.text, /may have been delivered/);
  const d = await deleted;
  assert.equal(d.status, 200, d.text);
  assert.equal(ledgerOf(message).length, 1, 'sent once');
});

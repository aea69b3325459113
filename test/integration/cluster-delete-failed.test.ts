/**
 * A delete of an instance that fails after the node running it stopped it (the DELETE held behind a row lock
 * until its statement deadline): nothing is deleted, the answer says so, no node takes the instance while the
 * delete waits (its lease is held for the delete, past LEASE_TTL_MS too), and the instance runs again once the
 * hold ended (DELETE_HOLD_MS) and sends. Found: asked by another node, the owner only stopped the queue and
 * kept renewing the lease, so after a failed delete the instance took messages it never sent for as long as
 * that node ran; and from the outside, a released lease (a delete through the owner, or one that joined a move)
 * let another node take the instance while the delete waited, and an unrenewed one expired during a slow delete.
 *
 * Two nodes in this process (test/helpers/two-nodes.ts, LEASE_TTL_MS 2 s): through `b` of an instance `a`
 * runs (the internal route's `drain`), of its own (src/cluster/cluster.ts `forget`), of one being moved from
 * `b` to `a`, and a retry of the failed delete while the lease is held.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PoolClient } from 'pg';
import { NEEDS_SERVER } from '../helpers/db.js';
import { settle, waitFor } from '../helpers/gateway.js';
import { twoNodes, type TwoNodes } from '../helpers/two-nodes.js';
import type { Gateway } from '../../src/gateway.js';
import { DELETE_HOLD_MS } from '../../src/store/instances.js';

const SETTINGS = { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null };
const OPTS = { skip: NEEDS_SERVER.skip, timeout: 90_000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The DELETE of `id` through `b` behind a lock that blocks it and nothing else (`lockAgainstDelete`), until
 * PostgreSQL cancels it (4 s): `whileWaiting` runs once the instance is stopped. Its answer.
 */
/**
 * A row lock on the instance that only a DELETE waits for (KEY SHARE: the lease's foreign-key checks take the same,
 * and an UPDATE of the row's other columns takes NO KEY UPDATE, which does not conflict). A NO KEY UPDATE lock also
 * held back the outcome's write of a send in flight (`last_dispatch_at`, when the call started later than its
 * claim) until its statement deadline, and the move case waited on real time for it: it failed whenever the call
 * started more than a moment after the claim (always on a faster machine, CI's once).
 */
async function lockAgainstDelete(locker: PoolClient, id: string): Promise<void> {
  await locker.query('BEGIN');
  await locker.query('SELECT 1 FROM instances WHERE id = $1 FOR KEY SHARE', [id]);
}

async function refusedDelete(n: TwoNodes, id: string, whileWaiting: () => Promise<void>) {
  const locker = await n.db.pool.connect();
  try {
    await lockAgainstDelete(locker, id);
    const deleting = n.admin('DELETE', `/admin/v1/instances/${id}`);
    await waitFor(() => !n.a.actors.has(id) && !n.b.actors.has(id), 'the instance stopped', 4_000);
    await whileWaiting();
    return await deleting;
  } finally {
    await locker.query('ROLLBACK');
    locker.release();
  }
}

/** No node runs the instance, and `node` holds its live lease, at 1.2 s (two rounds) and 2.5 s (past the TTL). */
async function heldBy(n: TwoNodes, id: string, node: string): Promise<void> {
  for (const at of [1_200, 1_300]) {
    await sleep(at);
    assert.equal(await n.owner(id), node, 'the lease is held for the delete');
    assert.equal(n.a.actors.has(id) || n.b.actors.has(id), false, 'no node runs the instance while the delete waits');
  }
}

/** The delete's 503 says that nothing was deleted and when the instance runs again; the row is there. */
async function refusedAsSaid(n: TwoNodes, id: string, answer: { status: number; text: string; body: { code?: string } }) {
  assert.equal(answer.status, 503, answer.text);
  assert.equal(answer.body.code, 'QUEUE_STORE_UNAVAILABLE');
  assert.match(answer.text, /the delete did not complete \(PostgreSQL cancelled the statement.*\); nothing was deleted\. The instance was stopped for it and runs again within \d+ s: retry the delete/);
  assert.equal((await n.db.pool.query('SELECT 1 FROM instances WHERE id = $1', [id])).rowCount, 1, 'nothing was deleted');
}

/** The instance runs again on `node` and sends a message accepted then. */
async function sendsAgain(n: TwoNodes, id: string, apiKey: string, node: string): Promise<void> {
  const gw = n.nodes.get(node) as Gateway;
  await waitFor(() => gw.actors.has(id) && gw.actors.view(id).connected, `the instance running again on ${node}`, DELETE_HOLD_MS);
  const sent = await fetch(`${n.b.url}/api/v2/send-message`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ phone: '4915112340045', message: 'after the failed delete' }),
  });
  assert.equal(sent.status, 202, await sent.text());
  await waitFor(async () => {
    n.clock.increment(1_000);
    await settle();
    return n.sandbox.network.ledger(id).some((e) => e.body === 'after the failed delete');
  }, 'the message sent', 1_000);
}

/**
 * A send through the node that does not hold the instance while it is held for its delete: refused at once, said
 * why (found from the outside: 3.3-5 s, waiting for a new owner, then "this node does not run the instance").
 */
async function refusedAtOnce(n: TwoNodes, apiKey: string, via: Gateway): Promise<void> {
  const started = performance.now();
  const r = await fetch(`${via.url}/api/v2/send-message`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ phone: '4915112340047', message: 'during the delete' }),
  });
  const text = await r.text();
  assert.equal(r.status, 502, text);
  assert.match(text, /the instance is being deleted; nothing was accepted/);
  assert.ok(performance.now() - started < 1_500, `answered after ${Math.round(performance.now() - started)} ms`);
}

for (const [runsOn, label] of [['a', 'owner elsewhere'], ['b', 'own instance']] as const) {
  test(`delete through b (${label}) failing after the instance was stopped: nothing deleted, no node takes it while the delete waits, and it runs and sends again`, OPTS, async (t) => {
    const n = await twoNodes(t, `delete_failed_${runsOn}`);
    const { id, apiKey } = await n.linked(runsOn, 'kept', runsOn === 'a' ? '4915550460001' : '4915550460002', SETTINGS);
    const answer = await refusedDelete(n, id, async () => {
      await refusedAtOnce(n, apiKey, runsOn === 'a' ? n.b : n.a);
      await heldBy(n, id, runsOn);
    });
    await refusedAsSaid(n, id, answer);
    await sendsAgain(n, id, apiKey, runsOn);
  });
}

test('a delete that joins a move under way (its send in flight) holds the lease too: the node it moves to does not take the instance while the delete waits', OPTS, async (t) => {
  const n = await twoNodes(t, 'delete_failed_move');
  const { id, apiKey } = await n.linked('b', 'moving', '4915550460003', SETTINGS);
  // a send in flight on b: the move's hand-over waits for it (until the call's deadline, on the simulated clock)
  n.sandbox.network.addNextCallFault(id, { kind: 'hang' });
  const sent = await fetch(`${n.b.url}/api/v2/send-message`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ phone: '4915112340046', message: 'in flight at the move' }),
  });
  assert.equal(sent.status, 202, await sent.text());
  const step = async (ms: number) => {
    n.clock.increment(ms);
    await settle();
  };
  await waitFor(async () => {
    await step(200);
    return (await n.db.pool.query("SELECT 1 FROM jobs WHERE instance_id = $1 AND state = 'sending'", [id])).rowCount === 1;
  }, 'the send in flight', 200);
  const moved = await n.admin('POST', `/admin/v1/instances/${id}/move`, { node: 'a' });
  assert.ok(moved.status === 200 || moved.status === 202, moved.text);
  const locker = await n.db.pool.connect();
  try {
    await lockAgainstDelete(locker, id);
    const deleting = n.admin('DELETE', `/admin/v1/instances/${id}`);
    // the delete joins the hand-over (real time for the request to reach it), then the call's deadline ends the send
    await sleep(1_000);
    await waitFor(async () => {
      await step(1_000);
      return !n.b.actors.has(id);
    }, 'the send ended and the instance stopped on b', 400);
    await heldBy(n, id, 'b');
    await refusedAsSaid(n, id, await deleting);
  } finally {
    await locker.query('ROLLBACK');
    locker.release();
  }
  // the hold ended: released, and taken by the node it was moved to
  await sendsAgain(n, id, apiKey, 'a');
});

test('a failed delete tried again while the lease is held: the owner answers at once and the delete goes through', OPTS, async (t) => {
  const n = await twoNodes(t, 'delete_failed_retry');
  const { id } = await n.linked('a', 'retried', '4915550460004', SETTINGS);
  await refusedAsSaid(n, id, await refusedDelete(n, id, async () => undefined));
  const started = performance.now();
  const again = await n.admin('DELETE', `/admin/v1/instances/${id}`);
  assert.equal(again.status, 200, again.text);
  assert.ok(performance.now() - started < 2_000, 'answered at once, not after a refused ask to the owner');
  assert.equal((await n.db.pool.query('SELECT 1 FROM instances WHERE id = $1', [id])).rowCount, 0);
});

test('a graceful stop of the node holding an instance for its delete keeps the hold until it ended: no node takes the instance while the delete waits', OPTS, async (t) => {
  const n = await twoNodes(t, 'delete_failed_stop');
  const { id, apiKey } = await n.linked('a', 'stopped-owner', '4915550460005', SETTINGS);
  let stopping: Promise<void> = Promise.resolve();
  const answer = await refusedDelete(n, id, async () => {
    // found from the outside: released at the stop, the lease was taken by the other node 0.2 s later
    stopping = n.a.stop();
    await heldBy(n, id, 'a');
  });
  await refusedAsSaid(n, id, answer);
  await stopping;
  n.nodes.delete('a');
  await sendsAgain(n, id, apiKey, 'b');
});

/**
 * A delete of an instance that fails after the node running it stopped it (the DELETE held behind a row lock
 * until its statement deadline): nothing is deleted, and the instance runs again within the lease's TTL and
 * sends what it accepts. Found from the inside: asked by another node, the owner only stopped the queue and kept
 * renewing the lease, so after a failed delete the instance took messages it never sent for as long as that node
 * ran. And while the delete waits, no node may take the instance (its lease is kept, unrenewed, not released):
 * released, a round could start it and send before the delete removed it.
 *
 * Two nodes in this process (test/helpers/two-nodes.ts): through `b` of an instance `a` runs (the internal
 * route's `drain`), and through `b` of its own (src/cluster/cluster.ts `forget`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NEEDS_SERVER } from '../helpers/db.js';
import { settle, waitFor } from '../helpers/gateway.js';
import { twoNodes } from '../helpers/two-nodes.js';
import type { Gateway } from '../../src/gateway.js';

const SETTINGS = { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null };
const OPTS = { skip: NEEDS_SERVER.skip, timeout: 60_000 };

for (const [runsOn, label] of [['a', 'owner elsewhere'], ['b', 'own instance']] as const) {
  test(`delete through b (${label}) failing after the instance was stopped: nothing deleted, no node takes it while the delete waits, and it runs and sends again`, OPTS, async (t) => {
    const n = await twoNodes(t, `delete_failed_${runsOn}`);
    const owner = n.nodes.get(runsOn) as Gateway;
    const { id, apiKey } = await n.linked(runsOn, 'kept', runsOn === 'a' ? '4915550460001' : '4915550460002', SETTINGS);
    // a lock that blocks the DELETE (FOR UPDATE) but not the lease's foreign-key checks (FOR KEY SHARE)
    const locker = await n.db.pool.connect();
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM instances WHERE id = $1 FOR NO KEY UPDATE', [id]);
    const deleting = n.admin('DELETE', `/admin/v1/instances/${id}`);
    try {
      await waitFor(() => !owner.actors.has(id), `the instance stopped on ${runsOn}`, 4_000);
      // the DELETE waits on the lock: the lease is still the owner's, and no node runs the instance
      assert.equal(await n.owner(id), runsOn, 'the lease is kept while the delete waits');
      // longer than two rounds (a quarter of the TTL each), shorter than the TTL (2 s): a released lease was taken by then
      await new Promise((r) => setTimeout(r, 1_200));
      assert.equal(n.a.actors.has(id) || n.b.actors.has(id), false, 'no node took the instance while the delete waited');
      const failed = await deleting;
      assert.ok(failed.status >= 500, failed.text);
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
    }
    assert.equal((await n.db.pool.query('SELECT 1 FROM instances WHERE id = $1', [id])).rowCount, 1, 'nothing was deleted');

    // the lease expired (2 s): the instance runs again where it is placed, and sends
    await waitFor(() => owner.actors.has(id) && owner.actors.view(id).connected, `the instance running again on ${runsOn}`, 3_000);
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
  });
}

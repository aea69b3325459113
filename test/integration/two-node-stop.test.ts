/**
 * Two nodes in one process (test/helpers/two-nodes.ts) stopped `b` first (its stop hands its instances to `a`),
 * then `a`: both stops end within a bound, whatever happened before (found in test/e2e/console-stale.test.ts,
 * where `b`'s stop never ended).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NEEDS_SERVER } from '../helpers/db.js';
import { waitFor } from '../helpers/gateway.js';
import { twoNodes, type TwoNodes } from '../helpers/two-nodes.js';

/** a stop of a node with little to hand over: the hand-over, OWNER_CACHE_MS and the server's close, well below this */
const STOP_BOUND_MS = 15_000;

async function stopBThenA(t: Pick<TwoNodes, 'a' | 'b' | 'nodes'>): Promise<void> {
  const bound = <T>(p: Promise<T>, what: string) =>
    Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} did not end within ${STOP_BOUND_MS} ms`)), STOP_BOUND_MS).unref())]);
  await bound(t.b.stop(), "b's stop");
  t.nodes.delete('b');
  await bound(t.a.stop(), "a's stop");
  t.nodes.delete('a');
}

const OPTS = { skip: NEEDS_SERVER.skip, timeout: 60_000 };

test('two nodes: b stops (handing its instances to a), then a', OPTS, async (t) => {
  const n = await twoNodes(t, 'stop_plain');
  await n.linkedOn('a', 'far', '4915550440001');
  await n.linkedOn('b', 'near', '4915550440002');
  await stopBThenA(n);
});

test('two nodes: after a cut of a (blackhole) and its restore, b stops, then a', OPTS, async (t) => {
  const n = await twoNodes(t, 'stop_cut');
  const far = await n.linkedOn('a', 'far', '4915550440011');
  await n.linkedOn('b', 'near', '4915550440012');
  await n.proxyA.cut('blackhole');
  // an ask of b for the instance a runs, unanswered while the cut lasts
  const asked = n.admin('GET', `/admin/v1/instances/${far}`).catch(() => null);
  await new Promise((r) => setTimeout(r, 3_000));
  await n.proxyA.restore();
  await asked;
  await stopBThenA(n);
});

test('two nodes: a queue whose start read failed (a lock on dispatches) and the clock not advanced; b stops, then a', OPTS, async (t) => {
  const n = await twoNodes(t, 'stop_failed_start');
  const far = await n.linkedOn('a', 'far', '4915550440021');
  await n.linkedOn('b', 'near', '4915550440022');
  const locker = await n.db.pool.connect();
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE dispatches IN ACCESS EXCLUSIVE MODE');
  const moving = n.admin('POST', `/admin/v1/instances/${far}/move`, { node: 'b' });
  try {
    await waitFor(async () => (await n.owner(far)) === 'b', 'far taken over by b', 4_000);
    // the start read fails (past the statement deadline) and waits on the simulated clock to be tried again
    await waitFor(
      async () => (await n.b.actors.port(far)?.ask({ type: 'queue.summary' }, 1_000).then(() => 'loaded', (e: unknown) => (e as { code?: string }).code)) === 'QUEUE_STORE_UNAVAILABLE',
      "far's start read failed",
      4_000,
    );
  } finally {
    await locker.query('COMMIT');
    locker.release();
  }
  await moving;
  await stopBThenA(n);
});

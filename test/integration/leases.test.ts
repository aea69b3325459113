/**
 * Leases against a real PostgreSQL (src/cluster/leases.ts): what waits for what.
 * - a renewal or a release never waits for the owner's own open queue transaction (they change only the expiry);
 * - a takeover (an epoch change, a key update) waits until that transaction ended, and the old epoch is refused
 *   from then on;
 * - an owner keeps its epoch when it takes its own live lease again; another node bumps it;
 * - the dispatch claim, one statement that fences itself (src/queue/sql/claimJob.ts), claims only under the live
 *   lease and holds its row as a fenced transaction does.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestDb, NEEDS_SERVER, type TestDb } from '../helpers/db.js';
import { acquireLease, acquireLeases, fenceLease, ownerOf, releaseLease, releaseLeases, renewLeases, retakeLeases, type Lease } from '../../src/cluster/leases.js';
import { registerNode } from '../../src/cluster/nodes.js';
import { withTransaction, type PoolClient } from '../../src/store/pool.js';
import { claimJob } from '../../src/queue/sql/claimJob.js';
import { insertJobs } from '../../src/queue/sql/insertJobs.js';
import { newJobId } from '../../src/ids.js';

let db: TestDb;
const TTL = 60_000;

before(async () => {
  db = await createTestDb('leases');
  for (const id of ['node-a', 'node-b']) await registerNode(db.pool, { id, url: `http://${id}`, capacity: 1 }, null, TTL, async () => false).catch(() => undefined);
});
after(async () => {
  await db?.close();
});

async function newInstance(): Promise<string> {
  const id = randomUUID();
  await db.pool.query(`INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')`, [id, `lease-${id.slice(0, 8)}`]);
  return id;
}

/** A transaction of the owner's queue, fenced, held open until `release()` is called. */
async function openFenced(lease: Lease): Promise<{ release: () => Promise<void> }> {
  let finish!: () => void;
  const finished = new Promise<void>((r) => (finish = r));
  let fenced!: () => void;
  const isFenced = new Promise<void>((r) => (fenced = r));
  const done = withTransaction(db.pool, async (c: PoolClient) => {
    await fenceLease(c, lease);
    fenced();
    await finished;
  });
  await isFenced;
  return {
    release: async () => {
      finish();
      await done;
    },
  };
}

/** Whether some backend of this database waits for a row lock right now. */
async function someoneWaitsForALock(): Promise<boolean> {
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
  );
  return (rows[0]?.n ?? 0) > 0;
}

test('a renewal and a release do not wait for the owner\'s open queue transaction', NEEDS_SERVER, async () => {
  const id = await newInstance();
  const lease = (await acquireLease(db.pool, id, 'node-a', TTL)) as Lease;
  assert.equal(lease.epoch, 1);
  const tx = await openFenced(lease);
  try {
    // with the transaction still open: both statements must come back (a lock wait would hang until it ends)
    const lost = await renewLeases(db.pool, 'node-a', [lease], TTL);
    assert.deepEqual([...lost], [], 'renewed, none lost');
    assert.equal(await someoneWaitsForALock(), false);
  } finally {
    await tx.release();
  }
  const tx2 = await openFenced(lease);
  try {
    await releaseLease(db.pool, lease);
    assert.equal(await ownerOf(db.pool, id), null, 'released at once');
  } finally {
    await tx2.release();
  }
});

/** `n` text jobs of the instance, scheduled at `now`: what a dispatch claim takes. */
async function scheduledJobs(instanceId: string, n: number, now: number): Promise<string[]> {
  const jobs = await insertJobs(db.pool, Array.from({ length: n }, (_, i) => ({
    id: newJobId(), instanceId, originRoute: '/api/v2/send-message', chatId: '4915112345678@c.us', phone: '4915112345678',
    payloadHash: `h${i}`, idempotencyKey: null, priority: 5, notBefore: null, queuedAt: now, scheduledAt: now,
    expiresAt: now + TTL, previousJobId: null, callerBoot: null, kind: 'text' as const, payload: { body: `m${i}`, chatId: '4915112345678@c.us' },
  })));
  await db.pool.query(`UPDATE jobs SET state = 'scheduled' WHERE instance_id = $1`, [instanceId]);
  return jobs.map((j) => j.id);
}

test('a takeover waits for the old owner\'s open queue transaction, then the old epoch is refused', NEEDS_SERVER, async () => {
  const id = await newInstance();
  const old = (await acquireLease(db.pool, id, 'node-a', TTL)) as Lease;
  const tx = await openFenced(old);
  // the lease runs out while the old owner is still inside its transaction (a pause, a partition)
  await db.pool.query(`UPDATE instance_leases SET expires_at = now() - interval '1 second' WHERE instance_id = $1`, [id]);
  let taken: Lease | null | undefined;
  const takeover = acquireLease(db.pool, id, 'node-b', TTL).then((l) => (taken = l));
  for (let i = 0; i < 500 && !(await someoneWaitsForALock()); i++) await new Promise((r) => setImmediate(r));
  assert.equal(await someoneWaitsForALock(), true, 'the takeover waits for the row');
  assert.equal(taken, undefined, 'not taken while the old owner writes');
  await tx.release();
  await takeover;
  assert.deepEqual(taken, { instanceId: id, nodeId: 'node-b', epoch: old.epoch + 1 });
  await assert.rejects(withTransaction(db.pool, (c) => fenceLease(c, old)), { code: 'INSTANCE_UNREACHABLE' });
  await withTransaction(db.pool, (c) => fenceLease(c, taken as Lease));
  assert.deepEqual([...(await renewLeases(db.pool, 'node-a', [old], TTL))], [id], 'the old owner renews nothing: its lease is lost');
});

test('the owner keeps its epoch when it takes its own live lease again; another node cannot take a live lease', async () => {
  const id = await newInstance();
  const first = (await acquireLease(db.pool, id, 'node-a', TTL)) as Lease;
  const again = (await acquireLease(db.pool, id, 'node-a', TTL)) as Lease;
  assert.equal(again.epoch, first.epoch);
  assert.equal(await acquireLease(db.pool, id, 'node-b', TTL), null);
  await releaseLease(db.pool, again);
  const other = (await acquireLease(db.pool, id, 'node-b', TTL)) as Lease;
  assert.equal(other.epoch, first.epoch + 1, 'a takeover after a release bumps the epoch');
});

test('many leases in one statement: free, expired and own ones are taken, another live one is not; a renewal reads back only the lost', async () => {
  const [free, expired, own, others, gone] = [await newInstance(), await newInstance(), await newInstance(), await newInstance(), randomUUID()];
  const ownFirst = (await acquireLease(db.pool, own, 'node-a', TTL)) as Lease;
  const expiredOld = (await acquireLease(db.pool, expired, 'node-b', TTL)) as Lease;
  await db.pool.query(`UPDATE instance_leases SET expires_at = now() - interval '1 second' WHERE instance_id = $1`, [expired]);
  await acquireLease(db.pool, others, 'node-b', TTL);
  const taken = await acquireLeases(db.pool, [free, expired, own, others, gone], 'node-a', TTL);
  assert.deepEqual([...taken.keys()].sort(), [free, expired, own].sort(), 'not the live lease of node-b, not an instance that does not exist');
  assert.equal(taken.get(own)?.epoch, ownFirst.epoch, 'its own lease keeps its epoch');
  assert.equal(taken.get(expired)?.epoch, expiredOld.epoch + 1, 'an expired one taken over bumps it');

  const held = [...taken.values()];
  assert.deepEqual([...(await renewLeases(db.pool, 'node-a', held, TTL))], [], 'all renewed, nothing read back');
  // one lease runs out and node-b takes it; another is released
  await db.pool.query(`UPDATE instance_leases SET expires_at = now() - interval '1 second' WHERE instance_id = $1`, [free]);
  assert.ok(await acquireLease(db.pool, free, 'node-b', TTL));
  await releaseLeases(db.pool, [taken.get(own) as Lease]);
  assert.deepEqual([...(await renewLeases(db.pool, 'node-a', held, TTL))].sort(), [free, own].sort(), 'the lost ones, and only they');
  assert.equal((await ownerOf(db.pool, expired))?.nodeId, 'node-a');
});

test('a lease that ran out while nobody took it is taken back at its epoch; one another node took is not', async () => {
  const [untaken, taken, live] = [await newInstance(), await newInstance(), await newInstance()];
  const held = [...(await acquireLeases(db.pool, [untaken, taken, live], 'node-a', TTL)).values()];
  // a partition longer than the lease: two run out, node-b takes one of them
  await db.pool.query(`UPDATE instance_leases SET expires_at = now() - interval '1 second' WHERE instance_id = ANY($1)`, [[untaken, taken]]);
  assert.ok(await acquireLease(db.pool, taken, 'node-b', TTL));
  const lost = await renewLeases(db.pool, 'node-a', held, TTL);
  assert.deepEqual([...lost].sort(), [untaken, taken].sort());
  const back = await retakeLeases(db.pool, 'node-a', held.filter((l) => lost.has(l.instanceId)), TTL);
  assert.deepEqual([...back], [untaken], 'only the one nobody took');
  assert.equal((await ownerOf(db.pool, untaken))?.nodeId, 'node-a');
  const { rows } = await db.pool.query<{ node_id: string }>('SELECT node_id FROM instance_leases WHERE instance_id = $1', [taken]);
  assert.equal(rows[0]?.node_id, 'node-b', 'node-b keeps what it took');
  const old = held.find((l) => l.instanceId === untaken) as Lease;
  await withTransaction(db.pool, (c) => fenceLease(c, old));
  assert.deepEqual([...(await renewLeases(db.pool, 'node-a', [old], TTL))], [], 'held again at the same epoch');
  assert.deepEqual([...(await retakeLeases(db.pool, 'node-a', [old], TTL))], [], 'a live lease is not taken back (nothing to do)');
});

test('a dispatch claim fenced inside its one statement: claimed under the live lease, refused under an old epoch or an expired lease', async () => {
  const id = await newInstance();
  const now = Date.now();
  const [first, second] = await scheduledJobs(id, 2, now);
  const old = (await acquireLease(db.pool, id, 'node-a', TTL)) as Lease;
  // node-b took the instance over after node-a's lease ran out: node-a's epoch claims nothing
  await db.pool.query(`UPDATE instance_leases SET expires_at = now() - interval '1 second' WHERE instance_id = $1`, [id]);
  const taken = (await acquireLease(db.pool, id, 'node-b', TTL)) as Lease;
  assert.equal(await claimJob(db.pool, id, first as string, now, now, old), null, 'an old epoch claims nothing');
  const claimed = await claimJob(db.pool, id, first as string, now, now, taken);
  assert.equal(claimed?.state, 'sending', 'the live lease claims');
  const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM dispatches WHERE instance_id = $1', [id]);
  assert.equal(rows[0]?.n, 1, 'one dispatch row, for the one claim');
  // an expired lease, even this node's at its epoch, claims nothing
  await db.pool.query(`UPDATE instance_leases SET expires_at = now() - interval '1 second' WHERE instance_id = $1`, [id]);
  assert.equal(await claimJob(db.pool, id, second as string, now, now, taken), null, 'an expired lease claims nothing');
  const { rows: states } = await db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [second]);
  assert.equal(states[0]?.state, 'scheduled', 'the refused job still waits');
});

test('a fenced claim statement locks the lease row: a takeover waits until it committed', NEEDS_SERVER, async () => {
  const id = await newInstance();
  const now = Date.now();
  const [job] = await scheduledJobs(id, 1, now);
  const lease = (await acquireLease(db.pool, id, 'node-a', TTL)) as Lease;
  // the claim statement inside a transaction held open, as if its commit were slow
  let finish!: () => void;
  const finished = new Promise<void>((r) => (finish = r));
  let claimed!: (ok: boolean) => void;
  const didClaim = new Promise<boolean>((r) => (claimed = r));
  const tx = withTransaction(db.pool, async (c: PoolClient) => {
    claimed((await claimJob(c, id, job as string, now, now, lease)) !== null);
    await finished;
  });
  assert.equal(await didClaim, true);
  await db.pool.query(`UPDATE instance_leases SET expires_at = now() - interval '1 second' WHERE instance_id = $1`, [id]);
  let taken: Lease | null | undefined;
  const takeover = acquireLease(db.pool, id, 'node-b', TTL).then((l) => (taken = l));
  for (let i = 0; i < 500 && !(await someoneWaitsForALock()); i++) await new Promise((r) => setImmediate(r));
  assert.equal(await someoneWaitsForALock(), true, 'the takeover waits for the claim');
  assert.equal(taken, undefined);
  finish();
  await tx;
  await takeover;
  assert.equal((taken as Lease | null | undefined)?.nodeId, 'node-b');
});

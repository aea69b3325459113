/**
 * Deleting an instance takes its jobs and idempotency keys with it, though no foreign key cascades to them
 * (sql/0011_queue_rows_fenced_not_keyed.sql): the instance's delete trigger (sql/0012_instance_delete_trigger.sql)
 * removes them after the instance's lease row, so a write under the lease's fence that is still open when the
 * delete comes is waited for and its jobs deleted too, and a write after the delete finds no lease and writes
 * nothing. The trigger is the database's, so a node of an older version, which deletes the instance's row alone,
 * leaves nothing behind either. Real gateway, real PostgreSQL, the lease fence's own functions.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { NEEDS_SERVER } from '../helpers/db.js';
import { fenceLeases, type Lease } from '../../src/cluster/leases.js';
import { insertJobs } from '../../src/queue/sql/insertJobs.js';
import { insertJobsFenced } from '../../src/queue/sql/insertJobsFenced.js';
import { transitionJob } from '../../src/queue/sql/transitionJob.js';
import { newJobId } from '../../src/ids.js';
import type { NewJob } from '../../src/queue/job.js';
import type { PoolClient } from '../../src/store/pool.js';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'instance_delete_fence' });
});
after(async () => {
  await t.stop();
});

async function leaseOf(instanceId: string): Promise<Lease> {
  const { rows } = await t.db.pool.query<{ node_id: string; epoch: string }>('SELECT node_id, epoch FROM instance_leases WHERE instance_id = $1', [instanceId]);
  const row = rows[0];
  if (!row) throw new Error(`no lease of ${instanceId}`);
  return { instanceId, nodeId: row.node_id, epoch: Number(row.epoch) };
}

async function rowsOf(instanceId: string): Promise<{ jobs: number; keys: number }> {
  const { rows } = await t.db.pool.query<{ jobs: number; keys: number }>(
    `SELECT (SELECT count(*)::int FROM jobs WHERE instance_id = $1) AS jobs,
            (SELECT count(*)::int FROM idempotency_keys WHERE instance_id = $1) AS keys`, [instanceId]);
  return rows[0] as { jobs: number; keys: number };
}

const job = (instanceId: string, key: string | null): NewJob => {
  const now = Date.now();
  return {
    id: newJobId(), instanceId, originRoute: '/api/v2/send-message', chatId: '4915112345678@c.us', phone: '4915112345678',
    payloadHash: key === null ? null : 'f'.repeat(64), idempotencyKey: key, priority: 5, notBefore: null, queuedAt: now,
    scheduledAt: null, expiresAt: now + 86_400_000, previousJobId: null, callerBoot: null,
    kind: 'text', payload: { body: 'under the fence', chatId: '4915112345678@c.us' },
  };
};

/**
 * Two instances with a keyed job each; `del` deletes the first. Nothing of it is left after, and the other's
 * job and key are untouched.
 */
async function deletedBeside(name: string, del: (instanceId: string) => Promise<void>): Promise<void> {
  const doomed = await t.createInstance(`doomed-${name}`);
  const kept = await t.createInstance(`kept-${name}`);
  for (const { apiKey } of [doomed, kept]) {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'x', idempotencyKey: `delete-fence-${name}` });
    assert.equal(r.status, 202, r.text);
  }
  assert.deepEqual(await rowsOf(doomed.instance.id), { jobs: 1, keys: 1 });
  await del(doomed.instance.id);
  assert.deepEqual(await rowsOf(doomed.instance.id), { jobs: 0, keys: 0 });
  const { rows } = await t.db.pool.query('SELECT 1 FROM instance_leases WHERE instance_id = $1', [doomed.instance.id]);
  assert.equal(rows.length, 0, 'its lease row went with it');
  assert.deepEqual(await rowsOf(kept.instance.id), { jobs: 1, keys: 1 });
}

test('deleting an instance deletes its jobs and idempotency keys, and nobody else\'s', async () => {
  await deletedBeside('by-api', async (id) => {
    const del = await t.admin('DELETE', `/admin/v1/instances/${id}`);
    assert.equal(del.status, 200, del.text);
  });
});

test('a write under the fence still open when the instance is deleted: the delete waits for it, and its jobs and keys go too', NEEDS_SERVER, async () => {
  const { instance } = await t.createInstance('deleted-mid-write');
  const r = await deleteDuringFencedWrite(instance.id, async (writer, startDelete) => {
    await insertJobs(writer, [job(instance.id, null), job(instance.id, 'delete-fence-mid-write')]);
    await startDelete();
  });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(await rowsOf(instance.id), { jobs: 0, keys: 0 }, 'nothing of the deleted instance is left');
});

/**
 * The same with an outcome written under the fence, the instance's first of its state (here its first cancel):
 * the outcome totals' trigger (sql/0018_outcome_totals.sql) inserts the instance's row for that state. With a
 * foreign key from job_outcome_totals to instances, that insert waited for the instance's row, which the delete
 * held while it waited for this transaction's lease row: PostgreSQL found a deadlock and the delete failed
 * (found from the outside; before 0018 the delete waited and went through, as above).
 */
test('an outcome written under the fence still open when the instance is deleted: the delete waits for it, no deadlock', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('deleted-mid-outcome');
  const later = new Date(Date.now() + 3_600_000).toISOString();
  const sent = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'x', notBefore: later });
  assert.equal(sent.status, 202, sent.text);
  const jobId = String(sent.body.data?.jobId);
  const r = await deleteDuringFencedWrite(instance.id, async (writer, startDelete) => {
    await startDelete();
    const moved = await transitionJob(writer, jobId, { type: 'CANCEL' }, { terminalAt: Date.now() });
    assert.equal(moved?.job.state, 'cancelled');
  });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(await rowsOf(instance.id), { jobs: 0, keys: 0 }, 'nothing of the deleted instance is left');
  const { rows } = await t.db.pool.query('SELECT state, n FROM job_outcome_totals WHERE instance_id = $1', [instance.id]);
  assert.deepEqual(rows, [], 'nor its outcome totals');
});

test('an instance deleted by its row alone (a node from before migration 0011 deletes so) leaves no jobs or keys', async () => {
  await deletedBeside('by-row', async (id) => {
    await t.db.pool.query('DELETE FROM instances WHERE id = $1', [id]);
  });
});

test('a write after the delete finds no lease and writes nothing', async () => {
  const { instance } = await t.createInstance('written-after-delete');
  const lease = await leaseOf(instance.id);
  const del = await t.admin('DELETE', `/admin/v1/instances/${instance.id}`);
  assert.equal(del.status, 200, del.text);
  const { held, jobs } = await insertJobsFenced(t.db.pool, [job(instance.id, 'delete-fence-after')], [lease]);
  assert.deepEqual([...(held ?? [])], []);
  assert.deepEqual(jobs, [null]);
  assert.deepEqual(await rowsOf(instance.id), { jobs: 0, keys: 0 });
});

/**
 * A transaction under the instance's lease fence, still open while the instance's delete waits for it: `work` writes
 * in it and calls `startDelete()` where the delete should begin (it returns once the delete waits on the fence);
 * the transaction then commits, and the delete's answer is returned.
 */
async function deleteDuringFencedWrite(
  instanceId: string,
  work: (writer: PoolClient, startDelete: () => Promise<void>) => Promise<void>,
): Promise<{ status: number; text: string }> {
  const lease = await leaseOf(instanceId);
  const writer = await t.db.pool.connect();
  let deleted: Promise<{ status: number; text: string }> | null = null;
  try {
    await writer.query('BEGIN');
    assert.deepEqual([...await fenceLeases(writer, [lease])], [instanceId], 'the fence holds');
    await work(writer, async () => {
      deleted = t.admin('DELETE', `/admin/v1/instances/${instanceId}`);
      // the instance's delete reaches its lease row and waits for this transaction
      await waitForLockWait('DELETE FROM instances');
    });
    await writer.query('COMMIT');
  } catch (err) {
    await writer.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    writer.release();
  }
  if (!deleted) throw new Error('the write never started the delete');
  return deleted;
}

/** Until a backend of this database waits for a lock in a statement that starts with `query` (30 s at most: the delete first stops the instance's actors). */
async function waitForLockWait(query: string): Promise<void> {
  for (let i = 0; i < 3_000; i++) {
    const { rows } = await t.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`, [`${query}%`]);
    if ((rows[0]?.n ?? 0) > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no statement ${query} waited for a lock`);
}

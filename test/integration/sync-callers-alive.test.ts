/**
 * Which waiting v1 jobs a queue's start expires as orphans (src/queue/sql/orphanedSyncJobs.ts, the start reads'
 * src/queue/sql/loadStarts.ts): only those whose caller's process is gone, not every job of another process.
 * Found from the outside with three nodes: a move, or a graceful stop, of an instance made the new owner expire
 * the messages of callers still waiting on live nodes (the node that forwarded the send, or the one that handed
 * the instance over), and nothing was sent. A caller is alive while a node row names its process's boot id
 * with a heartbeat younger than that node's liveness (sql/0015). Real PostgreSQL.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { createInstance } from '../../src/store/instances.js';
import { insertJobs } from '../../src/queue/sql/insertJobs.js';
import { orphanedSyncJobs } from '../../src/queue/sql/orphanedSyncJobs.js';
import { loadStarts } from '../../src/queue/sql/loadStarts.js';
import { registerNode } from '../../src/cluster/nodes.js';
import { BOOT_ID } from '../../src/queue/sync-callers.js';
import { newJobId } from '../../src/ids.js';
import { claimJob } from '../../src/queue/sql/claimJob.js';

let db: TestDb;
before(async () => {
  db = await createTestDb('sync_callers_alive');
});
after(async () => {
  await db.close();
});

/** A live node's process and a process whose node's heartbeat is older than its liveness (rows `live-…`, `stale-…`). */
async function liveAndStale(suffix: string, ports: [number, number]): Promise<{ live: string; stale: string }> {
  const live = randomUUID();
  const stale = randomUUID();
  await db.pool.query(`INSERT INTO nodes (id, url, capacity, boot_id, live_ms, heartbeat_at) VALUES
    ($3, $5, 100, $1, 10000, now()),
    ($4, $6, 100, $2, 10000, now() - interval '11 seconds')`, [live, stale, `live${suffix}`, `stale${suffix}`, `http://127.0.0.1:${ports[0]}`, `http://127.0.0.1:${ports[1]}`]);
  return { live, stale };
}

/** A waiting v1 text job of `instanceId` whose synchronous caller is `callerBoot`'s process, due at `scheduledAt`. */
const syncJob = (instanceId: string, now: number, scheduledAt: number) => (body: string, callerBoot: string | null) => ({
  id: newJobId(), instanceId, originRoute: '/api/send-message', chatId: '4915112345678@c.us', phone: '4915112345678',
  payloadHash: null, idempotencyKey: null, priority: 9, notBefore: null, queuedAt: now, scheduledAt,
  expiresAt: now + 3_600_000, previousJobId: null, callerBoot, kind: 'text' as const, payload: { body, chatId: '4915112345678@c.us' },
});

test('a waiting v1 job is an orphan only when its caller\'s process is gone', async () => {
  const { instance } = await createInstance(db.pool, { name: 'callers', driver: 'sandbox' });
  // this process, registered as a node (as every gateway registers when it starts)
  await registerNode(db.pool, { id: 'here', url: 'http://127.0.0.1:1', capacity: 100 }, null, 10_000, async () => false);
  // another live node, one whose heartbeat is older than its liveness, and a process no row names
  const { live, stale } = await liveAndStale('', [2, 3]);
  const now = Date.now();
  const job = syncJob(instance.id, now, now + 60_000);
  const jobs = await insertJobs(db.pool, [job('mine', BOOT_ID), job('forwarded from a live node', live), job('of a dead node', stale), job('of an earlier process', randomUUID())]);
  const ids = jobs.map((j) => j?.id);

  const client = await db.pool.connect();
  try {
    await client.query('BEGIN');
    const orphans = (await orphanedSyncJobs(client, instance.id, BOOT_ID)).map((j) => j.id).sort();
    await client.query('COMMIT');
    assert.deepEqual(orphans, [ids[2], ids[3]].sort());
  } finally {
    client.release();
  }
  assert.equal((await loadStarts(db.pool, [instance.id], now, BOOT_ID)).get(instance.id)?.needsRecovery, true, 'the start reads see it too');

  // with only callers alive, nothing to recover
  await db.pool.query('UPDATE jobs SET caller_boot = NULL WHERE id = ANY($1)', [[ids[2], ids[3]]]);
  assert.equal((await loadStarts(db.pool, [instance.id], now, BOOT_ID)).get(instance.id)?.needsRecovery, false);
});

test('the claim refuses a waiting v1 job whose caller\'s process is gone, and claims the others', async () => {
  const { instance } = await createInstance(db.pool, { name: 'claims', driver: 'sandbox' });
  const { live, stale } = await liveAndStale('-2', [4, 5]);
  const now = Date.now();
  const job = syncJob(instance.id, now, now);
  const jobs = await insertJobs(db.pool, [job('mine', BOOT_ID), job('of a live node', live), job('no caller', null), job('of a dead node', stale), job('of an earlier process', randomUUID())]);
  const claimed: (string | null)[] = [];
  for (const j of jobs) claimed.push((await claimJob(db.pool, instance.id, j?.id ?? '', now, now))?.state ?? null);
  assert.deepEqual(claimed, ['sending', 'sending', 'sending', null, null], 'claimed: own, a live node\'s, none; refused: a dead node\'s, an earlier process\'s');
  const { rows } = await db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = ANY($1)', [[jobs[3]?.id, jobs[4]?.id]]);
  assert.deepEqual(rows.map((r) => r.state), [jobs[3]?.state, jobs[4]?.state], 'the refused ones still wait (the queue expires them)');
});

/**
 * The group commit's one-statement path (src/queue/group-commit.ts `quiet`, src/queue/sql/insertJobsFenced.ts)
 * against a real PostgreSQL: a group without keys and without wanted events is one statement that fences itself
 * with each instance's lease (an old epoch, a released lease or none at all inserts nothing of that instance and
 * refuses its unit alone), and so does a group with keys, which it remembers (of held instances only); a group
 * with a wanted event is still a transaction; the statement looks up the group's keys itself and answers the
 * remembered ones with their jobs, and only the units of a replay decide again, from that answer; a connection that breaks under the statement is an unknown
 * outcome, not "nothing happened".
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createTestDb, NEEDS_SERVER, type TestDb } from '../helpers/db.js';
import { waitFor } from '../helpers/gateway.js';
import { acquireLease, fenceLeases, releaseLease, type Lease } from '../../src/cluster/leases.js';
import { registerNode } from '../../src/cluster/nodes.js';
import { AcceptanceCommitter, GROUP_MS_BOUNDS, type AcceptUnit, type CommitterDeps, type UnitWrites } from '../../src/queue/group-commit.js';
import { CommitOutcomeUnknown, oneStatement } from '../../src/store/pool.js';
import { newJobId } from '../../src/ids.js';
import type { NewJob } from '../../src/queue/job.js';
import { insertJobsFenced, type InstanceLeaseRef } from '../../src/queue/sql/insertJobsFenced.js';
import { findKeysAcross } from '../../src/queue/sql/findByIdempotencyKeys.js';
import { ROWS_PER_STATEMENT } from '../../src/queue/sql/insertJobs.js';

let db: TestDb;
const TTL = 60_000;
const DAY = 86_400_000;
const NOW = Date.now();

before(async () => {
  db = await createTestDb('group_one_statement');
  // the second node is refused without a cluster secret; its row is all a lease needs
  for (const id of ['node-a', 'node-b']) await registerNode(db.pool, { id, url: `http://${id}`, capacity: 1 }, null, TTL, async () => false).catch(() => undefined);
});
after(async () => {
  await db?.close();
});

async function newInstance(): Promise<string> {
  const id = randomUUID();
  await db.pool.query(`INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')`, [id, `one-${id.slice(0, 8)}`]);
  return id;
}

function job(instanceId: string, n: number, key: string | null = null): NewJob {
  return {
    id: newJobId(), instanceId, originRoute: '/api/v2/send-message', chatId: '4915112345678@c.us', phone: '4915112345678',
    payloadHash: `h${n}`, idempotencyKey: key, priority: 5, notBefore: null, queuedAt: NOW, scheduledAt: NOW + 1_000 * n,
    expiresAt: NOW + TTL, previousJobId: null, callerBoot: null, kind: 'text', payload: { body: `m${n}`, chatId: '4915112345678@c.us' },
  };
}

/** A unit of `jobs`, each with an event. */
function unit(instanceId: string, jobs: NewJob[]): AcceptUnit {
  return {
    instanceId,
    keys: jobs.flatMap((j) => (j.idempotencyKey === null ? [] : [j.idempotencyKey])),
    since: NOW - TTL,
    size: jobs.length,
    decide: (): UnitWrites => ({ jobs, events: (inserted) => inserted.map((j) => ({ event: 'message.queued', data: { jobId: j.id } })) }),
  };
}

/** A committer as the actor system builds it: fenced with node-a's leases; `wanted` says which instances' webhooks hear of acceptances. */
function committer(held: Map<string, Lease>, wanted: Set<string> = new Set()): { c: AcceptanceCommitter; emitted: string[]; told: [number, number][] } {
  const emitted: string[] = [];
  /** what the metrics hook was told: each group's time and requests */
  const told: [number, number][] = [];
  const deps: CommitterDeps = {
    pool: db.pool,
    metrics: { committed: (ms, requests) => told.push([ms, requests]) },
    fence: (q, ids) => fenceLeases(q, ids.flatMap((id) => held.get(id) ?? [])),
    leasesOf: (ids): InstanceLeaseRef[] => ids.flatMap((id) => held.get(id) ?? []),
    quiet: async (ids) => !ids.some((id) => wanted.has(id)),
    emit: async (_q, items) => {
      for (const it of items) emitted.push(it.instanceId);
      return items.map(() => null);
    },
  };
  return { c: new AcceptanceCommitter(deps), emitted, told };
}

const stored = async (instanceId: string): Promise<string[]> =>
  (await db.pool.query<{ id: string }>('SELECT id FROM jobs WHERE instance_id = $1 ORDER BY seq', [instanceId])).rows.map((r) => r.id);

test('one statement fences each instance: the held one commits, an old epoch, a released lease and no lease commit nothing and are refused alone', async () => {
  const [held, old, released, none] = [await newInstance(), await newInstance(), await newInstance(), await newInstance()];
  const leases = new Map<string, Lease>();
  for (const id of [held, old, released]) leases.set(id, (await acquireLease(db.pool, id, 'node-a', TTL)) as Lease);
  // node-b takes `old` over (its lease ran out and was taken at a new epoch); node-a still believes it holds it
  await db.pool.query(`UPDATE instance_leases SET node_id = 'node-b', epoch = epoch + 1 WHERE instance_id = $1`, [old]);
  await releaseLease(db.pool, leases.get(released) as Lease);
  const { c, emitted, told } = committer(leases);
  const jobsOf = [held, old, released, none].map((id, i) => [job(id, 2 * i), job(id, 2 * i + 1)]);
  const units = [held, old, released, none].map((id, i) => unit(id, jobsOf[i] as NewJob[]));
  const results = await Promise.allSettled(units.map((u) => c.commit(u)));

  const [ok, ...refused] = results;
  assert.equal(ok?.status, 'fulfilled');
  if (ok?.status === 'fulfilled') {
    assert.deepEqual(ok.value.jobs.map((j) => j.id), jobsOf[0]?.map((j) => j.id), 'the held instance: both jobs, in order');
    assert.ok(ok.value.jobs.every((j) => j.seq > 0 && j.state === 'scheduled'));
    assert.equal(ok.value.evented, false);
  }
  for (const r of refused) {
    assert.equal(r.status, 'rejected');
    if (r.status === 'rejected') assert.equal((r.reason as { code?: string }).code, 'INSTANCE_UNREACHABLE');
  }
  assert.equal((await stored(held)).length, 2);
  for (const id of [old, released, none]) assert.deepEqual(await stored(id), [], 'nothing of an instance whose lease did not hold');
  assert.deepEqual(emitted, [], 'no event was asked for: nobody wants one');
  assert.equal(c.stats.groups, 1, 'one group for the four units');
  // what the benchmarks read: one group run of the four units' eight requests, running the whole time it ran
  assert.equal(c.stats.runs, 1);
  assert.equal(c.stats.rows, 8);
  assert.ok(c.stats.groupMs > 0);
  assert.equal(c.stats.busyMs, c.stats.groupMs, 'one group alone: the time one was running is its own');
  // its eight requests in the bucket of its time, and the metrics hook told the same
  const bucket = GROUP_MS_BOUNDS.findIndex((bound) => c.stats.groupMs <= bound);
  assert.deepEqual(c.stats.rowsByMs, c.stats.rowsByMs.map((_, i) => (i === (bucket === -1 ? GROUP_MS_BOUNDS.length : bucket) ? 8 : 0)));
  assert.deepEqual(told, [[c.stats.groupMs, 8]]);
});

test('a group with a wanted event is still a transaction (events written); a group with keys is one statement that remembers them', async () => {
  const [a, b] = [await newInstance(), await newInstance()];
  const leases = new Map<string, Lease>();
  for (const id of [a, b]) leases.set(id, (await acquireLease(db.pool, id, 'node-a', TTL)) as Lease);
  const { c, emitted } = committer(leases, new Set([a]));
  await Promise.all([c.commit(unit(a, [job(a, 1)])), c.commit(unit(b, [job(b, 2)]))]);
  assert.deepEqual(emitted.sort(), [a, b].sort(), 'the events of the group were written (the webhook of one wants them)');

  const { c: keyed, emitted: none } = committer(leases);
  const k = job(b, 3, 'one-statement-key');
  const r = await keyed.commit(unit(b, [k, job(b, 4)]));
  assert.equal(r.jobs.length, 2);
  const { rows } = await db.pool.query<{ job_id: string }>('SELECT job_id FROM idempotency_keys WHERE instance_id = $1 AND key = $2', [b, 'one-statement-key']);
  assert.equal(rows[0]?.job_id, k.id, 'the key is remembered with its job');
  assert.deepEqual(none, [], 'one statement: no event asked for (nobody wants one)');

  // the one statement fences the keys too: an instance whose lease does not hold remembers none
  const gone = await newInstance();
  const stale = new Map<string, Lease>([[gone, { instanceId: gone, nodeId: 'node-a', epoch: 99 }]]);
  const { c: fenced } = committer(stale);
  await assert.rejects(fenced.commit(unit(gone, [job(gone, 5, 'fenced-out-key')])), (err: { code?: string }) => err.code === 'INSTANCE_UNREACHABLE');
  const { rowCount } = await db.pool.query('SELECT 1 FROM idempotency_keys WHERE instance_id = $1', [gone]);
  assert.equal(rowCount, 0, 'no key of an instance whose lease did not hold');
  assert.deepEqual(await stored(gone), []);
});

test('the one statement looks up the keys itself: a group is one round trip, replays or not; a replay\'s unit decides again from its keys, alone', async () => {
  const [a, b, c, d] = [await newInstance(), await newInstance(), await newInstance(), await newInstance()];
  const leases = new Map<string, Lease>();
  for (const id of [a, b, c, d]) leases.set(id, (await acquireLease(db.pool, id, 'node-a', TTL)) as Lease);
  const { c: committer1 } = committer(leases);
  let checkouts = 0;
  const counted = () => void (checkouts += 1);
  db.pool.on('acquire', counted);
  try {
    /** As acceptance decides: a known key is a replay (no job), else a new job with it; `full`: nothing new fits (QUEUE_FULL). */
    const seen: { instanceId: string; known: string[] }[] = [];
    const keyed = (instanceId: string, key: string, n: number, full = false): AcceptUnit => ({
      instanceId, keys: [key], since: NOW - 7 * DAY, size: 1,
      decide: (known) => {
        seen.push({ instanceId, known: [...known.keys()] });
        return { jobs: known.has(key) || full ? [] : [job(instanceId, n, key)], events: () => [] };
      },
    });
    // the first jobs of b and d, with their keys; c's key was remembered 8 days ago (past the retention)
    const first = await Promise.all([committer1.commit(keyed(b, 'seen-b', 1)), committer1.commit(keyed(d, 'seen-d', 2))]);
    assert.equal(checkouts, 1, 'two fresh keys: one statement, no read before it');
    await db.pool.query(
      `INSERT INTO idempotency_keys (instance_id, key, job_id, payload_hash, created_at) VALUES ($1, 'old-c', 'wq_long_gone', 'h', $2)`,
      [c, new Date(NOW - 8 * DAY)],
    );
    checkouts = 0;
    seen.length = 0;
    const [ra, rb, rc, rd] = await Promise.all([
      committer1.commit(keyed(a, 'fresh-a', 3)),
      committer1.commit(keyed(b, 'seen-b', 4)),
      committer1.commit(keyed(c, 'old-c', 5)),
      // its queue is full: the optimistic decision writes nothing, yet its key names a job (a replay, not QUEUE_FULL)
      committer1.commit(keyed(d, 'seen-d', 6, true)),
    ]);
    assert.equal(checkouts, 1, 'one statement: it answers the replays\' keys with their jobs, and the replays write nothing');
    assert.equal(ra.jobs.length, 1);
    assert.equal(rc.jobs.length, 1, 'a key past the retention is no replay');
    assert.deepEqual([rb.jobs.length, rd.jobs.length], [0, 0], 'the replays insert nothing');
    const decidedWith = (id: string) => seen.filter((x) => x.instanceId === id).map((x) => x.known);
    assert.deepEqual(decidedWith(a), [[]], 'decided once, as if no key were known');
    assert.deepEqual(decidedWith(c), [[]]);
    assert.deepEqual(decidedWith(b), [[], ['seen-b']], 'decided again from what its key names');
    assert.deepEqual(decidedWith(d), [[], ['seen-d']]);
    assert.deepEqual(await stored(b), first[0].jobs.map((j) => j.id), 'no second job for the replayed key');
    assert.deepEqual(await stored(d), first[1].jobs.map((j) => j.id));
    const { rows } = await db.pool.query<{ job_id: string }>('SELECT job_id FROM idempotency_keys WHERE instance_id = $1 AND key = \'old-c\'', [c]);
    assert.equal(rows[0]?.job_id, rc.jobs[0]?.id, 'the expired key is taken over by the new job');

    // a unit with a replay and a fresh request: decided again, and its fresh job written by a second statement
    checkouts = 0;
    const mixed: AcceptUnit = {
      instanceId: b, keys: ['seen-b', 'fresh-b'], since: NOW - 7 * DAY, size: 2,
      decide: (known) => ({ jobs: known.has('seen-b') ? [job(b, 8, 'fresh-b')] : [job(b, 7, 'seen-b'), job(b, 8, 'fresh-b')], events: () => [] }),
    };
    const rm = await committer1.commit(mixed);
    assert.equal(checkouts, 2, 'the statement, then the statement of the unit\'s fresh job');
    assert.equal(rm.jobs.length, 1);
    assert.deepEqual(await stored(b), [...first[0].jobs, ...rm.jobs].map((j) => j.id), 'the fresh job once, no second job for the replayed key');
  } finally {
    db.pool.off('acquire', counted);
  }
});

test('a remembered key\'s job as the statement answers it is the job a read of the key finds, every column', async () => {
  const a = await newInstance();
  const lease = (await acquireLease(db.pool, a, 'node-a', TTL)) as Lease;
  const j1 = { ...job(a, 1, 'answered-key'), notBefore: NOW + 5_000, previousJobId: 'wq_before' };
  const j2 = job(a, 2, 'answered-key-2');
  await insertJobsFenced(db.pool, [j1, j2], [lease]);
  // every nullable column set on one of them (a job that was sent), as a replay of a finished job answers it
  await db.pool.query(
    `UPDATE jobs SET state = 'sent', dispatched_at = $2, terminal_at = $3, attempts = 1, delivery_confidence = 'confirmed',
            message_id = 'msg-1', result_code = 'OK', error_message = 'none', unknown_reason = 'none' WHERE id = $1`,
    [j1.id, new Date(NOW + 6_001), new Date(NOW + 6_502)],
  );
  const since = NOW - DAY;
  const r = await insertJobsFenced(db.pool, [job(a, 3, 'answered-key'), job(a, 4, 'answered-key-2')], [lease], { instanceIds: [a, a], keys: ['answered-key', 'answered-key-2'], since });
  assert.deepEqual(r.jobs, [null, null], 'a known instance writes nothing');
  const read = (await findKeysAcross(db.pool, [{ instanceId: a, keys: ['answered-key', 'answered-key-2'], since }])).get(a);
  const answered = r.remembered.get(a);
  assert.ok(read && answered);
  assert.deepEqual([...answered.keys()].sort(), ['answered-key', 'answered-key-2']);
  for (const [key, found] of read) {
    const got = answered.get(key);
    assert.ok(got, key);
    assert.deepEqual({ job: got.job, payloadHash: got.payloadHash }, found, `the job of ${key} as the statement answered it`);
    assert.equal(got.at, NOW, 'remembered at the job\'s queued_at');
  }
});

test('a replay\'s second statement that fails fails only the replay: the group\'s other unit is answered before it and written once', async () => {
  const [a, b] = [await newInstance(), await newInstance()];
  const leases = new Map<string, Lease>();
  for (const id of [a, b]) leases.set(id, (await acquireLease(db.pool, id, 'node-a', TTL)) as Lease);
  const { c } = committer(leases);
  const first = await c.commit(unit(b, [job(b, 1, 'seen-key-b')]));
  // a key of b that b's next decision will write, held by another job: taken after b looked (its statement fails)
  await db.pool.query(
    `INSERT INTO idempotency_keys (instance_id, key, job_id, payload_hash, created_at) VALUES ($1, 'taken-meanwhile', 'wq_elsewhere', 'h', $2)`,
    [b, new Date(NOW)],
  );
  let n = 10;
  let aAnswered = false;
  let aAnsweredAtRetry: boolean | null = null;
  // as acceptance decides: a new job (a new id) every time it decides
  const fresh: AcceptUnit = { instanceId: a, keys: [], since: NOW - 7 * DAY, size: 1, decide: () => ({ jobs: [job(a, n++)], events: () => [] }) };
  const replay: AcceptUnit = {
    instanceId: b, keys: ['seen-key-b'], since: NOW - 7 * DAY, size: 1,
    decide: (known) => {
      if (known.size === 0) return { jobs: [job(b, n++, 'seen-key-b')], events: () => [] };
      // after what is already queued: the other unit's answer, if it was settled before this decision
      queueMicrotask(() => (aAnsweredAtRetry = aAnswered));
      return { jobs: [job(b, n++, 'taken-meanwhile')], events: () => [] };
    },
  };
  const [ra, rb] = await Promise.allSettled([c.commit(fresh).finally(() => (aAnswered = true)), c.commit(replay)]);
  assert.equal(ra.status, 'fulfilled', 'the other unit committed with the first statement');
  assert.equal(rb.status, 'rejected');
  assert.match(String((rb as PromiseRejectedResult).reason), /taken concurrently/);
  assert.equal(aAnsweredAtRetry, true, 'answered before the replay decided again');
  const storedA = await stored(a);
  assert.equal(storedA.length, 1, 'written once: the replay\'s failure did not send it round again');
  assert.deepEqual(storedA, (ra as PromiseFulfilledResult<{ jobs: { id: string }[] }>).value.jobs.map((j) => j.id));
  assert.deepEqual(await stored(b), first.jobs.map((j) => j.id), 'nothing new of the replay');
});

test('a quiet unit too large for one statement is a transaction that builds no events; a wanted one writes them', async () => {
  const [quiet, heard] = [await newInstance(), await newInstance()];
  const leases = new Map<string, Lease>();
  for (const id of [quiet, heard]) leases.set(id, (await acquireLease(db.pool, id, 'node-a', TTL)) as Lease);
  const { c, emitted } = committer(leases, new Set([heard]));
  const many = (id: string) => Array.from({ length: ROWS_PER_STATEMENT + 1 }, (_, n) => job(id, n));
  let built = 0;
  const counted = (u: AcceptUnit): AcceptUnit => ({ ...u, decide: (known) => {
    const d = u.decide(known);
    return { ...d, events: (inserted) => (built++, d.events(inserted)) };
  } });
  const r = await c.commit(counted(unit(quiet, many(quiet))));
  assert.equal(r.jobs.length, ROWS_PER_STATEMENT + 1);
  assert.equal((await stored(quiet)).length, ROWS_PER_STATEMENT + 1, 'all committed, in statements of its transaction');
  assert.equal(built, 0, 'no events built for a group nobody hears of');
  assert.deepEqual(emitted, []);
  await c.commit(counted(unit(heard, many(heard))));
  assert.equal(built, 1);
  assert.equal(emitted.length, ROWS_PER_STATEMENT + 1, 'the events of a group a webhook hears of are written');
});

test('a connection that breaks under the one statement: CommitOutcomeUnknown, never "nothing was written"', NEEDS_SERVER, async () => {
  const holder = new pg.Client(db.config);
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE');
  const id = await newInstance();
  const r = oneStatement(db.pool, 'INSERT INTO jobs (id, instance_id, state, kind, origin_route, payload, payload_hash, priority, queued_at, expires_at) VALUES ($1, $2, \'scheduled\', \'text\', \'/t\', \'{}\', \'h\', 5, now(), now())', [newJobId(), id]).then(
    () => null,
    (err: unknown) => err,
  );
  try {
    const pid = await waitFor(async () => {
      const { rows } = await db.pool.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO jobs%'");
      return rows[0]?.pid;
    }, 'the statement waiting for the lock');
    await db.pool.query('SELECT pg_terminate_backend($1)', [pid]);
    const err = await r;
    assert.ok(err instanceof CommitOutcomeUnknown, `an unknown outcome, got ${String(err)}`);
  } finally {
    await holder.query('ROLLBACK');
    await holder.end();
  }
});

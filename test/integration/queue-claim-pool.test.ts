/**
 * The dispatch lane's claims have connections of their own (src/store/pool.ts claimPool): a claim answers
 * while every connection of the pool is held (by acceptance group commits, outcome writes…), instead of
 * queueing behind them. Real PostgreSQL.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, NEEDS_SERVER, type TestDb } from '../helpers/db.js';
import { waitFor } from '../helpers/gateway.js';
import { CLAIM_CONNECTIONS, checkout, claimPool, createPool, warmClaimPool } from '../../src/store/pool.js';

let db: TestDb;
before(async () => {
  db = await createTestDb('queue_claim_pool', { migrate: false });
});
after(async () => {
  await db.close();
});

test('a claim is answered while every connection of the pool is checked out', NEEDS_SERVER, async () => {
  const pool = createPool({ ...db.config, max: 3 });
  const held = await Promise.all([checkout(pool), checkout(pool), checkout(pool)]);
  try {
    assert.equal(pool.totalCount, 3);
    // the pool is exhausted: a query on it would wait for one of `held`
    const claims = claimPool(pool);
    assert.notEqual(claims, pool);
    const answers = await Promise.all(Array.from({ length: CLAIM_CONNECTIONS + 1 }, (_, i) => claims.query<{ n: number }>('SELECT $1::int AS n', [i])));
    assert.deepEqual(answers.map((a) => a.rows[0]?.n), Array.from({ length: CLAIM_CONNECTIONS + 1 }, (_, i) => i));
    assert.equal(pool.waitingCount, 0, 'nothing queued on the pool itself');
    assert.ok(claims.totalCount <= CLAIM_CONNECTIONS, `at most ${CLAIM_CONNECTIONS} claim connections, got ${claims.totalCount}`);
    assert.equal(claimPool(pool), claims, 'one claims pool per pool');
  } finally {
    for (const h of held) h.release();
  }
  await pool.end();
  assert.equal(pool.ended, true);
  // its end closed the claims' connections too; a claim after it goes to the ended pool (and fails there)
  assert.equal(claimPool(pool), pool);
});

test('the claim connections are opened ahead of the first claim and stay open', NEEDS_SERVER, async () => {
  const pool = createPool({ ...db.config, max: 3 });
  try {
    await Promise.all([warmClaimPool(pool), warmClaimPool(pool)]);
    const claims = claimPool(pool);
    assert.equal(claims.totalCount, CLAIM_CONNECTIONS, 'all of them, opened once');
    assert.equal(claims.idleCount, CLAIM_CONNECTIONS);
    assert.equal(pool.totalCount, 0, 'none of the pool\'s');
    await warmClaimPool(pool);
    assert.equal(claims.totalCount, CLAIM_CONNECTIONS, 'open ones are enough');
    // claims take them as they are
    await Promise.all(Array.from({ length: CLAIM_CONNECTIONS }, () => claims.query('SELECT 1')));
    assert.equal(claims.totalCount, CLAIM_CONNECTIONS);
  } finally {
    await pool.end();
  }
});

test('a pool of at most two connections (the embedded PostgreSQL takes one) has no claims pool of its own', async () => {
  const pool = createPool({ ...db.config, max: 2 });
  try {
    assert.equal(claimPool(pool), pool);
    await warmClaimPool(pool);
    assert.equal(pool.totalCount, 0, 'nothing opened');
  } finally {
    await pool.end();
  }
});

test('a broken claim connection is reported on the pool (the store health listens there)', NEEDS_SERVER, async () => {
  const pool = createPool({ ...db.config, max: 3 });
  const seen: Error[] = [];
  pool.on('error', (err) => void seen.push(err));
  try {
    const claims = claimPool(pool);
    const { rows } = await claims.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    // the claim connection is idle in the claims pool now; the server ends it
    await db.pool.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
    // the break is reported on the pool, and the next claim gets a working connection (the broken one was discarded)
    await waitFor(() => seen.length > 0, 'the claim connection\'s error on the pool');
    const r = await claims.query<{ one: number }>('SELECT 1 AS one');
    assert.equal(r.rows[0]?.one, 1);
    assert.ok(seen.length > 0);
  } finally {
    await pool.end();
  }
});

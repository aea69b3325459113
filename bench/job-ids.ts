/**
 * Job ids on a grown jobs table: what an acceptance's insert costs PostgreSQL once the table holds many jobs (the
 * gateway keeps every job; an operator's table grows by each message sent), with the ids the gateway makes
 * (src/ids.ts newJobId: the clock's milliseconds first, then random) against the fully random ids it made
 * before. The table is filled with BENCH_JOBS old jobs of random ids (what a deployment already holds), then
 * the gateway's own insert statement (src/queue/sql/insertJobs.ts, the rows as JSON, as a group commit of 16
 * sends them) writes batches of new jobs, each form in turn, each round right after a CHECKPOINT: the WAL a
 * job wrote (PostgreSQL writes a page's full image the first time a checkpoint interval changes it, so an
 * insert on a random page of a large index costs a page image where one at its right end shares a page that
 * is already dirty) and the time of a statement (its transaction's commit included).
 * Then what a start reads of that instance's queue (src/queue/sql/loadStarts.ts; its outcome totals are kept by a
 * trigger since sql/0018_outcome_totals.sql, where a start counted every job ever sent before), against an
 * instance without history in the same database.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/job-ids.ts
 *   BENCH_JOBS=1000000 BENCH_ROUNDS=4 BENCH_BATCHES=150
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createTestDb, fixtureQuery } from '../test/helpers/db.js';
import { JSON_ROWS } from '../src/queue/sql/job-rows.js';
import { insertUnkeyed } from '../src/queue/sql/insertJobs.js';
import { newJobId } from '../src/ids.js';
import { loadStarts } from '../src/queue/sql/loadStarts.js';
import type { NewJob } from '../src/queue/job.js';
import { fmt } from './lib/load.js';
import { median } from './lib/queue-fixture.js';

if (!process.env.TEST_DATABASE_URL) {
  console.error('bench/job-ids.ts needs TEST_DATABASE_URL (a PostgreSQL server whose user may CHECKPOINT)');
  process.exit(2);
}
const JOBS = Number(process.env.BENCH_JOBS ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 150);
const BATCH = 16;

/** the ids before `timeOrderedPart` (src/ids.ts): twelve random bytes */
const randomJobId = () => `wq_${randomBytes(12).toString('hex')}`;

const db = await createTestDb('bench_job_ids');
const instanceId = randomUUID();
await db.pool.query("INSERT INTO instances (id, name, driver) VALUES ($1, 'ids', 'sandbox')", [instanceId]);
const client = await db.pool.connect();
try {
  // the fixture (a million rows, its VACUUM) and the CHECKPOINT before each round may run past the store's
  // deadlines on a slow hour (4 s on the server, 5 s in the client): they stopped the benchmark on AG and AH, and
  // run as the tests' fixtures do (fixtureQuery)
  const f0 = performance.now();
  // the jobs already there: sent ones over the past year, with the random ids every deployment made until now
  for (let done = 0; done < JOBS; done += 100_000) {
    await fixtureQuery(
      db.pool,
      `INSERT INTO jobs (id, instance_id, state, kind, origin_route, phone, payload, payload_hash, priority, queued_at, dispatched_at, terminal_at, expires_at, delivery_confidence)
       SELECT 'wq_' || substr(md5(random()::text || g::text), 1, 24), $1, 'sent', 'text', '/api/v2/send-message', '4915112345678',
              '{"body":"an old one","chatId":"4915112345678@c.us"}', '', 5, t, t, t, t + interval '1 day', 'assumed'
         FROM generate_series(1, $2::int) AS g, LATERAL (SELECT now() - (g % 365) * interval '1 day' - interval '1 hour' AS t) AS at`,
      [instanceId, Math.min(100_000, JOBS - done)],
    );
  }
  // their outcome totals, as sql/0018_outcome_totals.sql filled them from the jobs a database held (the trigger
  // counts a job as its state changes; these were written sent)
  await client.query(`INSERT INTO job_outcome_totals (instance_id, state, n) SELECT $1, 'sent', $2::bigint`, [instanceId, JOBS]);
  await fixtureQuery(db.pool, 'VACUUM ANALYZE jobs');
  const { rows: [size] } = await client.query<{ pk: string }>("SELECT pg_size_pretty(pg_relation_size('jobs_pkey')) AS pk");
  console.log(`job ids: ${JOBS} jobs of random ids already in the table (filled in ${fmt((performance.now() - f0) / 1000, 1)} s; its primary key ${size?.pk}), then ${BATCHES} statements of ${BATCH} new jobs a round, ${ROUNDS} rounds of each form in turn, each right after a CHECKPOINT`);

  const now = Date.now();
  // the new jobs are another instance's: the start read below is of the history alone
  const writer = randomUUID();
  await client.query("INSERT INTO instances (id, name, driver) VALUES ($1, 'writer', 'sandbox')", [writer]);
  const jobs = (id: () => string): NewJob[] => Array.from({ length: BATCH }, (_, i) => ({
    id: id(), instanceId: writer, originRoute: '/api/v2/send-message', chatId: '4915112345678@c.us', phone: '4915112345678',
    payloadHash: null, idempotencyKey: null, priority: 5, notBefore: null, queuedAt: now, scheduledAt: now + i * 1_000,
    expiresAt: now + 86_400_000, previousJobId: null, callerBoot: null, kind: 'text', payload: { body: `hello ${i}`, chatId: '4915112345678@c.us' },
  }));
  const sql = insertUnkeyed(JSON_ROWS);
  /** One round of a form: WAL bytes per job and the median statement time (each its own transaction). */
  async function round(id: () => string): Promise<{ walPerJob: number; ms: number }> {
    await fixtureQuery(db.pool, 'CHECKPOINT');
    const { rows: [start] } = await client.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
    const times: number[] = [];
    for (let b = 0; b < BATCHES; b++) {
      const batch = jobs(id);
      const params = JSON_ROWS.values(batch, 0, batch.length);
      const t0 = performance.now();
      const r = await client.query(sql, params);
      times.push(performance.now() - t0);
      if (r.rowCount !== BATCH) throw new Error(`${BATCH} jobs, ${r.rowCount} inserted`);
    }
    const { rows: [wal] } = await client.query<{ bytes: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::text AS bytes', [start?.lsn]);
    return { walPerJob: Number(wal?.bytes) / (BATCHES * BATCH), ms: median(times) };
  }
  const random: { walPerJob: number; ms: number }[] = [];
  const ordered: { walPerJob: number; ms: number }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // alternate which goes first, so that neither always follows the other's writes
    if (r % 2 === 0) {
      random.push(await round(randomJobId));
      ordered.push(await round(newJobId));
    } else {
      ordered.push(await round(newJobId));
      random.push(await round(randomJobId));
    }
  }
  const wal = (xs: typeof random) => median(xs.map((x) => x.walPerJob));
  const ms = (xs: typeof random) => median(xs.map((x) => x.ms));
  console.log(`random ids (before):      WAL ${fmt(wal(random), 0)} bytes a job, a statement of ${BATCH} ${fmt(ms(random), 2)} ms (rounds: ${random.map((x) => fmt(x.walPerJob, 0)).join(', ')} bytes)`);
  console.log(`time-ordered ids (now):   WAL ${fmt(wal(ordered), 0)} bytes a job, a statement of ${BATCH} ${fmt(ms(ordered), 2)} ms (rounds: ${ordered.map((x) => fmt(x.walPerJob, 0)).join(', ')} bytes)`);
  console.log(`WAL a job, time-ordered / random:        ${fmt(wal(ordered) / wal(random), 2)}`);
  console.log(`statement time, time-ordered / random:   ${fmt(ms(ordered) / ms(random), 2)}`);
  // a start's read of one instance's queue: its outcome totals count all of its history
  const fresh = randomUUID();
  await client.query("INSERT INTO instances (id, name, driver) VALUES ($1, 'fresh', 'sandbox')", [fresh]);
  const startMs = async (id: string) => {
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await loadStarts(client, [id], Date.now(), 'bench');
      times.push(performance.now() - t0);
    }
    return median(times);
  };
  const grown = await startMs(instanceId);
  const empty = await startMs(fresh);
  console.log(`a start's read of the instance's queue:  ${fmt(grown, 1)} ms with ${JOBS} jobs of history, ${fmt(empty, 1)} ms without (median of 5)`);
} finally {
  client.release();
  await db.close();
}

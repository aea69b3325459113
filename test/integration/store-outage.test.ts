/**
 * PostgreSQL taken away under load (issue 13, findings 9–12): a TCP proxy between the gateway and the shared
 * server is cut while v1 and v2 sends are running and one v1 send is in flight, first refusing and resetting
 * connections, then as a partition (nothing passes, nothing closed). Throughout: the process stays up, the
 * queue turns `memory-degraded` promptly, v2 sends answer 503 QUEUE_STORE_UNAVAILABLE with data.queueMode, v1
 * keeps working (keys verified before the outage stay usable past their cache lifetime), the limits hold, and
 * after the restore the queue is back to `pg` with no accepted job lost and none left in `sending`. The same when
 * the server itself refuses every new session (FATAL, e.g. a database not accepting connections).
 *
 * The gateway's timers run on the simulated clock; the sockets and pg's own deadlines are real.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, waitFor, type ApiResponse, type TestGateway } from '../helpers/gateway.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import pg from 'pg';
import { COMMIT_UNKNOWN } from '../../src/http/errors.js';
import { readFile } from 'node:fs/promises';
import { journalFile, unwrittenSends } from '../../src/queue/degraded-journal.js';

const SKIP = !process.env.TEST_DATABASE_URL && 'needs a PostgreSQL server (TEST_DATABASE_URL) to put a proxy in front of';
const TO = '4915112345678';
const MAX_PER_HOUR = 6;

let t: TestGateway;
let proxy: TcpProxy;
const crashes: unknown[] = [];
const onCrash = (err: unknown) => void crashes.push(err);

before(async () => {
  if (SKIP) return;
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
  const target = new URL(process.env.TEST_DATABASE_URL ?? '');
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  t = await startTestGateway({ label: 'outage', simulated: true, viaPort: proxy.port });
});
after(async () => {
  if (SKIP) return;
  await proxy.restore().catch(() => undefined);
  await t.stop();
  await proxy.close();
  process.off('uncaughtException', onCrash);
  process.off('unhandledRejection', onCrash);
});

/** Run simulated time until the request has its answer (the v1 wait and the dispatch timers are on the clock). */
async function answered(p: Promise<ApiResponse>, what: string, stepMs = 250): Promise<ApiResponse> {
  let res: ApiResponse | null = null;
  void p.then((r) => (res = r));
  await t.advanceUntil(() => res, what, { stepMs, maxMs: 60_000 });
  return res as unknown as ApiResponse;
}

/** Wait in real time (pg's deadlines are real) for an answer, without moving the simulated clock. */
async function realAnswer(p: Promise<ApiResponse>, what: string): Promise<ApiResponse> {
  let res: ApiResponse | null = null;
  void p.then((r) => (res = r));
  return waitFor(() => res, what, 4_000);
}

const v1 = (key: string, message: string) => t.api(key, 'POST', '/api/send-message', { phone: TO, message });
const v2 = (key: string, message: string) => t.api(key, 'POST', '/api/v2/send-message', { phone: TO, message });
const degraded = () => t.gw.actors.degradedCount() > 0;

async function ledger(instanceId: string): Promise<{ body: string | null; timestamp: number }[]> {
  const r = await t.admin('GET', `/sandbox/v1/instances/${instanceId}/ledger`);
  return (r.body.data as { items: { body: string | null; timestamp: number }[] }).items;
}

/**
 * The answer of a v1 send whose store went away under it: what is true, never the 500 "internal error":
 * 200 sent, 503 nothing sent, or (limits active) 504 still queued, then it goes out after the restore.
 */
/**
 * A v1 send's answer is one of its truthful ones: 200 sent, 503 nothing sent, 504 queued (when limits hold it),
 * or, with `unknownAllowed`, 500 "may have been queued: do not resend": a store that stops answering while the
 * acceptance's one statement is on its way (src/queue/sql/insertJobsFenced.ts) hides whether it committed.
 */
function truthfulV1(r: ApiResponse, what: string, limitsActive: boolean, unknownAllowed = false): void {
  assert.notEqual(r.body.error, 'internal error', `${what}: ${r.text}`);
  const still = limitsActive && r.status === 504 && r.body.code === 'QUEUE_WAIT_TIMEOUT';
  const unknown = unknownAllowed && r.status === 500 && r.body.error === COMMIT_UNKNOWN;
  assert.ok(r.status === 200 || r.status === 503 || still || unknown, `${what}: 200 sent, 503 nothing sent${limitsActive ? ' or 504 queued' : ''}${unknownAllowed ? ' or 500 unknown' : ''}, got ${r.status} ${r.text}`);
  if (r.status === 503) assert.deepEqual(Object.keys(r.body), ['success', 'error'], `${what}: v1's frozen shape`);
}

/** After the restore: back to `pg`, every accepted job terminal, none in `sending`, each body at most once. */
async function recovered(instanceId: string, key: string, accepted: Map<string, string>): Promise<void> {
  await t.advanceUntil(() => !degraded(), 'back to pg', { stepMs: 500, maxMs: 30_000 });
  const q = await t.api(key, 'GET', '/api/v2/queue');
  assert.equal(q.status, 200, q.text);
  assert.equal((q.body.data as { mode: string }).mode, 'pg');
  // a partition longer than the lease leaves the instance without a valid lease until the next renewal round
  // (real time): until then a send is 502 INSTANCE_UNREACHABLE, nothing accepted, which a client may retry
  let back = await v2(key, `${instanceId}-after`);
  for (let i = 0; i < 100 && back.status === 502 && back.body.code === 'INSTANCE_UNREACHABLE'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    back = await v2(key, `${instanceId}-after`);
  }
  assert.equal(back.status, 202, back.text);
  accepted.set(String(back.body.data?.jobId), `${instanceId}-after`);
  await t.advanceUntil(
    async () => {
      const { rows } = await t.db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM jobs WHERE instance_id = $1 AND id = ANY($2) AND state IN ('sent', 'failed', 'unknown', 'expired', 'cancelled')`,
        [instanceId, [...accepted.keys()]],
      );
      return rows[0]?.n === accepted.size;
    },
    'every accepted job terminal',
    { stepMs: 60_000, maxMs: 3 * 3_600_000 },
  );
  const { rows } = await t.db.pool.query<{ id: string; state: string }>('SELECT id, state FROM jobs WHERE instance_id = $1', [instanceId]);
  assert.deepEqual(rows.filter((r) => r.state === 'sending'), [], 'no job left in sending');
  for (const id of accepted.keys()) assert.equal(rows.find((r) => r.id === id)?.state, 'sent', `accepted job ${id} (${accepted.get(id)}) was sent`);
  const bodies = (await ledger(instanceId)).map((e) => e.body);
  assert.equal(new Set(bodies).size, bodies.length, 'no body went out twice');
  for (const body of accepted.values()) assert.ok(bodies.includes(body), `${body} went out`);
}

test('connections refused and reset for 30 s under v1 + v2 load', { skip: SKIP }, async () => {
  const limited = { minDelayMs: 1000, maxDelayMs: 1000, quietHours: null, maxPerHour: MAX_PER_HOUR, maxPer24h: null };
  const { instance, apiKey } = await t.createInstance('refused', { settings: limited });
  // a valid key this process has never verified: during the outage it cannot be
  const unseen = await t.createInstance('unseen', { link: false });
  const accepted = new Map<string, string>();

  for (const m of ['r-v2-1', 'r-v2-2']) {
    const r = await v2(apiKey, m);
    assert.equal(r.status, 202, r.text);
    accepted.set(String(r.body.data?.jobId), m);
  }
  assert.equal((await answered(v1(apiKey, 'r-v1-0'), 'v1 before the cut')).status, 200);
  await t.advanceUntil(async () => (await ledger(instance.id)).length === 3, 'three sent before the cut', { stepMs: 500 });
  // load at the cut: two v2 jobs waiting for their slots and a v1 send waiting for its outcome
  for (const m of ['r-v2-3', 'r-v2-4']) {
    const r = await v2(apiKey, m);
    assert.equal(r.status, 202, r.text);
    accepted.set(String(r.body.data?.jobId), m);
  }
  const inFlight = v1(apiKey, 'r-v1-inflight');
  await waitFor(async () => (await t.db.pool.query("SELECT 1 FROM jobs WHERE payload::text LIKE '%r-v1-inflight%'")).rowCount, 'the in-flight v1 job accepted');

  const cutAt = t.clock.now();
  await proxy.cut('refuse');
  const refused = await v2(apiKey, 'r-v2-refused');
  assert.equal(refused.status, 503, refused.text);
  assert.equal(refused.body.code, 'QUEUE_STORE_UNAVAILABLE');
  await t.advanceUntil(degraded, 'memory-degraded', { stepMs: 100, maxMs: 1_000 });
  assert.ok(t.clock.now() - cutAt <= 1_000, `memory-degraded ${t.clock.now() - cutAt} ms after the cut`);

  const first = await answered(inFlight, 'the in-flight v1 send');
  truthfulV1(first, 'the v1 send in flight at the cut', true);
  // 504: still queued, goes out at its slot after the restore (it must not be lost)
  if (first.status === 504) accepted.set(String(first.body.data?.jobId), 'r-v1-inflight');
  const inFlightSent = first.status !== 503;

  const v2During = await v2(apiKey, 'r-v2-during');
  assert.equal(v2During.status, 503, v2During.text);
  assert.equal(v2During.body.code, 'QUEUE_STORE_UNAVAILABLE');
  assert.equal(v2During.body.data?.queueMode, 'memory-degraded');
  const unknownV2 = await v2(unseen.apiKey, 'never');
  assert.equal(unknownV2.status, 503, `an unverifiable key is not a 401: ${unknownV2.text}`);
  assert.equal(unknownV2.body.code, 'QUEUE_STORE_UNAVAILABLE');
  const unknownV1 = await v1(unseen.apiKey, 'never');
  assert.equal(unknownV1.status, 503, unknownV1.text);
  assert.deepEqual(Object.keys(unknownV1.body), ['success', 'error'], 'v1 shape');

  // v1 through the outage, past the key cache's lifetime, until the hourly limit refuses
  const v1Answers: number[] = [];
  for (let i = 0; t.clock.now() - cutAt < 30_000; i++) {
    const r = await answered(v1(apiKey, `r-v1-during-${i}`), `v1 send ${i} during the outage`);
    assert.ok(r.status === 200 || (r.status === 500 && /send limits/.test(r.body.error ?? '')), `v1 during the outage: ${r.status} ${r.text}`);
    v1Answers.push(r.status);
    await t.advance(2_000, 500);
  }
  assert.ok(t.clock.now() - cutAt >= 30_000);
  assert.ok(v1Answers.includes(200), 'v1 works in memory-degraded');
  assert.ok(v1Answers.includes(500), `the hourly limit held from memory: ${v1Answers.join(' ')}`);
  assert.equal(degraded(), true);
  // the sends made outside the store are on disk too, so that a killed process would not forget them
  const journal = journalFile(t.dataDir);
  const kept = unwrittenSends(await readFile(journal, 'utf8')).get(instance.id) ?? [];
  assert.equal(kept.length, v1Answers.filter((s) => s === 200).length, 'every v1 send made while degraded is in the journal');

  await proxy.restore();
  await recovered(instance.id, apiKey, accepted);
  await assert.rejects(readFile(journal, 'utf8'), { code: 'ENOENT' }, 'written back: the journal is gone');
  const sent = await ledger(instance.id);
  const bodies = sent.map((e) => e.body);
  assert.equal(bodies.includes('r-v1-inflight'), inFlightSent, 'the in-flight v1 send went out exactly when it was not answered 503');
  // the limit is kept on dispatch instants (the ledger's own timestamps lag by however far the simulated
  // clock moved while a send was on its way); every send on the network is in that history
  const { rows } = await t.db.pool.query<{ at: Date }>('SELECT dispatched_at AS at FROM dispatches WHERE instance_id = $1 ORDER BY dispatched_at', [instance.id]);
  assert.equal(rows.length, sent.length, 'every send on the network is in the dispatch history (the degraded ones written back)');
  const instants = rows.map((r) => r.at.getTime());
  for (const at of instants) {
    const inHour = instants.filter((o) => o <= at && o > at - 3_600_000).length;
    assert.ok(inHour <= MAX_PER_HOUR, `${inHour} sends in the hour ending ${new Date(at).toISOString()}`);
  }
  assert.deepEqual(crashes, [], 'no unhandled error');
});

test('a partition: nothing passes, nothing closed', { skip: SKIP }, async () => {
  await proxy.restore();
  await t.advanceUntil(() => !degraded(), 'the store back after the first test', { stepMs: 500, maxMs: 30_000 });
  const free = { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null };
  const { instance, apiKey } = await t.createInstance('partitioned', { settings: free });
  const accepted = new Map<string, string>();
  assert.equal((await answered(v1(apiKey, 'p-v1-0'), 'v1 before the partition')).status, 200);
  const r = await v2(apiKey, 'p-v2-1');
  assert.equal(r.status, 202, r.text);
  accepted.set(String(r.body.data?.jobId), 'p-v2-1');
  await t.advanceUntil(async () => (await ledger(instance.id)).some((e) => e.body === 'p-v2-1'), 'p-v2-1 sent');

  const cutAt = t.clock.now();
  await proxy.cut('blackhole');
  // in flight at the cut: its store calls get no answer; pg's own deadlines (real time) end them
  const inFlight = v1(apiKey, 'p-v1-inflight');
  // the next probe (on the gateway's clock, at most 5 s after the last one ended) gets no answer. The last one
  // may end in the first step (its answer read just after the cut), hence 5.5 s. Its deadline, like pg's, is real
  // time, and so is the next one's if an answer came while it waited (found in CI: 5 s did not always hold)
  await t.advance(5_500, 500);
  await waitFor(degraded, 'memory-degraded in a partition: an unanswered probe is a failed one', 2_000);
  assert.ok(t.clock.now() - cutAt <= 5_500);
  const first = await realAnswer(inFlight, 'the in-flight v1 answer (bounded by the store deadlines)');
  truthfulV1(first, 'the v1 send in flight at the partition', false, true);

  const v2During = await v2(apiKey, 'p-v2-during');
  assert.equal(v2During.status, 503, v2During.text);
  assert.equal(v2During.body.data?.queueMode, 'memory-degraded');
  // past the key cache's lifetime: the key verified before the partition still works
  await t.advance(31_000, 1_000);
  const during = await realAnswer(v1(apiKey, 'p-v1-during'), 'v1 during the partition');
  assert.equal(during.status, 200, during.text);

  await proxy.restore();
  await recovered(instance.id, apiKey, accepted);
  const bodies = (await ledger(instance.id)).map((e) => e.body);
  // 200: it went out; 503: it did not; 500 (unknown): either, at most once (recovered() checks every body)
  if (first.status !== 500) assert.equal(bodies.includes('p-v1-inflight'), first.status === 200, 'the in-flight v1 send went out exactly when it was answered 200');
  assert.deepEqual(crashes, [], 'no unhandled error');
});

test('a database that refuses every new session (FATAL 55000, not a socket error): degraded, never 500; v1 past the key cache', { skip: SKIP }, async () => {
  // found from the outside: ALTER DATABASE … ALLOW_CONNECTIONS false answered every key-authenticated route 500
  // INTERNAL_ERROR once the key cache's 30 s were over (the server's FATAL was not taken for an outage)
  await proxy.restore();
  await t.advanceUntil(() => !degraded(), 'the store back after the tests before', { stepMs: 500, maxMs: 30_000 });
  const free = { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null };
  const { instance, apiKey } = await t.createInstance('refusing', { settings: free });
  const accepted = new Map<string, string>();
  assert.equal((await answered(v1(apiKey, 'f-v1-before'), 'v1 before')).status, 200);
  const name = new URL(t.db.url ?? '').pathname.slice(1);
  const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
    await t.advanceUntil(degraded, 'memory-degraded', { stepMs: 100, maxMs: 5_000 });
    await t.advance(31_000, 1_000); // past the key cache's lifetime: the key can be looked up no more
    const v1During = await answered(v1(apiKey, 'f-v1-during'), 'v1 during');
    assert.equal(v1During.status, 200, `v1 sends from memory: ${v1During.text}`);
    const v2During = await realAnswer(v2(apiKey, 'f-v2-during'), 'v2 during');
    assert.equal(v2During.status, 503, v2During.text);
    assert.equal(v2During.body.code, 'QUEUE_STORE_UNAVAILABLE');
    for (const route of ['/api/status', '/api/v2/queue', '/api/v2/chats']) {
      const r = await realAnswer(t.api(apiKey, 'GET', route), route);
      assert.notEqual(r.status, 500, `${route}: ${r.text}`);
    }
  } finally {
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
    await admin.end();
  }
  await recovered(instance.id, apiKey, accepted);
  const bodies = (await ledger(instance.id)).map((e) => e.body);
  assert.ok(bodies.includes('f-v1-during'));
  assert.deepEqual(crashes, [], 'no unhandled error');
});

/**
 * The operator's queue routes of an instance (`/admin/v1/instances/:id/queue`, `/queue/items`,
 * `DELETE /messages/:jobId`, `POST /messages/:jobId/requeue`) against a real gateway: the same answers as the
 * v2 routes with the instance's key, jobs scoped to the instance in the path (another instance's job is 404),
 * the cursor, cancel and requeue with their refusals.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const RECIPIENT = '4915112340077';
let t: TestGateway;
let A: { id: string; key: string };
let B: { id: string; key: string };

before(async () => {
  t = await startTestGateway({ label: 'admin_queue' });
  const fast = { quietHours: null, minDelayMs: 0, maxDelayMs: 0, maxPerHour: null, maxPer24h: null };
  const a = await t.createInstance('queuea', { settings: fast });
  const b = await t.createInstance('queueb', { settings: fast });
  A = { id: a.instance.id, key: a.apiKey };
  B = { id: b.instance.id, key: b.apiKey };
});
after(async () => {
  await t?.stop();
});

const later = () => new Date(t.clock.now() + 6 * 3_600_000).toISOString();
async function schedule(message: string): Promise<string> {
  const r = await t.api(A.key, 'POST', '/api/v2/send-message', { phone: RECIPIENT, message, notBefore: later() });
  assert.equal(r.status, 202, r.text);
  return String(r.body.data?.jobId);
}
const ids = (data: Record<string, unknown> | undefined) => (data?.items as { jobId: string }[]).map((j) => j.jobId);

test('summary and items: the v2 answers, for the instance in the path; the cursor pages', async () => {
  const first = await schedule('one');
  const second = await schedule('two');

  const admin = await t.admin('GET', `/admin/v1/instances/${A.id}/queue`);
  const v2 = await t.api(A.key, 'GET', '/api/v2/queue');
  assert.equal(admin.status, 200, admin.text);
  assert.deepEqual(admin.body.data, v2.body.data, 'the same summary as GET /api/v2/queue');
  assert.equal((admin.body.data?.counts as { scheduled: number }).scheduled, 2);
  const other = await t.admin('GET', `/admin/v1/instances/${B.id}/queue`);
  assert.equal((other.body.data?.counts as { scheduled: number }).scheduled, 0, "B's summary is B's");

  const items = await t.admin('GET', `/admin/v1/instances/${A.id}/queue/items?state=scheduled`);
  const v2Items = await t.api(A.key, 'GET', '/api/v2/queue/items?state=scheduled');
  assert.equal(items.status, 200, items.text);
  assert.deepEqual(ids(items.body.data), [first, second]);
  assert.deepEqual(ids(items.body.data), ids(v2Items.body.data));
  const strip = (d: Record<string, unknown> | undefined) => (d?.items as Record<string, unknown>[]).map(({ etaSeconds: _e, ...rest }) => rest);
  assert.deepEqual(strip(items.body.data), strip(v2Items.body.data), 'the same job views (etaSeconds moves with the clock)');
  assert.deepEqual(ids((await t.admin('GET', `/admin/v1/instances/${B.id}/queue/items`)).body.data), []);

  const page1 = await t.admin('GET', `/admin/v1/instances/${A.id}/queue/items?limit=1`);
  assert.deepEqual(ids(page1.body.data), [first]);
  const cursor = String(page1.body.data?.nextCursor);
  const page2 = await t.admin('GET', `/admin/v1/instances/${A.id}/queue/items?limit=1&cursor=${cursor}`);
  assert.deepEqual(ids(page2.body.data), [second]);

  const bad = await t.admin('GET', `/admin/v1/instances/${A.id}/queue/items?state=bogus`);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.code, 'VALIDATION_FAILED');
  // an upper-case spelling of the id is the same instance (it was a false 502 "being handed over")
  const upper = await t.admin('GET', `/admin/v1/instances/${A.id.toUpperCase()}/queue`);
  assert.equal(upper.status, 200, upper.text);
  assert.deepEqual(upper.body.data, admin.body.data);
  const upperReplan = await t.admin('POST', `/admin/v1/instances/${A.id.toUpperCase()}/queue/replan`);
  assert.equal(upperReplan.status, 200, upperReplan.text);
  const unknown = await t.admin('GET', '/admin/v1/instances/00000000-0000-4000-8000-000000000000/queue');
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.code, 'INSTANCE_NOT_FOUND');
});

test('cancel and requeue: scoped to the instance, with the v2 refusals', async () => {
  const job = await schedule('cancel me');
  const waiting = await schedule('still waiting');

  // another instance's path: 404, and nothing changes
  for (const [method, path] of [['DELETE', `/admin/v1/instances/${B.id}/messages/${job}`], ['POST', `/admin/v1/instances/${B.id}/messages/${job}/requeue`]] as const) {
    const r = await t.admin(method, path);
    assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
    assert.equal(r.body.code, 'JOB_NOT_FOUND');
  }
  assert.equal((await t.api(A.key, 'GET', `/api/v2/messages/${job}`)).body.data?.state, 'scheduled');
  assert.equal((await t.admin('DELETE', `/admin/v1/instances/${A.id}/messages/not-a-job`)).body.code, 'JOB_NOT_FOUND');

  const cancelled = await t.admin('DELETE', `/admin/v1/instances/${A.id}/messages/${job}`);
  assert.equal(cancelled.status, 200, cancelled.text);
  assert.equal(cancelled.body.data?.state, 'cancelled');
  assert.equal(cancelled.body.data?.jobId, job);
  const again = await t.admin('DELETE', `/admin/v1/instances/${A.id}/messages/${job}`);
  assert.equal(again.status, 409);
  assert.equal(again.body.code, 'JOB_NOT_CANCELLABLE');

  const notYet = await t.admin('POST', `/admin/v1/instances/${A.id}/messages/${waiting}/requeue`);
  assert.equal(notYet.status, 409);
  assert.equal(notYet.body.code, 'JOB_NOT_REQUEUEABLE');
  assert.match(String(notYet.body.error), /state scheduled cannot be requeued/);

  const requeued = await t.admin('POST', `/admin/v1/instances/${A.id}/messages/${job}/requeue`);
  assert.equal(requeued.status, 202, requeued.text);
  assert.equal(requeued.body.data?.previousJobId, job);
  const newJob = String(requeued.body.data?.jobId);
  assert.notEqual(newJob, job);
  const replay = await t.admin('POST', `/admin/v1/instances/${A.id}/messages/${job}/requeue`);
  assert.equal(replay.status, 200, 'a second requeue of the same job is a replay');
  assert.equal(replay.body.data?.jobId, newJob);
  // the new job is A's, and it is sent (requeue drops notBefore)
  const seen = await t.api(A.key, 'GET', `/api/v2/messages/${newJob}`);
  assert.equal(seen.status, 200);
  assert.equal(seen.body.data?.originRoute, '/admin/v1/instances/:id/messages/:jobId/requeue');
  assert.equal(seen.body.data?.previousJobId, job);
});

/**
 * An instance with a fixed pause whose webhook wants `queue.replanned` (at an address nobody answers: the outbox
 * keeps what was written, which `replannedEvents` reads).
 */
async function replanWatched(name: string, pauseMs: number): Promise<{ id: string; apiKey: string }> {
  const { instance, apiKey } = await t.createInstance(name, {
    settings: { quietHours: null, maxPerHour: null, maxPer24h: null, minDelayMs: pauseMs, maxDelayMs: pauseMs },
  });
  const hook = await t.admin('PUT', `/admin/v1/instances/${instance.id}/webhook`, { url: 'http://127.0.0.1:9/hook', secret: 'a-webhook-secret-0123456789', allowPrivate: true, events: ['queue.replanned'] });
  assert.ok(hook.status < 300, hook.text);
  return { id: instance.id, apiKey };
}

/** The data of the instance's `queue.replanned` events, oldest first, as the outbox holds them. */
async function replannedEvents(id: string): Promise<{ affected: number; reason: string }[]> {
  const { rows } = await t.gw.pool.query<{ body: string }>(`SELECT body FROM outbox WHERE instance_id = $1 AND event = 'queue.replanned' ORDER BY id`, [id]);
  return rows.map((row) => (JSON.parse(row.body) as { data: { affected: number; reason: string } }).data);
}

test('re-plan: the operator moves the waiting jobs forward after a cancel, as the key would (event reason operator)', async () => {
  const { id, apiKey } = await replanWatched('queuereplan', 10_000);
  // all four after the same notBefore, so that none is sent while the test runs (real time here)
  const notBefore = later();
  const jobs: string[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: RECIPIENT, message: `r${i}`, notBefore });
    assert.equal(r.status, 202, r.text);
    jobs.push(String(r.body.data?.jobId));
  }
  const slotOf = async (j: string) => Date.parse(String((await t.api(apiKey, 'GET', `/api/v2/messages/${j}`)).body.data?.scheduledAt));
  const before = await slotOf(jobs[3] as string);
  // a cancel in the middle frees 10 s, less than the planner waits for before it re-plans by itself
  assert.equal((await t.admin('DELETE', `/admin/v1/instances/${id}/messages/${jobs[1]}`)).status, 200);
  assert.equal(await slotOf(jobs[3] as string), before, 'the later jobs keep their slots until a re-plan');

  const r = await t.admin('POST', `/admin/v1/instances/${id}/queue/replan`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data?.replanned, true);
  assert.equal(r.body.data?.affected, 2, `the two jobs after the cancelled one moved: ${r.text}`);
  assert.equal(typeof r.body.data?.epoch, 'number');
  assert.equal(await slotOf(jobs[3] as string), before - 10_000, 'moved forward by the freed pause');
  assert.equal(await slotOf(jobs[2] as string), Date.parse(notBefore) + 10_000, 'into the cancelled one\'s slot');
  const deliveries = await t.admin('GET', `/admin/v1/instances/${id}/webhook/deliveries?limit=200`);
  assert.equal((deliveries.body.data?.items as { event: string }[]).filter((d) => d.event === 'queue.replanned').length, 1, deliveries.text);
  const events = await replannedEvents(id);
  assert.equal(events[0]?.reason, 'operator', JSON.stringify(events));
  assert.equal(events[0]?.affected, r.body.data?.affected);

  // the instance in the path decides: another's path re-plans that one; an unknown one is 404; a key is 403
  const other = await t.admin('POST', `/admin/v1/instances/${B.id}/queue/replan`);
  assert.equal(other.status, 200, other.text);
  assert.equal(await slotOf(jobs[3] as string), before - 10_000);
  const unknown = await t.admin('POST', '/admin/v1/instances/00000000-0000-4000-8000-000000000000/queue/replan');
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.code, 'INSTANCE_NOT_FOUND');
  const withKey = await t.api(apiKey, 'POST', `/admin/v1/instances/${id}/queue/replan`);
  assert.equal(withKey.status, 403, withKey.text);
  for (const j of jobs) await t.api(apiKey, 'DELETE', `/api/v2/messages/${j}`);
});

test('queue.replanned counts the jobs whose slot changed: none for a limit that moves nothing, all when every slot is lost', async () => {
  // found from the outside: `affected` counted the jobs holding a slot after the re-plan, so 3 when nothing
  // moved and 0 when all three lost their slots
  const { id, apiKey } = await replanWatched('replancount', 300_000);
  const jobs: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: RECIPIENT, message: `c${i}`, notBefore: later() });
    assert.equal(r.status, 202, r.text);
    jobs.push(String(r.body.data?.jobId));
  }
  assert.equal((await t.admin('PATCH', `/admin/v1/instances/${id}`, { settings: { maxPer24h: 499 } })).status, 200);
  assert.deepEqual((await replannedEvents(id)).map((e) => e.affected), [0], 'a ceiling that holds every slot moves none');
  assert.equal((await t.admin('PATCH', `/admin/v1/instances/${id}`, { settings: { maxPerHour: 0 } })).status, 200);
  assert.deepEqual((await replannedEvents(id)).map((e) => [e.affected, e.reason]), [[0, 'limits_changed'], [3, 'limits_changed']], 'every job lost its slot');
  for (const j of jobs) {
    const s = await t.api(apiKey, 'GET', `/api/v2/messages/${j}`);
    assert.deepEqual([s.body.data?.state, s.body.data?.scheduledAt], ['queued', null], s.text);
  }
  for (const j of jobs) await t.api(apiKey, 'DELETE', `/api/v2/messages/${j}`);
});

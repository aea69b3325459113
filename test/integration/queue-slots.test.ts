/**
 * Slots of waiting jobs are written only where they changed, and a cancel or a re-plan never waits behind a
 * long acceptance (issue 18). Real PostgreSQL; rows written are counted by their row versions (xmin).
 *
 * The queue: quiet hours around the simulated now, 60 s pauses, no ceilings, so that a plain chain of jobs
 * starts at the end of the quiet window and three reminders sit at their notBefore, far behind it.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, settle, waitFor, type TestGateway } from '../helpers/gateway.js';
import { stalledAcceptance } from '../helpers/stalled-acceptance.js';
import { NEEDS_SERVER } from '../helpers/db.js';

let t: TestGateway;
let instanceId = '';
let apiKey = '';
const HOUR = 3_600_000;
const chain: string[] = [];
const reminders: string[] = [];

const versions = async () => {
  const { rows } = await t.db.pool.query<{ id: string; v: string; at: Date | null; state: string }>(
    'SELECT id, xmin::text AS v, scheduled_at AS at, state FROM jobs WHERE instance_id = $1', [instanceId]);
  return new Map(rows.map((r) => [r.id, { v: r.v, at: r.at?.getTime() ?? null, state: r.state }]));
};
type Versions = Awaited<ReturnType<typeof versions>>;
const written = (a: Versions, b: Versions) => [...a.keys()].filter((id) => b.has(id) && b.get(id)?.v !== a.get(id)?.v).sort();
const moved = (a: Versions, b: Versions) => [...a.keys()].filter((id) => b.has(id) && b.get(id)?.at !== a.get(id)?.at).sort();
const send = (body: Record<string, unknown>) => t.accept(apiKey, { phone: '4915112345678', ...body });

before(async () => {
  t = await startTestGateway({ label: 'queue_slots', simulated: true });
  const c = await t.createInstance('slots', {
    settings: { minDelayMs: 60_000, maxDelayMs: 60_000, maxPerHour: null, maxPer24h: null, quietHours: { start: '09:00', end: '12:00', tz: 'UTC' }, defaultTtlSeconds: 2_592_000 },
  });
  instanceId = c.instance.id;
  apiKey = c.apiKey;
  for (let i = 0; i < 5; i++) chain.push(await send({ message: `chain ${i}` }));
  const now = t.clock.now();
  for (let i = 0; i < 3; i++) reminders.push(await send({ message: `reminder ${i}`, notBefore: new Date(now + (8 + i) * HOUR).toISOString() }));
});
after(async () => {
  await t?.stop();
});

test('a re-plan of an unchanged queue writes no row', async () => {
  const before = await versions();
  const r = await t.api(apiKey, 'POST', '/api/v2/queue/replan');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data?.affected, 0, 'no job got another slot');
  assert.deepEqual(written(before, await versions()), []);
});

test('a priority jump moves the chain: exactly its rows are written, after the acceptance, and read back moved', async () => {
  const before = await versions();
  const urgent = await send({ message: 'urgent', priority: 9 });
  // the chain moves one pause later each; the reminders keep their notBefore slots
  const after = await waitFor(async () => {
    const v = await versions();
    return written(before, v).length >= chain.length ? v : null;
  }, 'the moved slots written');
  assert.deepEqual(written(before, after), [...chain].sort());
  assert.deepEqual(moved(before, after), [...chain].sort());
  for (const id of chain) assert.equal(after.get(id)?.at, (before.get(id)?.at ?? 0) + 60_000, id);
  const first = await t.api(apiKey, 'GET', `/api/v2/messages/${urgent}`);
  assert.equal(Date.parse(String(first.body.data?.scheduledAt)), before.get(chain[0] as string)?.at);
  const q = await t.api(apiKey, 'GET', `/api/v2/messages/${chain[0]}`);
  assert.equal(Date.parse(String(q.body.data?.scheduledAt)), (before.get(chain[0] as string)?.at ?? 0) + 60_000);
});

test('a limit change re-plans and writes only the rows whose slot changed', async () => {
  const before = await versions();
  const patch = await t.admin('PATCH', `/admin/v1/instances/${instanceId}`, { settings: { minDelayMs: 30_000, maxDelayMs: 30_000 } });
  assert.equal(patch.status, 200, patch.text);
  const after = await versions();
  const changed = moved(before, after);
  assert.deepEqual(changed, [...chain].sort(), 'the chain moves closer; the urgent job and the reminders stay');
  assert.deepEqual(written(before, after), changed);
});

test('a cancel answers while an acceptance is stuck in its commit; re-plans asked meanwhile are one, after it', NEEDS_SERVER, async () => {
  // an acceptance with a key stops at its key lookup while another session holds the key table
  const stuck = await stalledAcceptance(t, apiKey, 'stuck-acceptance-1');
  try {
    const port = t.gw.actors.port(instanceId);
    assert.ok(port);
    const replans = [1, 2, 3].map(() => port.ask({ type: 'queue.replan', reason: 'api' }, 10_000));
    await settle();

    const cancel = await t.api(apiKey, 'DELETE', `/api/v2/messages/${chain[2]}`);
    assert.equal(cancel.status, 200, cancel.text);
    assert.equal(cancel.body.data?.state, 'cancelled');
    const { rows } = await t.db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [chain[2]]);
    assert.equal(rows[0]?.state, 'cancelled');

    await stuck.release();
    const accepted = await stuck.answer;
    assert.equal(accepted.status, 202, accepted.text);
    const epochs = new Set((await Promise.all(replans)).map((r) => r.epoch));
    assert.equal(epochs.size, 1, 'the three re-plans asked while one was waiting are that one');
    const summary = await t.api(apiKey, 'GET', '/api/v2/queue');
    const counts = summary.body.data?.counts as { queued: number; scheduled: number };
    assert.equal(counts.queued + counts.scheduled, chain.length + reminders.length + 2 - 1, 'the cancelled job left the plan');
  } finally {
    await stuck.release();
  }
});

test('a send-bulk is one acceptance batch: one transaction for every entry, in order', async () => {
  const stats = t.gw.groupCommitStats();
  const messages = Array.from({ length: 300 }, (_, i) => ({ phone: `49160${String(i).padStart(7, '0')}`, message: `bulk ${i}` }));
  const r = await t.api(apiKey, 'POST', '/api/send-bulk', { messages });
  assert.equal(r.status, 200, r.text);
  const entries = (r.body.data?.messages ?? []) as { status: string; jobId: string }[];
  assert.equal(entries.filter((e) => e.status === 'queued').length, 300);
  const after = t.gw.groupCommitStats();
  assert.equal(after.groups - stats.groups, 1, 'one transaction');
  assert.equal(after.units - stats.units, 1, 'one batch');
  const { rows } = await t.db.pool.query<{ id: string }>("SELECT id FROM jobs WHERE instance_id = $1 AND origin_route = '/api/send-bulk' ORDER BY seq", [instanceId]);
  assert.deepEqual(rows.map((x) => x.id), entries.map((e) => e.jobId));
});

/**
 * The node-wide group commit (src/queue/group-commit.ts) through a real gateway: sends to many instances at
 * once are committed in fewer transactions than there are instance batches; every accepted job is in
 * PostgreSQL with its idempotency key and its `message.queued` event, each instance's events in its own order;
 * a replay of a key answers the same job, in the same group as new sends of other instances.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

let t: TestGateway;
const SLOW = { minDelayMs: 60_000, maxDelayMs: 60_000, quietHours: null, maxPerHour: null, maxPer24h: null };
const N = 12;
const PER = 5;
const insts: { id: string; key: string }[] = [];

before(async () => {
  t = await startTestGateway({ label: 'group_commit' });
  for (let i = 0; i < N; i++) {
    const c = await t.createInstance(`group${i}`, { settings: SLOW });
    insts.push({ id: c.instance.id, key: c.apiKey });
    const hook = await t.api(t.adminToken, 'PUT', `/admin/v1/instances/${c.instance.id}/webhook`, {
      url: 'http://127.0.0.1:9/hook', secret: 'group-commit-secret-0123456789', events: ['message.queued'], allowPrivate: true,
    });
    assert.equal(hook.status, 200, hook.text);
  }
});
after(async () => {
  await t?.stop();
});

test('sends to many instances at once: fewer transactions than batches, every job, key and event written in order', async () => {
  const before = t.gw.groupCommitStats();
  const sends = insts.flatMap((inst, i) =>
    Array.from({ length: PER }, (_, k) => t.api(inst.key, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: `g${i}-${k}`, idempotencyKey: `group-key-${i}-${k}` })),
  );
  const answers = await Promise.all(sends);
  for (const a of answers) assert.equal(a.status, 202, a.text);
  const after = t.gw.groupCommitStats();
  const groups = after.groups - before.groups;
  const units = after.units - before.units;
  assert.ok(units >= N, `${units} instance batches`);
  assert.ok(groups < units, `${groups} transactions for ${units} instance batches`);
  // each snapshot is its own: the requests counted by their group's time add up to the requests run between two
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  assert.equal(sum(after.rowsByMs) - sum(before.rowsByMs), after.rows - before.rows);
  assert.ok(after.rows - before.rows >= N * PER, `${after.rows - before.rows} requests`);

  for (const [i, inst] of insts.entries()) {
    const { rows: jobs } = await t.db.pool.query<{ id: string; key: string }>(
      'SELECT j.id, k.key FROM jobs j JOIN idempotency_keys k ON k.job_id = j.id WHERE j.instance_id = $1 ORDER BY j.seq',
      [inst.id],
    );
    assert.equal(jobs.length, PER, `instance ${i}: every job with its key`);
    const { rows: events } = await t.db.pool.query<{ body: string }>("SELECT body FROM outbox WHERE instance_id = $1 AND event = 'message.queued' ORDER BY id", [inst.id]);
    assert.deepEqual(
      events.map((e) => (JSON.parse(e.body) as { data: { jobId: string } }).data.jobId),
      jobs.map((j) => j.id),
      `instance ${i}: one message.queued per job, in the jobs' order`,
    );
  }

  // replays of every key, together with new sends: the same jobs again, the new ones accepted
  const replays = await Promise.all(insts.map((inst, i) => t.api(inst.key, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: `g${i}-0`, idempotencyKey: `group-key-${i}-0` })));
  const fresh = await Promise.all(insts.map((inst, i) => t.api(inst.key, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: `n${i}` })));
  for (const [i, r] of replays.entries()) {
    assert.equal(r.status, 200, r.text);
    const first = answers[i * PER];
    assert.equal(r.body.data?.jobId, first?.body.data?.jobId, 'a replay answers the job its key names');
  }
  for (const f of fresh) assert.equal(f.status, 202, f.text);
});

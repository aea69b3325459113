/**
 * GET /health's counts are kept as the instance actors change (src/actors/health-tally.ts), not counted per
 * request: after every snapshot of every instance actor of the gateway, through creation, linking, failures, a backoff,
 * a quarantine, an operator restart and a deletion, the kept counts equal those counted from the instance actors'
 * snapshots one by one, and GET /health answers them. Real HTTP, the sandbox network, simulated time.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import type { InstanceSnapshot } from '../../machines/instance.machine.js';

const FAST = { minDelayMs: 1000, maxDelayMs: 1000, quietHours: null, maxPerHour: null, maxPer24h: null };

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'health_tally', simulated: true });
});
after(async () => {
  await t.stop();
});

type Health = { instances: Record<'total' | 'online' | 'offline' | 'starting' | 'degraded' | 'quarantined', number>; queue: { degraded: number } };
const health = async (): Promise<Health> => (await (await fetch(`${t.url}/health`)).json()) as Health;

test('the kept counts equal the snapshots\' after every change, and /health answers them', async () => {
  const actors = t.gw.actors;
  let checks = 0;
  const mismatches: string[] = [];
  const compare = (when: string) => {
    checks++;
    const counted = actors.countedFromSnapshots();
    const kept = { instances: actors.health(), degraded: actors.degradedCount() };
    if (JSON.stringify(kept) !== JSON.stringify(counted)) mismatches.push(`${when}: kept ${JSON.stringify(kept)}, counted ${JSON.stringify(counted)}`);
  };
  // after each snapshot of an instance actor (the other actors' snapshots come while an instance actor is being
  // spawned too, inside one synchronous step that no request can fall into: not compared there)
  const stop = actors.subscribe((ev) => {
    if (ev.type !== '@xstate.snapshot') return;
    const id = (ev.snapshot as Partial<InstanceSnapshot>).context?.instanceId;
    if (id !== undefined && actors.instanceActor(id) === ev.actorRef) compare(`after a snapshot of instance ${id}`);
  });
  try {
    const a = await t.createInstance('tally-a', { settings: FAST });
    const b = await t.createInstance('tally-b', { settings: FAST });
    const c = await t.createInstance('tally-c', { settings: FAST, link: false });
    compare('created');
    const fail = async (id: string) => {
      const r = await t.admin('POST', `/sandbox/v1/instances/${id}/fail`, { kind: 'session_crash', reason: 'test' });
      assert.equal(r.status, 200, r.text);
    };
    const statusOf = async (key: string) => (await t.api(key, 'GET', '/api/status')).body.data as { status: string };
    // b fails once (a backoff, then connected again); a fails until quarantined
    await fail(b.instance.id);
    await t.advanceUntil(async () => ((await statusOf(b.apiKey)).status === 'connected' ? true : null), 'b connected again', { maxMs: 120_000 });
    for (let i = 0; i < 5; i++) {
      await fail(a.instance.id);
      if (i < 4) await t.advanceUntil(async () => ((await statusOf(a.apiKey)).status === 'connected' ? true : null), 'a connected again', { maxMs: 120_000 });
    }
    const quarantined = await health();
    assert.equal(quarantined.instances.quarantined, 1);
    compare('quarantined');
    const restarted = await t.admin('POST', `/admin/v1/instances/${a.instance.id}/restart`);
    assert.equal(restarted.status, 202, restarted.text);
    await t.advanceUntil(async () => ((await statusOf(a.apiKey)).status === 'connected' ? true : null), 'a released', { maxMs: 120_000 });
    const deleted = await t.admin('DELETE', `/admin/v1/instances/${c.instance.id}`);
    assert.ok(deleted.status < 300, deleted.text);
    compare('deleted');

    const h = await health();
    const counted = actors.countedFromSnapshots();
    assert.deepEqual(h.instances, counted.instances, '/health answers the kept counts');
    assert.equal(h.queue.degraded, counted.degraded);
    assert.equal(h.instances.total, counted.instances.total);
    assert.equal(h.instances.quarantined, 0);
  } finally {
    stop();
  }
  assert.deepEqual(mismatches, []);
  assert.ok(checks > 50, `compared after every snapshot of an instance actor (${checks} times)`);
});

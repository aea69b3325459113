/**
 * A dispatch that went out late makes the next slot too close to it: the re-check at that slot fails, the job
 * is not sent then, and the waiting jobs get new slots from the late dispatch on (src/queue/replans.ts
 * atOnce: taken in memory at once, their rows written right after). The minimum pause holds between the
 * actual dispatch instants, each job goes out once, and PostgreSQL ends up with the slots the jobs went out at.
 * A shortfall of a few milliseconds (a fixed pause and a dispatch a little late) is waited out by the due job
 * alone (waitOutSpacing): no other slot moves.
 * Real HTTP, real PostgreSQL, the sandbox network, simulated time.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { SPACING_GRACE_MS } from '../../src/queue/replans.js';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'queue_dispatch_recheck', simulated: true });
});
after(async () => {
  await t.stop();
});

const SETTINGS = { minDelayMs: 1_000, maxDelayMs: 1_000, quietHours: null, maxPerHour: null, maxPer24h: null };

interface Row { state: string; scheduledAt: Date | null; dispatchedAt: Date | null; dispatches: number }

async function jobRows(ids: string[]): Promise<Row[]> {
  const { rows } = await t.db.pool.query<Row & { id: string }>(
    `SELECT id, state, scheduled_at AS "scheduledAt", dispatched_at AS "dispatchedAt",
            (SELECT count(*)::int FROM dispatches d WHERE d.job_id = j.id) AS dispatches
       FROM jobs j WHERE id = ANY($1::text[])`, [ids]);
  return ids.map((id) => {
    const r = rows.find((x) => x.id === id);
    if (!r) throw new Error(`no job ${id}`);
    return r;
  });
}

const instances = new Map<string, string>();
const instanceOf = (apiKey: string) => instances.get(apiKey) as string;
/** When the network received each of `bodies` (the sandbox's ledger), in that order. */
async function ledgerTimes(instanceId: string, bodies: string[]): Promise<number[]> {
  const r = await t.admin('GET', `/sandbox/v1/instances/${instanceId}/ledger`);
  const items = (r.body.data as { items: { body: string | null; timestamp: number }[] }).items;
  return bodies.map((b) => {
    const e = items.find((x) => x.body === b);
    if (!e) throw new Error(`"${b}" not on the ledger`);
    return e.timestamp;
  });
}

test('after a late dispatch the next job gets a new slot one pause after it, and the rows say so', async () => {
  const { apiKey, instance } = await t.createInstance('recheck-late', { settings: SETTINGS });
  instances.set(apiKey, instance.id);
  const first = t.clock.now() + 3_000;
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: `late ${i}`, notBefore: new Date(first).toISOString() });
    assert.equal(r.status, 202, r.text);
    ids.push(String(r.body.data?.jobId));
  }
  const planned = await jobRows(ids);
  assert.deepEqual(planned.map((j) => (j.scheduledAt as Date).getTime()), [first, first + 1_000, first + 2_000]);

  // one step of simulated time past the first two slots: the first goes out late, at the step's end
  await t.advance(first + 1_500 - t.clock.now(), first + 1_500 - t.clock.now());
  const done = await t.advanceUntil(async () => {
    const r = await jobRows(ids);
    return r.every((j) => j.state === 'sent') ? r : null;
    // each step once the gateway's queries are back: a full run once had the third 300 ms later than asserted, most
    // likely the clock stepping on past the second's slot while its claim was on its way (a late second re-plans
    // the third); not reproduced alone, nor beside two CPU burners
  }, 'all three sent', { maxMs: 10_000, stepMs: 100, storeIdle: true });

  assert.deepEqual(done.map((j) => j.dispatches), [1, 1, 1], 'each sent once');
  const at = done.map((j) => (j.dispatchedAt as Date).getTime());
  assert.ok((at[0] as number) >= first + 1_500, 'the first went out late');
  // the network's instants (the sandbox's ledger, on the same clock): the pause holds between them
  const received = await ledgerTimes(instanceOf(apiKey), ['late 0', 'late 1', 'late 2']);
  for (let i = 1; i < received.length; i++) assert.ok((received[i] as number) - (received[i - 1] as number) >= SETTINGS.minDelayMs, `pause ${i} ≥ minDelayMs (on the network)`);
  // the second was not sent at its first slot (too close to the late first): a new slot, one pause after the
  // first's call, which came between its claim (dispatchedAt) and the network's receipt
  const second = (done[1]?.scheduledAt as Date).getTime();
  assert.ok(second >= (at[0] as number) + SETTINGS.minDelayMs && second <= (received[0] as number) + SETTINGS.minDelayMs, `${second} one pause after the first's call`);
  assert.equal((done[2]?.scheduledAt as Date).getTime(), second + SETTINGS.minDelayMs);
});

test('a dispatch a few milliseconds late: the next job waits out its pause, and no other slot moves', async () => {
  const { apiKey } = await t.createInstance('recheck-slightly-late', { settings: SETTINGS });
  const first = t.clock.now() + 3_000;
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: `slightly late ${i}`, notBefore: new Date(first).toISOString() });
    assert.equal(r.status, 202, r.text);
    ids.push(String(r.body.data?.jobId));
  }
  const accepted = (await jobRows(ids)).map((j) => (j.scheduledAt as Date).getTime());
  assert.deepEqual(accepted, [0, 1, 2, 3, 4].map((i) => first + i * 1_000));

  // one step of simulated time 20 ms past the first slot: the first goes out 20 ms late
  const late = 20;
  assert.ok(late <= Math.min(SPACING_GRACE_MS, SETTINGS.minDelayMs / 2));
  await t.advance(first + late - t.clock.now(), first + late - t.clock.now());
  // Simulated time moves only while the gateway has no query out: the dispatch lane writes an outcome (real
  // PostgreSQL) before it claims the next job and arms the next slot, and a jump to the next timer meanwhile
  // moved the clock past that slot; the job then went out later than the grace, at the slot it was accepted
  // with, which the assertions below rightly refuse (seen once in a full run on a loaded machine).
  const steps = { storeIdle: true };
  const rows = await t.advanceUntil(async () => {
    const r = await jobRows(ids);
    return r[1]?.state === 'sent' ? r : null;
  }, 'the second sent', { maxMs: 5_000, ...steps });
  const at0 = (rows[0]?.dispatchedAt as Date).getTime();
  const at1 = (rows[1]?.dispatchedAt as Date).getTime();
  assert.equal(at0, first + late, 'the first went out late');
  assert.ok(at1 - at0 >= SETTINGS.minDelayMs, 'the pause holds between the actual dispatch instants');
  // the second waited for its pause: its slot moved there, and its row says so
  assert.equal((rows[1]?.scheduledAt as Date).getTime(), at0 + SETTINGS.minDelayMs);
  // nothing was planned again: the jobs after it keep the slots they were accepted with
  assert.deepEqual(rows.slice(2).map((j) => (j.scheduledAt as Date).getTime()), accepted.slice(2));

  const done = await t.advanceUntil(async () => {
    const r = await jobRows(ids);
    return r.every((j) => j.state === 'sent') ? r : null;
  }, 'all five sent', { maxMs: 10_000, ...steps });
  assert.deepEqual(done.map((j) => j.dispatches), [1, 1, 1, 1, 1], 'each sent once');
  const at = done.map((j) => (j.dispatchedAt as Date).getTime());
  for (let i = 1; i < at.length; i++) assert.ok((at[i] as number) - (at[i - 1] as number) >= SETTINGS.minDelayMs, `pause ${i} ≥ minDelayMs (actual dispatch instants)`);
  // each went out the shortfall after the slot it was accepted with, never more than the grace
  for (let i = 0; i < at.length; i++) assert.ok((at[i] as number) - (accepted[i] as number) <= SPACING_GRACE_MS, `job ${i} at most the grace late`);
  // and PostgreSQL ends up with the slots the jobs went out at
  assert.deepEqual(done.map((j) => (j.scheduledAt as Date).getTime()), [accepted[0], ...at.slice(1)]);
});

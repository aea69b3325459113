/**
 * Issue 13, finding 4: "A notBefore job holds back every later job." Real HTTP, real PostgreSQL, the sandbox
 * network, simulated time. An instance with no limits and 0 ms pauses; a v2 send with notBefore = now + 1 h, then
 * a plain send: the plain one is scheduled at now (not an hour later behind the reminder), goes out at once, and
 * the reminder still goes out at its notBefore. Later sends after a dispatch are not held back either.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'queue_notbefore', simulated: true });
});
after(async () => {
  await t.stop();
});

const UNLIMITED = { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null };
const HOUR = 3_600_000;

async function send(apiKey: string, body: Record<string, unknown>) {
  const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', ...body });
  assert.equal(r.status, 202, r.text);
  const d = r.body.data as { jobId: string; scheduledAt: string | null; queuePosition: number };
  return { jobId: d.jobId, scheduledAt: d.scheduledAt === null ? null : Date.parse(d.scheduledAt), queuePosition: d.queuePosition };
}

async function job(apiKey: string, jobId: string) {
  const r = await t.api(apiKey, 'GET', `/api/v2/messages/${jobId}`);
  assert.equal(r.status, 200, r.text);
  return r.body.data as { state: string; scheduledAt: string | null; dispatchedAt: string | null };
}

async function untilSent(apiKey: string, jobId: string, maxMs: number) {
  return t.advanceUntil(async () => {
    const j = await job(apiKey, jobId);
    return j.state === 'sent' ? j : null;
  }, `${jobId} sent`, { maxMs, stepMs: maxMs }); // from timer to timer: each fires at its own instant
}

for (const gapMs of [1_000, 0]) {
  test(`a plain send ${gapMs} ms after a notBefore send is scheduled at now, not behind the reminder`, async () => {
    const { apiKey } = await t.createInstance(`nb${gapMs}`, { settings: UNLIMITED });
    const t0 = t.clock.now();
    const reminder = await send(apiKey, { message: 'reminder', notBefore: new Date(t0 + HOUR).toISOString() });
    assert.equal(reminder.scheduledAt, t0 + HOUR);

    if (gapMs > 0) await t.advance(gapMs);
    const t1 = t.clock.now();
    const plain = await send(apiKey, { message: 'plain' });
    assert.equal(plain.scheduledAt, t1, 'the plain message is scheduled at now');
    assert.equal(plain.queuePosition, 1, 'the plain message is first in the dispatch order');
    assert.equal((await job(apiKey, reminder.jobId)).scheduledAt, new Date(t0 + HOUR).toISOString(), 'the reminder keeps its slot');

    // it goes out now, while the reminder waits for its hour
    const sent = await untilSent(apiKey, plain.jobId, 60_000);
    assert.ok(Date.parse(String(sent.dispatchedAt)) - t1 < 1_000, `dispatched at once, not at ${sent.dispatchedAt}`);
    assert.equal((await job(apiKey, reminder.jobId)).state, 'scheduled');

    // after that dispatch, the next plain send is not held back either
    await t.advance(5_000);
    const t2 = t.clock.now();
    const next = await send(apiKey, { message: 'plain again' });
    assert.equal(next.scheduledAt, t2);
    const nextSent = await untilSent(apiKey, next.jobId, 60_000);
    assert.ok(Date.parse(String(nextSent.dispatchedAt)) - t2 < 1_000, `dispatched at once, not at ${nextSent.dispatchedAt}`);

    assert.equal((await job(apiKey, reminder.jobId)).scheduledAt, new Date(t0 + HOUR).toISOString());
    if (gapMs === 0) return; // an hour of simulated time is walked once (its periodic timers cost ~40 s)
    // and the reminder goes out at its notBefore, not before
    const r = await untilSent(apiKey, reminder.jobId, 2 * HOUR);
    assert.equal(r.dispatchedAt, new Date(t0 + HOUR).toISOString());
  });
}

test('a cancelled reminder leaves nothing behind it: the next plain send is scheduled at now', async () => {
  const { apiKey } = await t.createInstance('nbcancel', { settings: UNLIMITED });
  const t0 = t.clock.now();
  const reminder = await send(apiKey, { message: 'reminder', notBefore: new Date(t0 + 2 * HOUR).toISOString() });
  const c = await t.api(apiKey, 'DELETE', `/api/v2/messages/${reminder.jobId}`);
  assert.equal(c.status, 200, c.text);
  await t.advance(1_000);
  const plain = await send(apiKey, { message: 'plain' });
  assert.equal(plain.scheduledAt, t.clock.now());
});

test('two reminders at one instant in front of a later one, the first cancelled: a plain send is scheduled at now, not behind the second', async () => {
  // found from the outside: the plain send was scheduled at the reminders' instant (an hour later), or refused
  // with 422 TTL_UNREACHABLE when that instant lay beyond its validity, with nothing in front of it
  const { apiKey } = await t.createInstance('nbpair', { settings: UNLIMITED });
  const t0 = t.clock.now();
  const far = await send(apiKey, { message: 'far', notBefore: new Date(t0 + 48 * HOUR).toISOString(), ttlSeconds: 2_592_000 });
  const first = await send(apiKey, { message: 'first', notBefore: new Date(t0 + 25 * HOUR).toISOString(), ttlSeconds: 2_592_000 });
  const second = await send(apiKey, { message: 'second', notBefore: new Date(t0 + 25 * HOUR).toISOString(), ttlSeconds: 2_592_000 });
  const c = await t.api(apiKey, 'DELETE', `/api/v2/messages/${first.jobId}`);
  assert.equal(c.status, 200, c.text);
  await t.advance(1_000);
  const plain = await send(apiKey, { message: 'plain' }); // the default validity (24 h) ends before the reminders' instant
  assert.equal(plain.scheduledAt, t.clock.now(), 'scheduled at now');
  assert.equal(plain.queuePosition, 1);
  assert.equal((await job(apiKey, second.jobId)).scheduledAt, new Date(t0 + 25 * HOUR).toISOString(), 'the second reminder keeps its instant');
  assert.equal((await job(apiKey, far.jobId)).scheduledAt, new Date(t0 + 48 * HOUR).toISOString());
});

const instances = new Map<string, string>();
const instanceOf = (apiKey: string) => instances.get(apiKey) as string;
/** When the network received the message `body` (the sandbox's ledger, on the gateway's clock). */
async function receivedAt(instanceId: string, body: string): Promise<number> {
  const r = await t.admin('GET', `/sandbox/v1/instances/${instanceId}/ledger`);
  const e = (r.body.data as { items: { body: string | null; timestamp: number }[] }).items.find((x) => x.body === body);
  if (!e) throw new Error(`"${body}" not on the ledger`);
  return e.timestamp;
}

test('with pauses, every waiting job cancelled: the next send takes the first free slot, not one behind theirs', async () => {
  const paced = { ...UNLIMITED, minDelayMs: 5_000, maxDelayMs: 5_000 };
  const { apiKey, instance } = await t.createInstance('paced-cancel', { settings: paced });
  instances.set(apiKey, instance.id);
  const jobs = [];
  // the first goes out at once; the others wait for it (its dispatch is the one the pauses count from)
  for (let i = 0; i < 6; i++) jobs.push(await send(apiKey, { message: `m${i}` }));
  await untilSent(apiKey, (jobs[0] as { jobId: string }).jobId, 60_000);
  const sentAt = Date.parse(String((await job(apiKey, (jobs[0] as { jobId: string }).jobId)).dispatchedAt));
  for (const j of jobs.slice(1)) assert.equal((await t.api(apiKey, 'DELETE', `/api/v2/messages/${j.jobId}`)).status, 200);
  const plain = await send(apiKey, { message: 'next' });
  // one pause after the first one's call, which came between its claim (dispatchedAt) and the network's receipt
  const received = await receivedAt(instanceOf(apiKey), 'm0');
  const now = t.clock.now();
  assert.ok((plain.scheduledAt as number) >= Math.max(now, sentAt + 5_000) && (plain.scheduledAt as number) <= Math.max(now, received + 5_000),
    `one pause after the last dispatch, not five: ${plain.scheduledAt} in [${Math.max(now, sentAt + 5_000)}, ${Math.max(now, received + 5_000)}]`);
  assert.equal(plain.queuePosition, 1);
});

/**
 * A media job whose URL takes long to fetch at dispatch: the slot's re-check passed before the fetch, and quiet hours
 * began (or the job's validity ended) while it ran. Found from the outside: the network was called 15 s into quiet
 * hours and past the job's expiry, and the job ended `sent`. Now the check is made again once the media is ready
 * (src/queue/dispatch.ts `notSendableAt`): the job goes back to waiting, is placed after the quiet hours and sent
 * then, or expires; nothing reaches the network meanwhile.
 * Real HTTP, real PostgreSQL, the sandbox network; a loopback server stands in for the media host and holds its GET
 * until the test lets it answer; the gateway's timers run on the simulated clock (from 2026-01-05 10:00 UTC).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { setNetworkDefaults } from '../../src/media/ssrf.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
let t: TestGateway;
let server: http.Server;
let port = 0;
let restore: () => void = () => undefined;
/** GETs the media host holds, each answered when the test calls it */
const held: (() => void)[] = [];
before(async () => {
  restore = setNetworkDefaults({ resolver: async () => [{ address: '127.0.0.1', family: 4 }], allowAddress: (a) => a === '127.0.0.1' });
  server = http.createServer((req, res) => {
    const answer = () => res.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG.length }).end(req.method === 'HEAD' ? undefined : PNG);
    if (req.method === 'HEAD') return answer();
    held.push(answer);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  t = await startTestGateway({ label: 'media_late', simulated: true });
});
after(async () => {
  await t.stop();
  server.close();
  restore();
});

const FREE = { minDelayMs: 0, maxDelayMs: 0, maxPerHour: null, maxPer24h: null };
const TO = '4915112345678';

async function ledger(instanceId: string): Promise<{ timestamp: number; caption?: string | null }[]> {
  const r = await t.admin('GET', `/sandbox/v1/instances/${instanceId}/ledger`);
  return (r.body.data as { items: { timestamp: number; caption?: string | null }[] }).items;
}

async function job(apiKey: string, jobId: string): Promise<Record<string, unknown>> {
  return (await t.api(apiKey, 'GET', `/api/v2/messages/${jobId}`)).body.data ?? {};
}

/** Accept a media send due now, and run the clock until the dispatch holds its fetch; answers the job id. */
async function heldAtDispatch(apiKey: string, caption: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await t.api(apiKey, 'POST', '/api/v2/send-media', { phone: TO, mediaUrl: `http://cdn.example:${port}/a.png`, caption, ...extra });
  assert.equal(r.status, 202, r.text);
  await t.advanceUntil(() => held.length > 0, 'the dispatch fetching its media', { stepMs: 100, maxMs: 60_000, realWaitMs: 20 });
  return String(r.body.data?.jobId);
}

test('quiet hours that begin while the media is fetched: the job waits for their end, then goes out; nothing inside them', async () => {
  const hhmm = (d: Date) => `${String(d.getUTCHours()).padStart(2, '0')}:${String(d.getUTCMinutes()).padStart(2, '0')}`;
  const start = new Date(Math.ceil((t.clock.now() + 60_000) / 60_000) * 60_000);
  const end = new Date(start.getTime() + 10 * 60_000);
  const { instance, apiKey } = await t.createInstance('quiet-late', { settings: { ...FREE, quietHours: { start: hhmm(start), end: hhmm(end), tz: 'UTC' } } });
  // sent 10 s before the quiet hours begin; the fetch (it may take 30 s, as the call may) ends 10 s into them
  await t.advance(start.getTime() - 10_000 - t.clock.now(), 10_000);
  const jobId = await heldAtDispatch(apiKey, 'quiet');
  assert.ok(t.clock.now() < start.getTime(), 'claimed before the quiet hours');
  await t.advance(start.getTime() + 10_000 - t.clock.now(), 1_000);
  held.shift()?.();
  // back in the queue; its next re-check (the lane's next turn) plans it after the quiet hours
  const back = await t.advanceUntil(async () => {
    const j = await job(apiKey, jobId);
    return j.state === 'scheduled' && j.scheduledAt === end.toISOString() ? j : null;
  }, 'the job back in the queue, its slot at the end of the quiet hours', { stepMs: 100, maxMs: 5_000, realWaitMs: 20 });
  assert.equal(back.resultCode ?? null, null, JSON.stringify(back));
  assert.deepEqual(await ledger(instance.id), [], 'nothing reached the network');

  // at the end of the quiet hours it is fetched again and sent
  await t.advanceUntil(() => held.length > 0, 'the second fetch', { stepMs: 10_000, maxMs: 15 * 60_000, realWaitMs: 20 });
  assert.ok(t.clock.now() >= end.getTime(), 'fetched again once the quiet hours ended');
  held.shift()?.();
  const sent = await t.advanceUntil(async () => ((await job(apiKey, jobId)).state === 'sent' ? true : null), 'sent', { stepMs: 100, maxMs: 60_000, realWaitMs: 20 });
  assert.ok(sent);
  const items = await ledger(instance.id);
  assert.equal(items.length, 1);
  assert.ok((items[0]?.timestamp ?? 0) * 1000 >= end.getTime(), `sent at ${new Date((items[0]?.timestamp ?? 0) * 1000).toISOString()}, after ${end.toISOString()}`);
});

test('a validity that ends while the media is fetched: the job expires, nothing sent', async () => {
  const { instance, apiKey } = await t.createInstance('expiry-late', { settings: { ...FREE, quietHours: null } });
  // valid for 60 s, due after 50 of them: the fetch (up to 30 s) ends past the validity
  const jobId = await heldAtDispatch(apiKey, 'expiring', { ttlSeconds: 60, notBefore: new Date(t.clock.now() + 50_000).toISOString() });
  const expiresAt = Date.parse(String((await job(apiKey, jobId)).expiresAt));
  assert.ok(expiresAt - t.clock.now() < 20_000, 'the fetch began less than 20 s before the expiry');
  await t.advance(expiresAt + 1_000 - t.clock.now(), 1_000);
  held.shift()?.();
  const ended = await t.advanceUntil(async () => {
    const j = await job(apiKey, jobId);
    return j.state === 'expired' ? j : null;
  }, 'the job expired', { stepMs: 100, maxMs: 10_000, realWaitMs: 20 });
  assert.equal(ended.state, 'expired');
  assert.deepEqual(await ledger(instance.id), [], 'nothing reached the network');
});

test('a v1 send-media whose fetch outlasts its caller\'s wait is sent as before: its caller was told the outcome is unknown, do not resend', async () => {
  // found by the probe of the fix: put back, a v1 job (it lives only as long as its caller's wait) expired unsent
  // after its caller had been told it may have been delivered
  const { instance, apiKey } = await t.createInstance('v1-late', { settings: { ...FREE, quietHours: null } });
  let answered: { status: number } | null = null;
  void t.api(apiKey, 'POST', '/api/send-media', { phone: TO, mediaUrl: `http://cdn.example:${port}/a.png`, caption: 'v1' }).then((r) => (answered = r));
  await t.advanceUntil(() => held.length > 0, 'the dispatch fetching its media', { stepMs: 100, maxMs: 60_000, realWaitMs: 20 });
  const { rows } = await t.db.pool.query<{ id: string; expires_at: Date }>('SELECT id, expires_at FROM jobs WHERE instance_id = $1', [instance.id]);
  const v1Job = rows[0];
  assert.ok(v1Job, 'the v1 send is a job');
  await t.advance(v1Job.expires_at.getTime() + 1_000 - t.clock.now(), 1_000);
  held.shift()?.();
  await t.advanceUntil(async () => (await ledger(instance.id)).length === 1, 'sent', { stepMs: 100, maxMs: 10_000, realWaitMs: 20 });
  await t.advanceUntil(() => answered, 'the v1 answer', { stepMs: 1_000, maxMs: 60_000, realWaitMs: 20 });
});

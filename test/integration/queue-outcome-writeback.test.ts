/**
 * A dispatch whose outcome arrives while PostgreSQL is unreachable (issue 13, finding 10). The message went
 * out (the sandbox ledger has it) and the call ended during the outage: the outcome could not be written.
 * It must be kept and written back on recovery, with its message.* event exactly once; the job must never
 * stay `sending`. The store is taken away by cutting a TCP proxy; time is the simulated clock.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

let t: TestGateway;
let proxy: TcpProxy;
let receiver: http.Server;
let receiverUrl = '';
const received: { eventId: string; event: string; data: Record<string, unknown> }[] = [];
const CALL_TIMEOUT_MS = 20_000;

before(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const env = JSON.parse(body) as { eventId: string; event: string; data: Record<string, unknown> };
      received.push({ eventId: env.eventId, event: env.event, data: env.data });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const target = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  t = await startTestGateway({
    label: 'writeback', simulated: true, viaPort: proxy.port,
    env: { WEBHOOK_ALLOW_PRIVATE: 'true', DRIVER_CALL_TIMEOUT_MS: String(CALL_TIMEOUT_MS) },
  });
});
after(async () => {
  await proxy.restore().catch(() => undefined);
  await t.stop();
  await proxy.close();
  receiver.close();
});

const jobState = async (jobId: string) =>
  (await t.db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [jobId])).rows[0]?.state ?? null;

test('an outcome that could not be written during an outage is written back on recovery, its event once', { skip: !process.env.TEST_DATABASE_URL && 'needs a PostgreSQL server (TEST_DATABASE_URL) to put a proxy in front of' }, async () => {
  const { instance, apiKey } = await t.createInstance('wb', { settings: { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null } });
  const hook = await t.admin('PUT', `/admin/v1/instances/${instance.id}/webhook`, { url: receiverUrl, secret: 'a-webhook-secret-of-some-length', events: ['*'] });
  assert.equal(hook.status, 200, hook.text);
  // the next send reaches the recipient, but the call gets no answer: it ends at the call deadline
  const fault = await t.admin('POST', `/sandbox/v1/instances/${instance.id}/faults`, { kind: 'hang', deliver: true });
  assert.equal(fault.status, 201, fault.text);

  const a = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'in flight at the cut' });
  assert.equal(a.status, 202, a.text);
  const jobId = String((a.body.data as { jobId: string }).jobId);
  // fire the slot timer only; then wait on real I/O (the clock stands still) for the claim and the delivery
  t.sim?.increment(1);
  const ledger = () => t.gw.sandbox?.network?.ledger(instance.id) ?? [];
  await waitFor(() => ledger().length === 1, 'the message in the ledger');
  await waitFor(async () => (await jobState(jobId)) === 'sending', 'the job committed as sending');

  await proxy.cut();
  await t.advanceUntil(() => t.gw.actors.degradedCount() === 1, 'degraded mode', { maxMs: 10_000, stepMs: 500 });
  // the call deadline passes during the outage: the outcome (unknown) cannot be written
  await t.advance(CALL_TIMEOUT_MS + 2_000, 1_000);
  assert.equal(await jobState(jobId), 'sending', 'PostgreSQL could not take the outcome yet');
  assert.ok(!received.some((e) => e.event.startsWith('message.') && e.data.jobId === jobId && e.event !== 'message.queued'));

  await proxy.restore();
  await t.advanceUntil(() => t.gw.actors.degradedCount() === 0, 'recovery', { maxMs: 30_000, stepMs: 1_000 });
  await t.advanceUntil(async () => (await jobState(jobId)) === 'unknown', 'the kept outcome written back', { maxMs: 30_000, stepMs: 1_000 });
  await t.advanceUntil(() => received.some((e) => e.event === 'message.unknown' && e.data.jobId === jobId), 'message.unknown delivered', { maxMs: 60_000 });
  // minutes later: still written once, one event, one message on the network
  await t.advance(180_000, 10_000);
  const job = await t.api(apiKey, 'GET', `/api/v2/messages/${jobId}`);
  assert.equal(job.status, 200, job.text);
  assert.equal((job.body.data as { state: string }).state, 'unknown');
  const events = received.filter((e) => e.event.startsWith('message.') && e.event !== 'message.queued' && e.data.jobId === jobId);
  // webhooks are at-least-once (a slow delivery may be tried again): one event, whatever its deliveries
  assert.equal(new Set(events.map((e) => e.eventId)).size, 1, JSON.stringify(events));
  assert.equal(events[0]?.event, 'message.unknown');
  const { rows } = await t.db.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM outbox WHERE instance_id = $1 AND event = 'message.unknown'", [instance.id],
  );
  assert.equal(rows[0]?.n, 1, 'one message.unknown in the outbox');
  assert.equal(ledger().length, 1, 'sent once, never again');
});

test('a v1 send in flight when the store goes away is never answered "not sent": the wait ends as unknown', { skip: !process.env.TEST_DATABASE_URL && 'needs a PostgreSQL server (TEST_DATABASE_URL) to put a proxy in front of' }, async () => {
  // found from the outside: with the store's answers lost, the cancellation that closes a v1 wait could not read
  // the job's row and took it for a job never dispatched; the caller was told "not sent, will not be: retry"
  // (503) for a message that went out
  await t.advanceUntil(() => t.gw.actors.degradedCount() === 0, 'the store back after the test before', { maxMs: 30_000, stepMs: 1_000 });
  const { instance, apiKey } = await t.createInstance('v1-cut', { settings: { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null } });
  const fault = await t.admin('POST', `/sandbox/v1/instances/${instance.id}/faults`, { kind: 'hang', deliver: true });
  assert.equal(fault.status, 201, fault.text);
  const answer = t.api(apiKey, 'POST', '/api/send-message', { phone: '4915112345678', message: 'v1 in flight at the cut' });
  const ledger = () => t.gw.sandbox?.network?.ledger(instance.id) ?? [];
  await t.advanceUntil(() => ledger().length === 1, 'the message in the ledger', { maxMs: 2_000, stepMs: 10, realWaitMs: 20 });

  await proxy.cut();
  // the synchronous wait (20 s) ends before the call's deadline: the job is being sent, whatever the store says
  await t.advance(25_000, 1_000);
  const r = await answer;
  assert.equal(r.status, 500, r.text);
  assert.match(String(r.body.error), /may have been delivered: do not resend/);
  await proxy.restore();
  await t.advanceUntil(() => t.gw.actors.degradedCount() === 0, 'recovery', { maxMs: 30_000, stepMs: 1_000 });
});

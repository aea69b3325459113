/**
 * An acceptance whose commit's outcome is unknown (its connection ended while the one statement of its group
 * was on its way, src/queue/sql/insertJobsFenced.ts): the caller is told so (504 INSTANCE_TIMEOUT, "retry only
 * with the same idempotency key"), and the queue reads itself again from PostgreSQL, so a job that did reach
 * PostgreSQL that way (here: a row another session commits in that moment, standing for the commit whose
 * answer was lost) is planned and sent, once, instead of waiting unseen until the next start. Real HTTP, real
 * PostgreSQL, the sandbox network, simulated time.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { commitOfUnknownOutcome } from '../helpers/unknown-commit.js';
import { NEEDS_SERVER } from '../helpers/db.js';
import { insertJobs } from '../../src/queue/sql/insertJobs.js';
import { newJobId } from '../../src/ids.js';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'accept_unknown_commit', simulated: true });
});
after(async () => {
  await t.stop();
});

test('a commit of unknown outcome: told so, and a job that did reach PostgreSQL is found and sent once', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('unknown', { settings: { minDelayMs: 1_000, maxDelayMs: 1_000, quietHours: null, maxPerHour: null, maxPer24h: null } });
  let ghostId = '';
  const r = await commitOfUnknownOutcome(t, apiKey, { phone: '4915112345678', message: 'lost answer' }, async (holder) => {
    // the job the gateway does not know it wrote: committed by the holder, in the acceptance's place
    const now = t.clock.now();
    const [ghost] = await insertJobs(holder, [{
      id: newJobId(), instanceId: instance.id, originRoute: '/api/v2/send-message', chatId: '4915112345678@c.us', phone: '4915112345678',
      payloadHash: 'ghost', idempotencyKey: null, priority: 5, notBefore: null, queuedAt: now, scheduledAt: now + 1_000,
      expiresAt: now + 3_600_000, previousJobId: null, callerBoot: null, kind: 'text', payload: { body: 'ghost', chatId: '4915112345678@c.us' },
    }]);
    ghostId = ghost?.id ?? '';
  });
  assert.match(String(r.body.error), /may have been accepted/);

  const sent = await t.advanceUntil(async () => {
    const { rows } = await t.db.pool.query<{ state: string; attempts: number }>('SELECT state, attempts FROM jobs WHERE id = $1', [ghostId]);
    return rows[0]?.state === 'sent' ? rows[0] : null;
  }, 'the job found again and sent', { maxMs: 30_000, stepMs: 500 });
  assert.equal(sent.attempts, 1);
  const ledger = await t.admin('GET', `/sandbox/v1/instances/${instance.id}/ledger`);
  const bodies = (ledger.body.data as { items: { body: string | null }[] }).items.map((e) => e.body);
  assert.equal(bodies.filter((b) => b === 'ghost').length, 1, `sent once: ${ledger.text}`);
  assert.ok(!bodies.includes('lost answer'), 'the send whose statement never ran was not sent');
});

/**
 * A claim whose answer was lost: the claim committed (`sending`), but the dispatch lane saw a failure and made no
 * call. The next claim of that job puts it back first (src/queue/dispatch-claim.ts), as long as the job is in the
 * mirror. Found from the outside: a re-read of the queue in that moment (src/queue/core.ts `reload`, after a
 * group commit of unknown outcome; the store's answers were lost for seconds under load) dropped it from the
 * mirror, and the job stayed `sending` for ever, never called, while the queue counted nothing in flight.
 *
 * Here the lost claim is a row moved to `sending` behind the gateway's back (what such a claim leaves: the
 * process holds no claim of it), and the re-read is the one a commit of unknown outcome causes (as in
 * accept-unknown-commit.test.ts). Then it must be put back and sent, once. Real HTTP, real PostgreSQL, the
 * sandbox network, simulated time.
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
  t = await startTestGateway({ label: 'lost_claim', simulated: true });
});
after(async () => {
  await t.stop();
});

const NO_LIMITS = { minDelayMs: 1_000, maxDelayMs: 1_000, quietHours: null, maxPerHour: null, maxPer24h: null };

/** A job of `instanceId` as a claim whose answer was lost leaves it: `sending`, its dispatch counted, held by nobody. */
async function lostClaim(instanceId: string, body: string, expiresInMs: number) {
  const now = t.clock.now();
  const [job] = await insertJobs(t.db.pool, [{
    id: newJobId(), instanceId, originRoute: '/api/v2/send-message', chatId: '4915112345678@c.us', phone: '4915112345678',
    payloadHash: body, idempotencyKey: null, priority: 5, notBefore: null, queuedAt: now - 10_000, scheduledAt: now,
    expiresAt: now + expiresInMs, previousJobId: null, callerBoot: null, kind: 'text', payload: { body, chatId: '4915112345678@c.us' },
  }]);
  assert.ok(job);
  await t.db.pool.query(`UPDATE jobs SET state = 'sending', dispatched_at = $2, attempts = 1 WHERE id = $1`, [job.id, new Date(now)]);
  await t.db.pool.query('INSERT INTO dispatches (instance_id, job_id, dispatched_at) VALUES ($1, $2, $3)', [instanceId, job.id, new Date(now)]);
  return job;
}

const ledgerBodies = async (instanceId: string) =>
  ((await t.admin('GET', `/sandbox/v1/instances/${instanceId}/ledger`)).body.data as { items: { body: string | null }[] }).items.map((e) => e.body);

test('a claim whose answer was lost is put back and sent once after the queue read itself again', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('lost', { settings: NO_LIMITS });
  const job = await lostClaim(instance.id, 'lost claim', 3_600_000);

  await commitOfUnknownOutcome(t, apiKey, { phone: '4915112345678', message: 'its statement never runs' });

  const sent = await t.advanceUntil(async () => {
    const { rows } = await t.db.pool.query<{ state: string; attempts: number }>('SELECT state, attempts FROM jobs WHERE id = $1', [job.id]);
    return rows[0]?.state === 'sent' ? rows[0] : null;
  }, 'the lost claim put back and sent', { maxMs: 30_000, stepMs: 500 });
  assert.equal(sent.attempts, 2, 'claimed again once');
  const bodies = await ledgerBodies(instance.id);
  assert.equal(bodies.filter((b) => b === 'lost claim').length, 1, `sent once: ${bodies.join()}`);
  const { rows } = await t.db.pool.query<{ n: string }>('SELECT count(*) AS n FROM dispatches WHERE job_id = $1', [job.id]);
  assert.equal(Number(rows[0]?.n), 1, 'the lost claim\'s dispatch is forgotten: one dispatch counts');
});

test('a lost claim past its validity is put back and expires: never sent, never left sending', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('lost-expired', { settings: NO_LIMITS });
  const job = await lostClaim(instance.id, 'lost and expired', -1_000);

  await commitOfUnknownOutcome(t, apiKey, { phone: '4915112345678', message: 'its statement never runs' });

  await t.advanceUntil(async () => {
    const { rows } = await t.db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [job.id]);
    return rows[0]?.state === 'expired' ? rows[0] : null;
  }, 'the lost claim expired', { maxMs: 30_000, stepMs: 500 });
  assert.ok(!(await ledgerBodies(instance.id)).includes('lost and expired'));
});

/**
 * PostgreSQL answering, but cancelling a statement at its statement_timeout (57014: a lock held elsewhere, an
 * overloaded server) under a request that an actor serves (the v2 send's acceptance): the answer is
 * 503 QUEUE_STORE_UNAVAILABLE with data.reason store_timeout, as for a statement the route runs itself, not
 * 500 INTERNAL_ERROR (found from the outside: both answered 500 with an "unhandled" error log of the planner).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const SKIP = !process.env.TEST_DATABASE_URL && 'needs a PostgreSQL server (TEST_DATABASE_URL)';
let t: TestGateway | undefined;
after(async () => {
  await t?.stop();
});

test('a statement cancelled by its timeout under an actor is answered 503 store_timeout', { skip: SKIP, timeout: 60_000 }, async () => {
  t = await startTestGateway({ label: 'stmt_timeout' });
  const { apiKey } = await t.createInstance('locked');
  const first = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'before' });
  assert.equal(first.status, 202, first.text);
  const locker = new pg.Client({ connectionString: t.db.url ?? '' });
  await locker.connect();
  try {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE');
    const send = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'locked out' });
    for (const [what, r] of [['send', send]] as const) {
      assert.equal(r.status, 503, `${what}: ${r.text}`);
      assert.equal(r.body.code, 'QUEUE_STORE_UNAVAILABLE', `${what}: ${r.text}`);
      assert.equal((r.body.data as { reason?: string }).reason, 'store_timeout', `${what}: ${r.text}`);
    }
  } finally {
    await locker.query('ROLLBACK').catch(() => undefined);
    await locker.end();
  }
  const after = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'after' });
  assert.equal(after.status, 202, after.text);
});

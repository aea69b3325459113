/**
 * POST /admin/v1/instances once the instance's row is committed: the creation stands whatever its placement meets
 * (found by the outside probe: with `nodes` locked, the placement's read of the live nodes timed out and the
 * creation was answered 503 QUEUE_STORE_UNAVAILABLE "nothing was done" while the row existed: the API key, shown
 * only in the 201, was lost, and a retry was refused 409, the name taken). Now 201 with the key and
 * `startDeferred` (why it is not running yet), and the cluster's next round starts it once PostgreSQL answers.
 *
 * A COMMIT that breaks on its way (outcome unknown) is answered 504 INSTANCE_TIMEOUT saying how to find out (the
 * name in the list; found: rotate the key), not "retry only with the same idempotency key", which the route
 * does not take.
 *
 * The placement's statement is cancelled while it waits for `nodes` (57014, as its statement timeout would after
 * 4 s); the COMMIT is held by a deferred trigger waiting for an advisory lock, and its backend terminated there.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startTestGateway, waitFor, type ApiResponse, type TestGateway } from '../helpers/gateway.js';
import { NEEDS_SERVER } from '../helpers/db.js';

let t: TestGateway;
before(async () => {
  if (NEEDS_SERVER.skip) return;
  // rounds every 500 ms: the deferred start comes soon after the lock is let go
  t = await startTestGateway({ label: 'instance_create_placement', env: { LEASE_TTL_MS: '2000' } });
});
after(async () => {
  await t?.stop();
});

const names = async (): Promise<string[]> => {
  const list = await t.admin('GET', '/admin/v1/instances');
  assert.equal(list.status, 200, list.text);
  return (list.body.data?.items as { name: string }[]).map((i) => i.name);
};

test('a placement the store fails after the row committed: 201 with the key and startDeferred; a round starts it later', NEEDS_SERVER, async () => {
  const holder = new pg.Client(t.db.config);
  await holder.connect();
  let created: ApiResponse | null = null;
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE nodes IN ACCESS EXCLUSIVE MODE');
    void t.admin('POST', '/admin/v1/instances', { name: 'placed-late', driver: 'sandbox' }).then((r) => (created = r));
    // the placement's read of the live nodes waits for the lock: cancelled there, as its statement timeout would
    await waitFor(async () => {
      await t.db.pool.query(
        `SELECT pg_cancel_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'SELECT id, url, capacity%FROM nodes%'`);
      return created;
    }, 'the creation answered');
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    await holder.end();
  }
  const r = created as ApiResponse | null;
  assert.ok(r);
  assert.equal(r.status, 201, r.text);
  const data = r.body.data as { instance: Record<string, unknown>; apiKey: string; startDeferred: string | null };
  assert.match(data.apiKey, /^wapi_placed-late_/);
  assert.match(String(data.startDeferred), /PostgreSQL did not answer in time/);
  assert.match(String(data.startDeferred), /next cluster round/);
  const id = String(data.instance.id);
  assert.equal(data.instance.name, 'placed-late');
  // no node runs it yet: shown as such, asked of nobody
  assert.equal(data.instance.status, 'disconnected');
  assert.equal(data.instance.node, null);
  // the lock let go, the node's next round takes it (held by no node) and starts it; its key works
  await waitFor(() => t.gw.actors.instanceActor(id), 'the instance started by a round', 4_000);
  await waitFor(async () => (await t.api(data.apiKey, 'GET', '/api/status')).status === 200, 'its status answered with its key');
  assert.deepEqual(await names(), ['placed-late']);
  // an ordinary creation: placed at once, startDeferred null
  const ordinary = await t.admin('POST', '/admin/v1/instances', { name: 'placed-at-once', driver: 'sandbox' });
  assert.equal(ordinary.status, 201, ordinary.text);
  assert.equal(ordinary.body.data?.startDeferred, null);
  assert.ok(t.gw.actors.instanceActor(String((ordinary.body.data?.instance as { id: string }).id)), 'started at its creation');
});

/**
 * `ask`'s answer when the COMMIT of what it writes into `table` breaks on its way: a deferred trigger on `table`
 * holds that COMMIT on an advisory lock the test holds, and its backend is terminated there.
 */
async function withCommitCut<T>(table: 'instances' | 'api_keys', ask: () => Promise<T>): Promise<T> {
  await t.db.pool.query(`CREATE FUNCTION test_hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_advisory_xact_lock(4242); RETURN NULL; END $$`);
  await t.db.pool.query(`CREATE CONSTRAINT TRIGGER test_hold_commit AFTER INSERT ON ${table}
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_hold_commit()`);
  const holder = new pg.Client(t.db.config);
  await holder.connect();
  try {
    await holder.query('SELECT pg_advisory_lock(4242)');
    const answer = ask();
    const pid = await waitFor(async () => {
      const { rows } = await t.db.pool.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query = 'COMMIT'");
      return rows[0]?.pid;
    }, `the COMMIT into ${table} waiting`);
    await holder.query('SELECT pg_terminate_backend($1)', [pid]);
    return await answer;
  } finally {
    await holder.end();
    await t.db.pool.query(`DROP TRIGGER IF EXISTS test_hold_commit ON ${table}`);
    await t.db.pool.query('DROP FUNCTION IF EXISTS test_hold_commit()');
  }
}

test('a COMMIT of unknown outcome: 504 saying how to find out (the list by name, then a key rotation), no idempotency key', NEEDS_SERVER, async () => {
  const r = await withCommitCut('instances', () => t.admin('POST', '/admin/v1/instances', { name: 'maybe-made', driver: 'sandbox' }));
  assert.equal(r.status, 504, r.text);
  assert.equal(r.body.code, 'INSTANCE_TIMEOUT', r.text);
  assert.deepEqual(r.body.data, { reason: 'commit_unknown', name: 'maybe-made' });
  assert.match(String(r.body.error), /may or may not have been created/);
  assert.match(String(r.body.error), /GET \/admin\/v1\/instances/);
  assert.match(String(r.body.error), /rotate it \(POST \/admin\/v1\/instances\/:id\/keys\)/);
  assert.doesNotMatch(String(r.body.error), /idempotency/);
  // what the answer says to do: here the COMMIT did not go through (its backend ended first): not listed, made again
  assert.ok(!(await names()).includes('maybe-made'));
  const again = await t.admin('POST', '/admin/v1/instances', { name: 'maybe-made', driver: 'sandbox' });
  assert.equal(again.status, 201, again.text);
});

test('a key rotation whose COMMIT has an unknown outcome: 504 saying to rotate again, no idempotency key; the old key is verified again', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('rotate-unknown', { link: false });
  assert.equal((await t.api(apiKey, 'GET', '/api/status')).status, 200, 'the old key verified and cached');
  const r = await withCommitCut('api_keys', () => t.admin('POST', `/admin/v1/instances/${instance.id}/keys`));
  assert.equal(r.status, 504, r.text);
  assert.equal(r.body.code, 'INSTANCE_TIMEOUT', r.text);
  assert.deepEqual(r.body.data, { reason: 'commit_unknown', instanceId: instance.id });
  assert.match(String(r.body.error), /may or may not have been revoked/);
  assert.match(String(r.body.error), /Rotate again/);
  assert.doesNotMatch(String(r.body.error), /idempotency/);
  // here the COMMIT did not go through: the old key, verified again, still works; rotating again settles it
  assert.equal((await t.api(apiKey, 'GET', '/api/status')).status, 200);
  const again = await t.admin('POST', `/admin/v1/instances/${instance.id}/keys`);
  assert.equal(again.status, 201, again.text);
  assert.equal((await t.api(apiKey, 'GET', '/api/status')).status, 401);
  assert.equal((await t.api(String(again.body.data?.apiKey), 'GET', '/api/status')).status, 200);
});

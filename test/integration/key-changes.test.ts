/**
 * Keys stopped on another node stop here at once (sql/0013, src/store/key-changes.ts): a revocation or an
 * instance's delete written to the shared database by any node reaches this gateway's key cache by NOTIFY,
 * not when its 30 s run out. "Another node" is a statement on the database, as another node's rotation or
 * delete is: the gateway under test takes no part in it. Real PostgreSQL server (LISTEN needs one), real HTTP,
 * a simulated clock that is never moved except where the test says: only the notice can end a cached key.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { NEEDS_SERVER } from '../helpers/db.js';
import { startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import pg from 'pg';
import { KEY_CHANGES_APPLICATION, KEYS_CHANGED_CHANNEL, instancesOf } from '../../src/store/key-changes.js';
import { UNWATCHED_TTL_MS } from '../../src/http/auth.js';

let t: TestGateway;
before(async () => {
  if (NEEDS_SERVER.skip) return;
  t = await startTestGateway({ label: 'key_changes', simulated: true });
  await listening();
});
after(async () => {
  await t?.stop();
});

/** the listening connection's backend, once it listens */
const listener = async () =>
  (await t.db.pool.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database() AND query LIKE 'LISTEN%'",
    [KEY_CHANGES_APPLICATION],
  )).rows[0]?.pid ?? null;
const listening = () => waitFor(listener, 'the key-changes connection listening');

const status = async (key: string) => (await t.api(key, 'GET', '/api/status')).status;

/** The key is refused once the notice is heard (the clock never moves), then on a v2 and a v1 send too. */
async function refusedOnceHeard(apiKey: string, what: string): Promise<void> {
  await waitFor(async () => (await status(apiKey)) === 401, `${what} refused`);
  const v2 = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'old key' });
  assert.deepEqual([v2.status, v2.body.code], [401, 'INVALID_API_KEY'], v2.text);
  const v1 = await t.api(apiKey, 'POST', '/api/send-message', { phone: '4915112345678', message: 'old key' });
  assert.equal(v1.status, 401, v1.text);
}

test('a key revoked by another node is 401 here at once, v1 and v2, though this node had it cached', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('rotated-elsewhere');
  assert.equal(await status(apiKey), 200, 'verified and cached');
  await t.db.pool.query('UPDATE api_keys SET revoked_at = now() WHERE instance_id = $1', [instance.id]);
  await refusedOnceHeard(apiKey, 'the revoked key');
  const jobs = await t.db.pool.query('SELECT 1 FROM jobs WHERE instance_id = $1', [instance.id]);
  assert.equal(jobs.rowCount, 0, 'nothing was accepted with the old key');
});

test('an instance deleted by another node: its key is 401 INVALID_API_KEY here once the notice arrives, not a 502 or 503 for a second', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('deleted-elsewhere');
  assert.equal(await status(apiKey), 200);
  await t.db.pool.query('DELETE FROM instances WHERE id = $1', [instance.id]);
  // between the commit and the notice (milliseconds) a send may still meet the instance's lease gone: 502, nothing accepted
  await refusedOnceHeard(apiKey, 'the deleted instance\'s key');
});

test('while the listening connection is down a cached key is kept a second on the clock, then looked up; it listens again', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('unheard');
  assert.equal(await status(apiKey), 200);
  const pid = await listening();
  await t.db.pool.query('SELECT pg_terminate_backend($1)', [pid]);
  await waitFor(async () => (await listener()) !== pid || null, 'the listening connection gone');
  // revoked while nobody listens: the notice is lost, the cache still has the key (the clock has not moved)
  await t.db.pool.query('UPDATE api_keys SET revoked_at = now() WHERE instance_id = $1', [instance.id]);
  assert.equal(await status(apiKey), 200, 'kept while the clock stands still');
  await t.sim?.increment(UNWATCHED_TTL_MS);
  await waitFor(async () => (await status(apiKey)) === 401, 'the key looked up again after a second');
  // and it listens again (the retry is due after a second on the same clock)
  const again = await listening();
  assert.notEqual(again, pid);
  const other = await t.createInstance('heard-again');
  assert.equal(await status(other.apiKey), 200);
  await t.db.pool.query('UPDATE api_keys SET revoked_at = now() WHERE instance_id = $1', [other.instance.id]);
  await waitFor(async () => (await status(other.apiKey)) === 401, 'the revoked key refused once listening again');
});

test('a notice names the instances whose keys stopped working (a revocation, a key deleted, an instance deleted); a statement that changes nothing sends none', NEEDS_SERVER, async () => {
  const a = await t.createInstance('named-a');
  const b = await t.createInstance('named-b');
  const c = await t.createInstance('named-c');
  const heard: (string[] | null)[] = [];
  const own = new pg.Client(t.db.config);
  await own.connect();
  try {
    own.on('notification', (n) => {
      if (n.channel === KEYS_CHANGED_CHANNEL) heard.push(instancesOf(n.payload));
    });
    await own.query(`LISTEN ${KEYS_CHANGED_CHANNEL}`);
    const noticed = async (what: string, sql: string, values: unknown[], expected: string[]) => {
      heard.length = 0;
      await t.db.pool.query(sql, values);
      await waitFor(() => heard.length > 0 || null, what);
      assert.deepEqual(heard.map((ids) => (ids ? [...ids].sort() : ids)), [[...expected].sort()], what);
    };
    await noticed('a revocation', 'UPDATE api_keys SET revoked_at = now() WHERE instance_id = $1', [a.instance.id], [a.instance.id]);
    await noticed('two instances in one statement', 'UPDATE api_keys SET revoked_at = now() WHERE instance_id = ANY($1::uuid[])', [[a.instance.id, b.instance.id]], [a.instance.id, b.instance.id]);
    await noticed('a key deleted', 'DELETE FROM api_keys WHERE instance_id = $1', [b.instance.id], [b.instance.id]);
    await noticed('an instance deleted', 'DELETE FROM instances WHERE id = $1', [c.instance.id], [c.instance.id]);
    // nothing changed, nothing heard: notices arrive in commit order, so what is heard up to the next statement's
    // notice is that notice alone
    heard.length = 0;
    await t.db.pool.query('UPDATE api_keys SET revoked_at = now() WHERE false');
    await t.db.pool.query('UPDATE api_keys SET revoked_at = now() WHERE instance_id = $1', [a.instance.id]);
    await waitFor(() => heard.length > 0 || null, 'the next revocation');
    assert.deepEqual(heard, [[a.instance.id]]);
  } finally {
    await own.end();
  }
});

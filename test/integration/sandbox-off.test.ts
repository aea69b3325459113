/**
 * A gateway started with SANDBOX=off has no sandbox network: a sandbox instance created there could never start.
 * The creation is refused 409 CONFLICT before anything is written (found from the outside: it was answered 201 with
 * a key, and the instance then stayed `starting` while only the log said why). The name stays free.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { NEEDS_SERVER } from '../helpers/db.js';

let t: TestGateway;
before(async () => {
  if (NEEDS_SERVER.skip) return;
  t = await startTestGateway({ label: 'sandbox_off', env: { SANDBOX: 'off' } });
});
after(async () => {
  await t?.stop();
});

test('SANDBOX=off: a sandbox instance (named, or the default driver) is refused 409 CONFLICT, and nothing is written', NEEDS_SERVER, async () => {
  for (const body of [{ name: 'no-sandbox', driver: 'sandbox' }, { name: 'no-sandbox' }]) {
    const r = await t.admin('POST', '/admin/v1/instances', body);
    assert.equal(r.status, 409, r.text);
    assert.equal(r.body.success, false);
    assert.equal(r.body.code, 'CONFLICT');
    assert.deepEqual(r.body.data, { driver: 'sandbox' });
    assert.match(String(r.body.error), /SANDBOX=off/);
    assert.doesNotMatch(r.text, /wapi_/, 'no key is shown');
  }
  const list = await t.admin('GET', '/admin/v1/instances');
  assert.equal(list.status, 200, list.text);
  assert.deepEqual(list.body.data?.items, []);
  const count = await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM instances');
  assert.equal(count.rows[0]?.n, 0);
});

/**
 * Rotations of one instance's key sent together (a double click in the console, two operators' scripts): each
 * is answered 201 with a new key, and README says a rotation stops every earlier key. Found from the outside:
 * the rotations only took a KEY SHARE lock on the instance's row, which does not exclude another rotation, and
 * each revoked the keys committed when its UPDATE began: 20 rotations sent together left 9 of their 20 keys
 * working. Only the last rotation's key may work once they are all answered.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from '../helpers/gateway.js';

test('rotations of one key sent together leave exactly one key working', async () => {
  const t = await startTestGateway({ label: 'rotate_concurrent_keys' });
  try {
    const { instance, apiKey } = await t.createInstance('rk', { link: false });
    const answers = await Promise.all(Array.from({ length: 12 }, () => t.admin('POST', `/admin/v1/instances/${instance.id}/keys`)));
    const keys = [apiKey];
    for (const r of answers) {
      assert.equal(r.status, 201, r.text);
      keys.push(String(r.body.data?.apiKey));
    }
    const working: string[] = [];
    for (const k of keys) if ((await t.api(k, 'GET', '/api/status')).status === 200) working.push(k);
    assert.equal(working.length, 1, `${working.length} of ${keys.length} keys still work`);
  } finally {
    await t.stop();
  }
});

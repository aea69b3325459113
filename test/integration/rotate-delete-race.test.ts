/**
 * A key rotation sent together with the instance's delete (an operator's script, two consoles): found from the
 * outside, `POST /admin/v1/instances/:id/keys` beside `DELETE /admin/v1/instances/:id` answered 500
 * INTERNAL_ERROR on either side ("deadlock detected": the rotation locked the key rows and then needed the
 * instance's row for its new key's foreign key, the delete locked the row and then needed the key rows for its
 * cascade), or the rotation failed its foreign key on a delete committed in between. Each must answer what it
 * did: the delete 200, the rotation 201 with a key (before the delete) or 404 INSTANCE_NOT_FOUND (after it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from '../helpers/gateway.js';

test('rotations and deletes of one instance sent together answer 201/404 and 200, never 500', async () => {
  const t = await startTestGateway({ label: 'rotate_delete_race' });
  try {
    const seen: string[] = [];
    for (let i = 0; i < 8; i++) {
      const { instance } = await t.createInstance(`rd-${i}`, { link: false });
      const path = `/admin/v1/instances/${instance.id}`;
      const answers = await Promise.all([
        t.admin('POST', `${path}/keys`),
        t.admin('DELETE', path),
        t.admin('POST', `${path}/keys`),
        t.admin('POST', `${path}/keys`),
      ]);
      for (const [k, r] of answers.entries()) {
        seen.push(`${k === 1 ? 'delete' : 'rotate'} ${r.status} ${r.body.code ?? ''}`);
        if (k === 1) assert.equal(r.status, 200, r.text);
        else if (r.status === 201) assert.match(String(r.body.data?.apiKey), /^wapi_rd-\d_/, r.text);
        else assert.equal(`${r.status} ${r.body.code}`, '404 INSTANCE_NOT_FOUND', r.text);
      }
      assert.equal((await t.admin('GET', path)).status, 404);
    }
    assert.ok(!seen.some((s) => s.includes(' 500')), seen.join('\n'));
    // two deletes sent together: one deleted it (200), the other found it gone (404), as one sent after would
    for (let i = 0; i < 4; i++) {
      const { instance } = await t.createInstance(`dd-${i}`, { link: false });
      const path = `/admin/v1/instances/${instance.id}`;
      const answers = await Promise.all([t.admin('DELETE', path), t.admin('DELETE', path)]);
      assert.deepEqual(answers.map((r) => `${r.status} ${r.body.code ?? ''}`).sort(), ['200 ', '404 INSTANCE_NOT_FOUND'], answers.map((r) => r.text).join('\n'));
    }
  } finally {
    await t.stop();
  }
});

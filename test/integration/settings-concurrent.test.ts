/**
 * Two settings changes at once whose merged results are each valid alone but not together (minDelayMs raised,
 * maxDelayMs lowered past it): one is taken, the other refused 400 VALIDATION_FAILED against the record the first
 * left, never 500. Found from the outside through two nodes: each change was checked against the record it had
 * read, and the loser met the table's check constraint (500 INTERNAL_ERROR) in 15 of 20 rounds. The record is
 * read and written under its row lock now (src/instances.ts updateSettings). Real PostgreSQL, real HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from '../helpers/gateway.js';

test('two concurrent changes that clash: one 200, one 400 against the record the other left, never 500', async () => {
  const t = await startTestGateway({ label: 'settings_concurrent' });
  try {
    const { instance } = await t.createInstance('clash', { link: false });
    const path = `/admin/v1/instances/${instance.id}`;
    for (let round = 0; round < 10; round++) {
      assert.equal((await t.admin('PATCH', path, { settings: { minDelayMs: 1000, maxDelayMs: 2000 } })).status, 200);
      const answers = await Promise.all([
        t.admin('PATCH', path, { settings: { minDelayMs: 1500 } }),
        t.admin('PATCH', path, { settings: { maxDelayMs: 1200 } }),
      ]);
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, 400], answers.map((a) => a.text).join(' | '));
      const refused = answers.find((a) => a.status === 400);
      assert.equal(refused?.body.code, 'VALIDATION_FAILED');
      const { rows } = await t.db.pool.query<{ min_delay_ms: number; max_delay_ms: number }>('SELECT min_delay_ms, max_delay_ms FROM instances WHERE id = $1', [instance.id]);
      assert.ok((rows[0]?.min_delay_ms ?? 0) <= (rows[0]?.max_delay_ms ?? 0), JSON.stringify(rows[0]));
    }
  } finally {
    await t.stop();
  }
});

/**
 * Named statements (src/store/pool.ts `named`): the hot statements are prepared once per connection, unless
 * the connections do not each keep a session of their own (the embedded PGlite, or DB_PREPARED_STATEMENTS=false
 * behind a transaction-mode pooler). The switch is process-wide, so this file is its own process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { named, sessionsAreShared } from '../../src/store/pool.js';
import { loadConfig } from '../../src/config.js';

test('named by default; plain statements once sessions are shared, for every later statement', () => {
  assert.deepEqual(named('claim_job', 'SELECT 1', [1]), { name: 'claim_job', text: 'SELECT 1', values: [1] });
  sessionsAreShared();
  assert.deepEqual(named('claim_job', 'SELECT 1', [1]), { text: 'SELECT 1', values: [1] });
  assert.equal('name' in named('insert_jobs', 'SELECT 2', []), false);
});

test('DB_PREPARED_STATEMENTS is on unless turned off', () => {
  assert.equal(loadConfig({}).DB_PREPARED_STATEMENTS, true);
  assert.equal(loadConfig({ DB_PREPARED_STATEMENTS: 'false' }).DB_PREPARED_STATEMENTS, false);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, ConfigError, legacyWaitMs } from '../../src/config.js';

test('defaults: embedded store, sandbox, SPEC.md limits', () => {
  const c = loadConfig({});
  assert.equal(c.PORT, 3000);
  assert.equal(c.DATABASE_URL, undefined);
  assert.equal(c.SANDBOX, 'embedded');
  assert.equal(c.MEDIA_MAX_BYTES, 16 * 1024 * 1024);
  assert.equal(c.MEDIA_BASE64_MAX_BYTES, 7 * 1024 * 1024);
  assert.equal(c.MEDIA_UPLOAD_MAX_BYTES, 64 * 1024 * 1024);
  assert.equal(c.QUEUE_MAX_PENDING, 5000);
  assert.equal(c.INTERACTION_RATE_POINTS, 60);
  assert.equal(c.LEGACY_SYNC_TIMEOUT_MS, 20_000);
  assert.equal(c.ORDERED_RESTART_HARD_MS, 120_000);
});

test('numbers and booleans are read from strings', () => {
  const c = loadConfig({ PORT: '8080', QUEUE_MAX_PENDING: '10', DEMO_INSTANCE: 'false', WEBHOOK_ALLOW_PRIVATE: 'yes' });
  assert.equal(c.PORT, 8080);
  assert.equal(c.QUEUE_MAX_PENDING, 10);
  assert.equal(c.DEMO_INSTANCE, false);
  assert.equal(c.WEBHOOK_ALLOW_PRIVATE, true);
});

test('a bad value names the variable and never echoes the value', () => {
  for (const [k, v] of [['PORT', 'eighty'], ['QUEUE_MAX_PENDING', '-3'], ['LOG_LEVEL', 'chatty'], ['DEMO_INSTANCE', 'maybe']] as const) {
    assert.throws(() => loadConfig({ [k]: v }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.variable, k);
      assert.match(err.message, new RegExp(k));
      assert.ok(!err.message.includes(v), 'value must not be echoed');
      return true;
    });
  }
});

test('the v1 wait is capped at LEGACY_CALLER_TIMEOUT_MS minus 5 s', () => {
  assert.equal(legacyWaitMs(loadConfig({})), 20_000);
  assert.equal(legacyWaitMs(loadConfig({ LEGACY_SYNC_TIMEOUT_MS: '60000' })), 25_000);
  assert.equal(legacyWaitMs(loadConfig({ LEGACY_SYNC_TIMEOUT_MS: '60000', LEGACY_CALLER_TIMEOUT_MS: '40000' })), 35_000);
});

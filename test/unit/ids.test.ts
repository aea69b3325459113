/**
 * src/ids.ts pooledRandom: each byte of the pool is used once, across refills and for a request larger than
 * the pool, in the encoding asked for; the ids built on it keep their shapes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newJobId, pooledRandom } from '../../src/ids.js';
import { newQrToken, newWebKey } from '../../src/sandbox/ids.js';

test('pooled random text: the length of its bytes, never the same bytes twice across several pool refills', () => {
  const seen = new Set<string>();
  // 12 bytes at a time, 3,000 times: 36,000 bytes, nine refills of the 4 KiB pool
  for (let i = 0; i < 3_000; i++) {
    const hex = pooledRandom(12, 'hex');
    assert.match(hex, /^[0-9a-f]{24}$/);
    assert.ok(!seen.has(hex), `a repeat after ${i}`);
    seen.add(hex);
  }
  assert.match(pooledRandom(18, 'base64url'), /^[A-Za-z0-9_-]{24}$/);
  // more than a pool at once
  assert.match(pooledRandom(5_000, 'hex'), /^[0-9a-f]{10000}$/);
  // the bytes are not constant: a million bits from the pool are about half ones
  const bits = [...Buffer.from(pooledRandom(125_000, 'hex'), 'hex')].reduce((n, b) => n + b.toString(2).replace(/0/g, '').length, 0);
  assert.ok(Math.abs(bits - 500_000) < 5_000, `${bits} ones in a million bits`);
});

test('the ids drawn from it keep their shapes', () => {
  assert.match(newJobId(), /^wq_[0-9a-f]{24}$/);
  assert.match(newQrToken(), /^2@[A-Za-z0-9_-]{24}$/);
  assert.match(newWebKey(), /^3EB0[0-9A-F]{16}$/);
  assert.notEqual(newQrToken(), newQrToken());
});

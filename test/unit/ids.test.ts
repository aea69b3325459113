/**
 * src/ids.ts pooledRandom: each byte of the pool is used once, across refills and for a request larger than
 * the pool, in the encoding asked for; the ids built on it keep their shapes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newEventId, newJobId, pooledRandom, timeOrderedHex } from '../../src/ids.js';
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

test('job and event ids sort by the millisecond they were made, and differ within one', () => {
  assert.match(newEventId(), /^ev_[0-9a-f]{24}$/);
  // the clock's part: 12 hex digits of the milliseconds, so that text order is time order
  assert.equal(timeOrderedHex(0).slice(0, 12), '000000000000');
  assert.equal(timeOrderedHex(Date.UTC(2026, 10, 29)).slice(0, 12), Date.UTC(2026, 10, 29).toString(16).padStart(12, '0'));
  const times = [0, 1, 255, 256, 1_700_000_000_000, 1_700_000_000_001, Date.UTC(2100, 0, 1), 2 ** 48 - 1];
  const ids = times.map((t) => timeOrderedHex(t));
  assert.deepEqual([...ids].sort(), ids, 'text order follows the clock');
  // ids of one millisecond: all different, in any order among themselves
  const same = new Set(Array.from({ length: 10_000 }, () => timeOrderedHex(1_700_000_000_000)));
  assert.equal(same.size, 10_000);
  // what the gateway makes now sorts after what it made a moment ago, and before what it makes next
  const before = timeOrderedHex(Date.now() - 1);
  const id = newJobId().slice(3);
  assert.ok(before < id && id < timeOrderedHex(Date.now() + 1), `${before} < ${id}`);
});

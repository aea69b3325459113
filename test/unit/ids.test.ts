/**
 * src/ids.ts pooledRandom: each byte of the pool is used once, across refills and for a request larger than
 * the pool, in the encoding asked for; the ids built on it keep their shapes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newEventId, newJobId, pooledRandom, timeOrderedPart } from '../../src/ids.js';
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
  assert.match(newJobId(), /^wq_t[0-9a-f]{23}$/);
  assert.match(newQrToken(), /^2@[A-Za-z0-9_-]{24}$/);
  assert.match(newWebKey(), /^3EB0[0-9A-F]{16}$/);
  assert.notEqual(newQrToken(), newQrToken());
});

test('job and event ids sort by the millisecond they were made, after every id made before, and differ within one', () => {
  assert.match(newEventId(), /^ev_t[0-9a-f]{23}$/);
  // the clock's part: 11 hex digits of the milliseconds after a `t`, so that text order is time order
  assert.equal(timeOrderedPart(0).slice(0, 12), 't00000000000');
  assert.equal(timeOrderedPart(Date.UTC(2026, 10, 29)).slice(0, 12), `t${Date.UTC(2026, 10, 29).toString(16).padStart(11, '0')}`);
  const times = [0, 1, 255, 256, 1_700_000_000_000, 1_700_000_000_001, Date.UTC(2100, 0, 1), Date.UTC(2527, 0, 1)];
  const ids = times.map((t) => timeOrderedPart(t));
  assert.deepEqual([...ids].sort(), ids, 'text order follows the clock');
  // after every id of the form before (24 random hex digits), in code-point order (PostgreSQL's collations: test/integration/job-ids-order.test.ts)
  assert.ok(timeOrderedPart(0) > 'ffffffffffffffffffffffff');
  // ids of one millisecond: all different, in any order among themselves
  const same = new Set(Array.from({ length: 10_000 }, () => timeOrderedPart(1_700_000_000_000)));
  assert.equal(same.size, 10_000);
  // what the gateway makes now sorts after what it made a moment ago, and before what it makes next
  const before = timeOrderedPart(Date.now() - 1);
  const id = newJobId().slice(3);
  assert.ok(before < id && id < timeOrderedPart(Date.now() + 1), `${before} < ${id}`);
});

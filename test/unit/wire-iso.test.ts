/**
 * `iso` (src/wire/job.ts) writes instants itself for speed (a send-bulk answer holds thousands): it must be
 * exactly `new Date(ms).toISOString()`, including across day, month, year and leap-day boundaries, in any
 * order of days (its one-day cache), and outside its own range (negative, year 10000 on, fractions) where it
 * leaves the writing to Date. null stays null; a NaN throws as Date does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { iso } from '../../src/wire/job.js';
import { seededRandomDelay } from '../../src/queue/plan.js';

const DAY = 86_400_000;
const YEAR_10000 = 253_402_300_800_000;

test('iso equals Date.prototype.toISOString', () => {
  const rnd = seededRandomDelay(7);
  const r = (min: number, max: number) => rnd(min, max, '');
  const samples: number[] = [0, -0, 1, 999, 1000, DAY - 1, DAY, YEAR_10000 - 1, YEAR_10000, YEAR_10000 + 1, -1, -DAY, -8.64e15, 8.64e15, 1.5, Date.now() + 0.25];
  for (const d of ['2024-02-28', '2024-02-29', '2024-03-01', '2025-12-31', '2026-01-01', '2100-02-28', '2100-03-01', '2000-02-29']) {
    const t = Date.parse(`${d}T00:00:00Z`);
    samples.push(t - 1, t, t + 1, t + DAY - 1);
  }
  for (let i = 0; i < 100_000; i++) {
    // jumps between near instants (the cached day) and anywhere in 0..year 10000
    samples.push(i % 4 === 0 ? r(0, 2_147_483_647) * 117_000 + r(0, 116_999) : Date.UTC(2026, 0, 1) + r(0, 2_147_483_647) * 3);
  }
  for (const ms of samples) assert.equal(iso(ms), new Date(ms).toISOString(), `ms ${ms}`);
  assert.equal(iso(null), null);
  assert.throws(() => iso(Number.NaN), RangeError);
});

/**
 * The timestamps a send's notBefore takes (src/http/routes/send-schemas.ts isIsoTimestamp): ISO 8601 with a
 * time zone, naming a day its month has. Date.parse alone rolls 2026-02-30 over to March 2nd.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isIsoTimestamp } from '../../src/http/routes/send-schemas.js';

test('every day of every month of a leap year and of a common one, and the day after the last', () => {
  for (const year of [2028, 2026, 2100, 2000]) {
    for (let month = 1; month <= 12; month++) {
      const last = new Date(Date.UTC(2000, 0, 1));
      last.setUTCFullYear(year, month, 0); // day 0 of the next month: the last of this one
      const days = last.getUTCDate();
      const mm = String(month).padStart(2, '0');
      for (let day = 1; day <= days; day++) assert.ok(isIsoTimestamp(`${year}-${mm}-${String(day).padStart(2, '0')}T12:00:00Z`), `${year}-${mm}-${day}`);
      assert.equal(isIsoTimestamp(`${year}-${mm}-${String(days + 1).padStart(2, '0')}T12:00:00Z`), false, `${year}-${mm}-${days + 1}`);
    }
  }
});

test('the forms that were taken before are still taken; the malformed ones are not', () => {
  for (const v of ['2030-01-31T09:00:00Z', '2030-01-31T09:00Z', '2030-01-31T09:00:00.123456789+05:30', '2030-01-31T09:00:00-0800']) assert.ok(isIsoTimestamp(v), v);
  for (const v of ['2030-01-31', '2030-01-31T09:00:00', '2030-13-01T00:00:00Z', '2030-00-10T00:00:00Z', '2030-01-00T00:00:00Z', '2030-01-01T25:00:00Z', 'tomorrow']) assert.equal(isIsoTimestamp(v), false, v);
});

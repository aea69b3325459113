import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DateTime } from 'luxon';
import { QuietCursor, QuietSchedule, isQuiet, quietEnd } from '../../src/queue/quiet-hours.js';
import type { QuietHours } from '../../src/queue/settings.js';

const Z = (iso: string) => Date.parse(iso);
/** A local wall-clock time in Berlin as an instant (luxon's own resolution; only used for unambiguous times). */
const berlin = (local: string) => DateTime.fromISO(local, { zone: 'Europe/Berlin' }).toMillis();
const night: QuietHours = { start: '22:00', end: '07:00', tz: 'Europe/Berlin' };
const lunch: QuietHours = { start: '12:00', end: '13:00', tz: 'Europe/Berlin' };

describe('quiet hours on ordinary days', () => {
  test('22:00–07:00 crossing midnight: the window is [22:00, 07:00)', () => {
    assert.equal(isQuiet(berlin('2026-01-05T21:59:59.999'), night), false);
    assert.equal(isQuiet(berlin('2026-01-05T22:00'), night), true);
    assert.equal(isQuiet(berlin('2026-01-06T03:00'), night), true);
    assert.equal(isQuiet(berlin('2026-01-06T06:59:59.999'), night), true);
    assert.equal(isQuiet(berlin('2026-01-06T07:00'), night), false);
    assert.equal(isQuiet(berlin('2026-01-06T12:00'), night), false);
  });

  test('quietEnd before and after midnight is the next 07:00; outside quiet hours it is the instant itself', () => {
    assert.equal(quietEnd(berlin('2026-01-05T23:10'), night), berlin('2026-01-06T07:00'));
    assert.equal(quietEnd(berlin('2026-01-06T01:10'), night), berlin('2026-01-06T07:00'));
    assert.equal(quietEnd(berlin('2026-01-06T07:00'), night), berlin('2026-01-06T07:00'));
    assert.equal(quietEnd(berlin('2026-01-06T15:00'), night), berlin('2026-01-06T15:00'));
  });

  test('12:00–13:00 within one day', () => {
    assert.equal(isQuiet(berlin('2026-07-01T11:59:59.999'), lunch), false);
    assert.equal(isQuiet(berlin('2026-07-01T12:00'), lunch), true);
    assert.equal(quietEnd(berlin('2026-07-01T12:30'), lunch), berlin('2026-07-01T13:00'));
    assert.equal(isQuiet(berlin('2026-07-01T13:00'), lunch), false);
    assert.equal(isQuiet(berlin('2026-07-01T23:30'), lunch), false);
  });

  test('the time zone matters: 22:00 Berlin is 21:00Z in winter, 20:00Z in summer', () => {
    assert.equal(isQuiet(Z('2026-01-05T21:00:00Z'), night), true);
    assert.equal(isQuiet(Z('2026-01-05T20:59:59Z'), night), false);
    assert.equal(isQuiet(Z('2026-07-05T20:00:00Z'), night), true);
    const ny: QuietHours = { ...night, tz: 'America/New_York' };
    assert.equal(isQuiet(Z('2026-01-06T02:00:00Z'), ny), false); // 21:00 in New York
    assert.equal(isQuiet(Z('2026-01-06T03:00:00Z'), ny), true); // 22:00
  });

  test('null means always allowed', () => {
    assert.equal(isQuiet(Z('2026-01-06T02:00:00Z'), null), false);
    assert.equal(quietEnd(123, null), 123);
  });
});

describe('quiet hours across the 2026 DST changes in Europe/Berlin', () => {
  test('29 March 2026 (spring forward): 22:00 CET to 07:00 CEST, 8 real hours', () => {
    const w = new QuietSchedule(night).windowAfter(Z('2026-03-28T12:00:00Z'));
    assert.deepEqual(w, { start: Z('2026-03-28T21:00:00Z'), end: Z('2026-03-29T05:00:00Z') });
    assert.equal(quietEnd(Z('2026-03-29T00:59:59Z'), night), Z('2026-03-29T05:00:00Z')); // 01:59:59 CET
    assert.equal(quietEnd(Z('2026-03-29T01:00:00Z'), night), Z('2026-03-29T05:00:00Z')); // 03:00 CEST
    assert.equal(isQuiet(Z('2026-03-29T05:00:00Z'), night), false);
    assert.equal(isQuiet(Z('2026-03-29T04:59:59.999Z'), night), true);
  });

  test('25 October 2026 (fall back): 22:00 CEST to 07:00 CET, 10 real hours, through both 02:xx', () => {
    const w = new QuietSchedule(night).windowAfter(Z('2026-10-24T12:00:00Z'));
    assert.deepEqual(w, { start: Z('2026-10-24T20:00:00Z'), end: Z('2026-10-25T06:00:00Z') });
    assert.equal(isQuiet(Z('2026-10-25T00:30:00Z'), night), true); // 02:30 CEST
    assert.equal(isQuiet(Z('2026-10-25T01:30:00Z'), night), true); // 02:30 CET
    assert.equal(quietEnd(Z('2026-10-25T01:30:00Z'), night), Z('2026-10-25T06:00:00Z'));
  });

  test('an end that does not exist (02:30 on 29 March) ends the window when the clocks jump, not at 03:30', () => {
    const qh: QuietHours = { start: '22:00', end: '02:30', tz: 'Europe/Berlin' };
    assert.equal(quietEnd(Z('2026-03-28T23:00:00Z'), qh), Z('2026-03-29T01:00:00Z'));
    assert.equal(isQuiet(Z('2026-03-29T00:59:59.999Z'), qh), true);
    assert.equal(isQuiet(Z('2026-03-29T01:00:00Z'), qh), false);
  });

  test('a start that does not exist opens the window at the jump; a window wholly inside the gap is skipped that day', () => {
    const late: QuietHours = { start: '02:30', end: '05:00', tz: 'Europe/Berlin' };
    assert.deepEqual(new QuietSchedule(late).windowAfter(Z('2026-03-28T23:00:00Z')), {
      start: Z('2026-03-29T01:00:00Z'),
      end: Z('2026-03-29T03:00:00Z'),
    });
    const inGap: QuietHours = { start: '02:10', end: '02:40', tz: 'Europe/Berlin' };
    assert.deepEqual(new QuietSchedule(inGap).windowAfter(Z('2026-03-28T23:00:00Z')), {
      start: Z('2026-03-30T00:10:00Z'),
      end: Z('2026-03-30T00:40:00Z'),
    });
  });

  test('an end the clocks read twice (02:30 on 25 October): quiet both times they read 02:00-02:30, open between', () => {
    const qh: QuietHours = { start: '22:00', end: '02:30', tz: 'Europe/Berlin' };
    assert.equal(quietEnd(Z('2026-10-24T23:00:00Z'), qh), Z('2026-10-25T00:30:00Z')); // 02:30 CEST
    assert.equal(isQuiet(Z('2026-10-25T00:15:00Z'), qh), true); // 02:15 CEST
    assert.equal(isQuiet(Z('2026-10-25T00:45:00Z'), qh), false); // 02:45 CEST: outside 22:00-02:30
    assert.equal(isQuiet(Z('2026-10-25T01:00:00Z'), qh), true); // 02:00 CET, the second time round
    assert.equal(isQuiet(Z('2026-10-25T01:15:00Z'), qh), true); // 02:15 CET
    assert.equal(quietEnd(Z('2026-10-25T01:00:00Z'), qh), Z('2026-10-25T01:30:00Z'));
    assert.equal(isQuiet(Z('2026-10-25T01:30:00Z'), qh), false); // 02:30 CET: the window's end
  });

  test('found from the outside: 01:00-02:30 on 25 October sends nothing at 02:00, 02:10 or 02:20 CET', () => {
    const qh: QuietHours = { start: '01:00', end: '02:30', tz: 'Europe/Berlin' };
    for (const t of ['2026-10-25T01:00:00Z', '2026-10-25T01:10:00Z', '2026-10-25T01:20:00Z']) assert.equal(isQuiet(Z(t), qh), true, t);
    assert.equal(quietEnd(Z('2026-10-25T00:25:00Z'), qh), Z('2026-10-25T00:30:00Z'));
    const schedule = new QuietSchedule(qh);
    assert.deepEqual(schedule.windowAfter(Z('2026-10-24T22:00:00Z')), { start: Z('2026-10-24T23:00:00Z'), end: Z('2026-10-25T00:30:00Z') });
    assert.deepEqual(schedule.windowAfter(Z('2026-10-25T00:30:00Z')), { start: Z('2026-10-25T01:00:00Z'), end: Z('2026-10-25T01:30:00Z') });
    // a start the clocks read twice opens both times
    const late: QuietHours = { start: '02:15', end: '02:45', tz: 'Europe/Berlin' };
    const lateSchedule = new QuietSchedule(late);
    assert.deepEqual(lateSchedule.windowAfter(Z('2026-10-24T22:00:00Z')), { start: Z('2026-10-25T00:15:00Z'), end: Z('2026-10-25T00:45:00Z') });
    assert.deepEqual(lateSchedule.windowAfter(Z('2026-10-25T00:45:00Z')), { start: Z('2026-10-25T01:15:00Z'), end: Z('2026-10-25T01:45:00Z') });
  });

  test('a window of nearly a whole day keeps its gap on the fall-back day: 02:59-02:00 leaves 02:00-02:58 open both times', () => {
    // the earlier model closed the window of the 24th at the second 02:00 (01:00Z) and opened the 25th's at the first
    // 02:59 (00:59Z): one window from the 24th to the 26th, and nothing sent on the 25th
    const qh: QuietHours = { start: '02:59', end: '02:00', tz: 'Europe/Berlin' };
    const schedule = new QuietSchedule(qh);
    assert.deepEqual(schedule.windowAfter(Z('2026-10-24T12:00:00Z')), { start: Z('2026-10-24T00:59:00Z'), end: Z('2026-10-25T00:00:00Z') });
    assert.equal(isQuiet(Z('2026-10-25T00:30:00Z'), qh), false); // 02:30 CEST
    assert.deepEqual(schedule.windowAfter(Z('2026-10-25T00:30:00Z')), { start: Z('2026-10-25T00:59:00Z'), end: Z('2026-10-25T01:00:00Z') });
    assert.equal(isQuiet(Z('2026-10-25T01:30:00Z'), qh), false); // 02:30 CET
    assert.deepEqual(schedule.windowAfter(Z('2026-10-25T01:30:00Z')), { start: Z('2026-10-25T01:59:00Z'), end: Z('2026-10-26T01:00:00Z') });
    // and on the spring-forward day, whose 02:00-02:58 the clocks skip: one window from the 28th's 02:59 CET to the
    // 30th's 02:00 CEST (the 29th has no reading outside the span)
    const spring = schedule.windowAfter(Z('2026-03-29T12:00:00Z'));
    assert.deepEqual(spring, { start: Z('2026-03-28T01:59:00Z'), end: Z('2026-03-30T00:00:00Z') });
  });

  test('a window that closes in the repeated hour is followed by the next day\'s, with the gap between them open', () => {
    const qh: QuietHours = { start: '02:40', end: '02:30', tz: 'Europe/Berlin' };
    const end = quietEnd(Z('2026-10-24T12:00:00Z'), qh);
    assert.equal(end, Z('2026-10-25T00:30:00Z')); // 02:30 CEST
    assert.equal(isQuiet(end, qh), false, new Date(end).toISOString());
    assert.equal(isQuiet(end - 1, qh), true);
    // 02:40 CEST to the fall-back (quiet), 02:00-02:29 CET (quiet: before 02:30), 02:30-02:39 CET open
    assert.equal(quietEnd(Z('2026-10-25T00:40:00Z'), qh), Z('2026-10-25T01:30:00Z'));
    assert.equal(isQuiet(Z('2026-10-25T01:35:00Z'), qh), false);
  });
});

describe('invariants around every DST change of 2026 (Berlin: 29 Mar, 25 Oct; Lord Howe: 5 Apr, 4 Oct)', () => {
  const ranges: Array<[string, string]> = [
    ['2026-01-10T00:00:00Z', '2026-01-20T00:00:00Z'],
    ['2026-03-20T00:00:00Z', '2026-04-12T00:00:00Z'],
    ['2026-09-28T00:00:00Z', '2026-11-02T00:00:00Z'],
  ];
  const settings: QuietHours[] = [
    night,
    lunch,
    { start: '02:30', end: '03:30', tz: 'Europe/Berlin' },
    { start: '01:30', end: '02:30', tz: 'Europe/Berlin' },
    { start: '02:40', end: '02:30', tz: 'Europe/Berlin' }, // its end in the repeated hour reaches the next window
    { start: '23:45', end: '02:15', tz: 'Australia/Lord_Howe' }, // a 30-minute DST shift
  ];
  for (const qh of settings) {
    test(`${qh.start}–${qh.end} ${qh.tz}: quietEnd leaves quiet hours at the first allowed instant; the cursor agrees`, () => {
      const schedule = new QuietSchedule(qh);
      const cursor = new QuietCursor(qh);
      const step = 11 * 60_000 + 13_001; // co-prime with hours and days so every phase is visited
      for (const [from, to] of ranges) for (let t = Z(from); t < Z(to); t += step) {
        const w = schedule.windowAfter(t);
        const quiet = w.start <= t;
        assert.equal(cursor.isQuiet(t), quiet, new Date(t).toISOString());
        if (!quiet) continue;
        const end = cursor.end(t);
        assert.equal(end, w.end);
        assert.ok(end > t);
        const after = schedule.windowAfter(end);
        assert.ok(after.start > end, `window re-opens at its own end ${new Date(end).toISOString()}`);
        // a window is at most a day and the hour a DST change adds; 02:40-02:30 runs two into one on 29 March,
        // whose clocks skip 02:30-02:39, its only open readings
        assert.ok(end - w.start < (qh.start === '02:40' ? 2 : 1) * 24 * 3_600_000 + 3_600_000);
        assert.equal(schedule.windowAfter(end - 1).end, end, 'quiet right up to the end');
      }
    });
  }

  test('the cursor also answers correctly when asked about an earlier instant', () => {
    const cursor = new QuietCursor(night);
    assert.equal(cursor.isQuiet(berlin('2026-02-10T23:00')), true);
    assert.equal(cursor.isQuiet(berlin('2026-02-10T21:00')), false);
    assert.equal(cursor.end(berlin('2026-02-10T23:00')), berlin('2026-02-11T07:00'));
  });
});

describe('against the clocks themselves: random windows in zones with every kind of change (property)', () => {
  // the local reading of an instant by Intl alone (not luxon, not the schedule's arithmetic)
  const readers = new Map<string, Intl.DateTimeFormat>();
  const minuteOfDay = (t: number, tz: string): number => {
    let f = readers.get(tz);
    if (!f) readers.set(tz, (f = new Intl.DateTimeFormat('en-GB', { timeZone: tz, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })));
    const parts = f.formatToParts(t);
    const part = (type: string) => Number(parts.find((p) => p.type === type)?.value);
    return part('hour') * 60 + part('minute');
  };
  const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
  const inSpan = (m: number, qh: QuietHours) => {
    const [open, close] = [qh.start, qh.end].map((x) => Number(x.slice(0, 2)) * 60 + Number(x.slice(3)));
    return (open as number) < (close as number) ? m >= (open as number) && m < (close as number) : m >= (open as number) || m < (close as number);
  };
  // spring and autumn changes: at 02:00 (Berlin), at 00:00 (Santiago), by 30 min (Lord Howe), at 02:45 (Chatham)
  const zones: Array<[string, string[]]> = [
    ['Europe/Berlin', ['2026-03-28T12:00:00Z', '2026-10-24T12:00:00Z']],
    ['America/New_York', ['2026-03-07T12:00:00Z', '2026-10-31T12:00:00Z']],
    ['America/Santiago', ['2026-04-03T12:00:00Z', '2026-09-05T12:00:00Z']],
    ['Australia/Lord_Howe', ['2026-04-04T00:00:00Z', '2026-10-03T00:00:00Z']],
    ['Pacific/Chatham', ['2026-04-04T00:00:00Z', '2026-09-26T00:00:00Z']],
  ];
  let seed = 20261201;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (const [tz, days] of zones) {
    test(`${tz}: quiet exactly when the clocks read a time in the window; quietEnd is the next reading outside it`, () => {
      for (let k = 0; k < 12; k++) {
        // windows near the change's hour are the interesting ones: half of them start or end there
        const near = () => (random(2) === 0 ? random(1440) : (random(4) * 60 + random(60)) % 1440);
        const open = near();
        let close = near();
        if (close === open) close = (open + 1) % 1440;
        const qh: QuietHours = { start: hhmm(open), end: hhmm(close), tz };
        for (const day of days) {
          let before = false;
          for (let t = Z(day); t < Z(day) + 2 * 86_400_000; t += 7 * 60_000 + 1_000) {
            const quiet = inSpan(minuteOfDay(t, tz), qh);
            assert.equal(isQuiet(t, qh), quiet, `${qh.start}-${qh.end} ${tz} at ${new Date(t).toISOString()}`);
            // the end, from the first reading of each quiet run
            const first = quiet && !before;
            before = quiet;
            if (!first) continue;
            const end = quietEnd(t, qh);
            assert.ok(end > t);
            assert.equal(inSpan(minuteOfDay(end, tz), qh), false, `${qh.start}-${qh.end} ${tz}: ends at ${new Date(end).toISOString()}, a reading inside`);
            assert.equal(inSpan(minuteOfDay(end - 1, tz), qh), true, `${qh.start}-${qh.end} ${tz}: quiet up to ${new Date(end).toISOString()}`);
            for (let u = t; u < end; u += 13 * 60_000) assert.equal(inSpan(minuteOfDay(u, tz), qh), true, `${qh.start}-${qh.end} ${tz}: open at ${new Date(u).toISOString()} before the end`);
          }
        }
      }
    });
  }
});

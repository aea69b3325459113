import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { planAll, recheck, seededRandomDelay, type PlanJob, type PlanSettings } from '../../src/queue/plan.js';
import { EXISTING_INSTANCE_DEFAULTS, NEW_INSTANCE_DEFAULTS } from '../../src/queue/settings.js';
import { DAY_MS, HOUR_MS } from '../../src/queue/windows.js';

const MIN = 60_000;
const now = Date.parse('2026-01-05T10:00:00Z'); // 11:00 in Berlin
const open: PlanSettings = { ...EXISTING_INSTANCE_DEFAULTS, minDelayMs: 4000, maxDelayMs: 12000 };

describe('dispatcher re-check at scheduledAt', () => {
  test('passes when every constraint holds', () => {
    assert.deepEqual(recheck(now, [now - 10 * MIN], { ...open, maxPerHour: 2, maxPer24h: 2 }, now - 10 * MIN), { ok: true });
    assert.deepEqual(recheck(now, [], open, null), { ok: true });
  });

  test('hourly budget used up (e.g. by a v1 send): fails, next slot is the oldest + 1 h + 1 ms', () => {
    const history = [now - 40 * MIN, now - 20 * MIN];
    assert.deepEqual(recheck(now, history, { ...open, maxPerHour: 2 }, now - 20 * MIN), {
      ok: false,
      failed: ['hourly'],
      nextAt: now - 40 * MIN + HOUR_MS + 1,
      exhausted: false,
    });
  });

  test('daily budget used up', () => {
    const history = [now - 23 * HOUR_MS];
    assert.deepEqual(recheck(now, history, { ...open, maxPer24h: 1 }, now - 23 * HOUR_MS), {
      ok: false,
      failed: ['daily'],
      nextAt: now + HOUR_MS + 1,
      exhausted: false,
    });
  });

  test('minimum spacing since the last actual dispatch (persisted, so a restart does not reset it)', () => {
    assert.deepEqual(recheck(now, [now - 1000], open, now - 1000), {
      ok: false,
      failed: ['spacing'],
      nextAt: now - 1000 + 4000,
      exhausted: false,
    });
  });

  test('inside quiet hours: next is their end; several failures are all reported', () => {
    const t = Date.parse('2026-01-05T22:30:00Z'); // 23:30 CET
    const r = recheck(t, [t - 1000], { ...open, quietHours: { start: '22:00', end: '07:00', tz: 'Europe/Berlin' } }, t - 1000);
    assert.deepEqual(r, { ok: false, failed: ['quiet', 'spacing'], nextAt: Date.parse('2026-01-06T06:00:00Z'), exhausted: false });
  });

  test('a limit of 0: never', () => {
    assert.deepEqual(recheck(now, [], { ...open, maxPerHour: 0 }, null), { ok: false, failed: ['hourly'], nextAt: null, exhausted: false });
  });

  test('every slot of a plan passes the re-check when dispatched on time', () => {
    const rnd = seededRandomDelay(21);
    const history = Array.from({ length: 450 }, (_, i) => now - DAY_MS + 1000 + i * 150_000);
    const jobs: PlanJob[] = Array.from({ length: 600 }, (_, i) => ({
      id: `j${i}`,
      priority: rnd(1, 9, ''),
      seq: i,
      notBefore: i % 40 === 0 ? now + rnd(0, DAY_MS, '') : null,
      expiresAt: now + 10 * DAY_MS,
    }));
    const plan = planAll({ jobs, history, settings: NEW_INSTANCE_DEFAULTS, lastDispatchAt: history[449]!, now, random: seededRandomDelay(2) });
    assert.equal(plan.placements.length, 600);
    const sent = [...history];
    let last: number | null = history[449]!;
    for (const p of plan.placements) {
      assert.deepEqual(recheck(p.scheduledAt, sent, NEW_INSTANCE_DEFAULTS, last), { ok: true }, `${p.jobId} at ${new Date(p.scheduledAt).toISOString()}`);
      sent.push(p.scheduledAt);
      last = p.scheduledAt;
    }
  });
});

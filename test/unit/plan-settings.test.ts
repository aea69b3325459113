import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { StructError, create, validate } from 'superstruct';
import {
  EXISTING_INSTANCE_DEFAULTS,
  NEW_INSTANCE_DEFAULTS,
  SettingsPatchStruct,
  affectsPlan,
  applySettingsPatch,
} from '../../src/queue/settings.js';

/** The field a validation failure names (what becomes VALIDATION_FAILED data.field), or null when valid. */
const failingField = (patch: unknown) => {
  const [err] = validate(patch, SettingsPatchStruct);
  return err ? err.path.join('.') : null;
};

describe('instance settings defaults (SPEC.md "Instance settings")', () => {
  test('existing instances: not throttled, queue off', () => {
    assert.deepEqual(EXISTING_INSTANCE_DEFAULTS, {
      maxPerHour: null,
      maxPer24h: null,
      minDelayMs: 1500,
      maxDelayMs: 3000,
      quietHours: null,
      defaultTtlSeconds: 86400,
      legacyQueueMode: 'sync',
      enabled: false,
      storeIncomingMedia: false,
    });
  });

  test('new instances: 40/h, 500/24 h, 4–12 s, quiet 22:00–07:00 Europe/Berlin, queue on', () => {
    assert.deepEqual(NEW_INSTANCE_DEFAULTS, {
      maxPerHour: 40,
      maxPer24h: 500,
      minDelayMs: 4000,
      maxDelayMs: 12000,
      quietHours: { start: '22:00', end: '07:00', tz: 'Europe/Berlin' },
      defaultTtlSeconds: 86400,
      legacyQueueMode: 'sync',
      enabled: true,
      storeIncomingMedia: false,
    });
  });

  test('the defaults cannot be changed by accident', () => {
    assert.ok(Object.isFrozen(NEW_INSTANCE_DEFAULTS) && Object.isFrozen(NEW_INSTANCE_DEFAULTS.quietHours));
    assert.ok(Object.isFrozen(EXISTING_INSTANCE_DEFAULTS));
  });
});

describe('settings PATCH validation', () => {
  test('valid partial patches', () => {
    for (const p of [
      {},
      { maxPerHour: 10 },
      { maxPerHour: null, maxPer24h: null },
      { maxPer24h: 0 },
      { minDelayMs: 0, maxDelayMs: 0 },
      { quietHours: null },
      { quietHours: { start: '12:00', end: '13:30', tz: 'America/New_York' } },
      { defaultTtlSeconds: 60 },
      { defaultTtlSeconds: 2592000 },
      { legacyQueueMode: 'async', enabled: false, storeIncomingMedia: true },
    ]) {
      assert.equal(failingField(p), null, JSON.stringify(p));
    }
  });

  test('a time zone is stored in its own case; an alias stays as given', () => {
    const tzOf = (tz: string) => create({ quietHours: { start: '22:00', end: '07:00', tz } }, SettingsPatchStruct).quietHours?.tz;
    assert.equal(tzOf('europe/berlin'), 'Europe/Berlin');
    assert.equal(tzOf('AMERICA/NEW_YORK'), 'America/New_York');
    assert.equal(tzOf('Europe/Berlin'), 'Europe/Berlin');
    assert.equal(tzOf('Etc/UTC'), 'Etc/UTC');
    assert.equal(tzOf('EST5EDT'), 'EST5EDT');
    assert.throws(() => tzOf('europe/atlantis'), StructError);
  });

  test('each invalid field is named', () => {
    const cases: Array<[unknown, string]> = [
      [{ maxPerHour: -1 }, 'maxPerHour'],
      [{ maxPerHour: 1.5 }, 'maxPerHour'],
      [{ maxPer24h: '500' }, 'maxPer24h'],
      [{ minDelayMs: -1 }, 'minDelayMs'],
      [{ minDelayMs: 5000, maxDelayMs: 4000 }, 'maxDelayMs'],
      [{ quietHours: { start: '24:00', end: '07:00', tz: 'Europe/Berlin' } }, 'quietHours.start'],
      [{ quietHours: { start: '22:00', end: '7:00', tz: 'Europe/Berlin' } }, 'quietHours.end'],
      [{ quietHours: { start: '22:00', end: '22:00', tz: 'Europe/Berlin' } }, 'quietHours.end'],
      [{ quietHours: { start: '22:00', end: '07:00', tz: 'Europe/Atlantis' } }, 'quietHours.tz'],
      [{ quietHours: { start: '22:00', end: '07:00' } }, 'quietHours.tz'],
      [{ defaultTtlSeconds: 59 }, 'defaultTtlSeconds'],
      [{ defaultTtlSeconds: 2592001 }, 'defaultTtlSeconds'],
      [{ legacyQueueMode: 'fast' }, 'legacyQueueMode'],
      [{ enabled: 'yes' }, 'enabled'],
      [{ maxPerMinute: 3 }, 'maxPerMinute'],
    ];
    for (const [patch, field] of cases) assert.equal(failingField(patch), field, JSON.stringify(patch));
  });

  test('min <= max is checked after merging, so it holds across separate patches', () => {
    assert.deepEqual(applySettingsPatch(NEW_INSTANCE_DEFAULTS, { minDelayMs: 12000 }), { ...NEW_INSTANCE_DEFAULTS, minDelayMs: 12000 });
    assert.throws(
      () => applySettingsPatch(NEW_INSTANCE_DEFAULTS, { minDelayMs: 12001 }),
      (e: unknown) => e instanceof StructError && e.path.join('.') === 'maxDelayMs',
    );
  });

  test('a patch changes only what it names', () => {
    const next = applySettingsPatch(EXISTING_INSTANCE_DEFAULTS, { maxPerHour: 30, enabled: true });
    assert.deepEqual(next, { ...EXISTING_INSTANCE_DEFAULTS, maxPerHour: 30, enabled: true });
  });
});

describe('affectsPlan: which changes re-plan (event queue.replanned)', () => {
  const s = NEW_INSTANCE_DEFAULTS;
  test('limits, delays, quiet hours and enabling re-plan', () => {
    assert.ok(affectsPlan(s, { ...s, maxPerHour: 41 }));
    assert.ok(affectsPlan(s, { ...s, maxPer24h: null }));
    assert.ok(affectsPlan(s, { ...s, minDelayMs: 5000 }));
    assert.ok(affectsPlan(s, { ...s, quietHours: null }));
    assert.ok(affectsPlan(s, { ...s, quietHours: { start: '22:00', end: '07:00', tz: 'Europe/Vienna' } }));
    assert.ok(affectsPlan(s, { ...s, enabled: false }));
  });

  test('TTL default, legacy mode, media storage and an equal copy of quiet hours do not', () => {
    assert.ok(!affectsPlan(s, { ...s, defaultTtlSeconds: 3600 }));
    assert.ok(!affectsPlan(s, { ...s, legacyQueueMode: 'async' }));
    assert.ok(!affectsPlan(s, { ...s, storeIncomingMedia: true }));
    assert.ok(!affectsPlan(s, { ...s, quietHours: { start: '22:00', end: '07:00', tz: 'Europe/Berlin' } }));
  });
});

/**
 * Operator queue settings of one instance (SPEC.md "Instance settings"): their type, the two default sets, and
 * the superstruct schemas that validate an admin PATCH. A patch is validated on its own (`SettingsPatch`) and
 * again after merging into the current settings (`applySettingsPatch`), because `minDelayMs <= maxDelayMs`
 * spans two fields that may arrive in different requests.
 */
import { IANAZone } from 'luxon';
import {
  coerce,
  assert,
  boolean,
  define,
  enums,
  integer,
  max,
  min,
  nullable,
  object,
  optional,
  pattern,
  refine,
  size,
  string,
  type Infer,
  type Struct,
} from 'superstruct';

export interface QuietHours {
  /** Local wall-clock `HH:MM` (24 h) at which sending stops. */
  start: string;
  /** Local wall-clock `HH:MM` at which sending resumes; earlier than `start` means the window crosses midnight. */
  end: string;
  /** IANA time zone, for example `Europe/Berlin`. */
  tz: string;
}

export type LegacyQueueMode = 'sync' | 'async';

/** SPEC.md "Queue modes". */
export type QueueMode = 'pg' | 'memory-degraded' | 'disabled';

export interface InstanceSettings {
  /** Ceiling over a sliding 60-minute window; null = unlimited. */
  maxPerHour: number | null;
  /** Ceiling over a sliding 24-hour window; null = unlimited. */
  maxPer24h: number | null;
  minDelayMs: number;
  maxDelayMs: number;
  quietHours: QuietHours | null;
  defaultTtlSeconds: number;
  legacyQueueMode: LegacyQueueMode;
  /** Whether the persistent queue is used (column `queue_enabled`). */
  enabled: boolean;
  storeIncomingMedia: boolean;
}

/** Existing instances are not throttled: all limits null, the queue off (SPEC.md). Also the SQL column defaults. */
export const EXISTING_INSTANCE_DEFAULTS: Readonly<InstanceSettings> = Object.freeze({
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

/** What the operator API applies when it creates an instance. */
export const NEW_INSTANCE_DEFAULTS: Readonly<InstanceSettings> = Object.freeze({
  maxPerHour: 40,
  maxPer24h: 500,
  minDelayMs: 4000,
  maxDelayMs: 12000,
  quietHours: Object.freeze({ start: '22:00', end: '07:00', tz: 'Europe/Berlin' }),
  defaultTtlSeconds: 86400,
  legacyQueueMode: 'sync',
  enabled: true,
  storeIncomingMedia: false,
});

export const TTL_MIN_SECONDS = 60;
export const TTL_MAX_SECONDS = 2_592_000;
/** A pause longer than a day between two messages is a typo, not a policy; the column is a 32-bit integer. */
export const DELAY_MAX_MS = 86_400_000;
/** Far above any sane ceiling, below the 32-bit column. 0 is allowed and means "send nothing" (TTL_UNREACHABLE). */
export const LIMIT_MAX = 1_000_000;

const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;
const hhmm = refine(string(), 'pattern', (v) => HHMM.test(v) || 'must be a time of day HH:MM from 00:00 to 23:59');

/**
 * A zone name in its own case (`europe/berlin` → `Europe/Berlin`); anything else as given: an alias stays the
 * alias it is (`Etc/UTC` is not rewritten to `UTC`, nor `EST5EDT` to `America/New_York`), and a name that is no
 * zone is left for the check to refuse.
 */
function canonicalZone(name: string): string {
  try {
    const own = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
    return own.toLowerCase() === name.toLowerCase() ? own : name;
  } catch {
    return name;
  }
}

/**
 * An IANA time zone, stored and echoed as the zone's own spelling: zone names are matched without regard to
 * case, and `europe/berlin` was accepted and echoed back as written (found from the outside).
 */
const TimeZone = coerce(
  define<string>('TimeZone', (v) => (typeof v === 'string' && IANAZone.isValidZone(v) ? true : 'must be an IANA time zone such as Europe/Berlin')),
  string(),
  canonicalZone,
);

export const QuietHoursStruct: Struct<QuietHours, unknown> = refine(
  object({ start: hhmm, end: hhmm, tz: TimeZone }),
  'QuietHoursNotEmpty',
  // Equal ends are ambiguous (an empty window or a whole day); null already says "always allowed".
  (q, ctx) => q.start !== q.end || { path: [...ctx.path, 'end'], key: 'end', message: 'end must differ from start' },
);

const limit = () => nullable(size(integer(), 0, LIMIT_MAX));
const delay = () => size(integer(), 0, DELAY_MAX_MS);

const fields = {
  maxPerHour: limit(),
  maxPer24h: limit(),
  minDelayMs: delay(),
  maxDelayMs: delay(),
  quietHours: nullable(QuietHoursStruct),
  defaultTtlSeconds: size(integer(), TTL_MIN_SECONDS, TTL_MAX_SECONDS),
  legacyQueueMode: enums(['sync', 'async'] as const),
  enabled: boolean(),
  storeIncomingMedia: boolean(),
};

function delayOrder(s: { minDelayMs?: number; maxDelayMs?: number }) {
  if (s.minDelayMs === undefined || s.maxDelayMs === undefined || s.minDelayMs <= s.maxDelayMs) return true;
  return { path: ['maxDelayMs'], key: 'maxDelayMs', message: 'maxDelayMs must be at least minDelayMs' };
}

/** A complete, valid settings object. */
export const InstanceSettingsStruct = refine(object(fields), 'DelayOrder', delayOrder);

/** The body of an admin settings PATCH: a subset of the fields; unknown keys are refused. */
export const SettingsPatchStruct = refine(
  object({
    maxPerHour: optional(fields.maxPerHour),
    maxPer24h: optional(fields.maxPer24h),
    minDelayMs: optional(fields.minDelayMs),
    maxDelayMs: optional(fields.maxDelayMs),
    quietHours: optional(fields.quietHours),
    defaultTtlSeconds: optional(fields.defaultTtlSeconds),
    legacyQueueMode: optional(fields.legacyQueueMode),
    enabled: optional(fields.enabled),
    storeIncomingMedia: optional(fields.storeIncomingMedia),
  }),
  'DelayOrder',
  delayOrder,
);
export type SettingsPatch = Infer<typeof SettingsPatchStruct>;

/**
 * Merge a validated patch into the current settings and validate the result. Throws superstruct's StructError
 * (translate `failure.path` into `VALIDATION_FAILED` `data.field`), for example when a patch sets only
 * `minDelayMs` above the stored `maxDelayMs`.
 */
export function applySettingsPatch(current: Readonly<InstanceSettings>, patch: SettingsPatch): InstanceSettings {
  const merged: InstanceSettings = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v !== undefined) Object.assign(merged, { [k]: v });
  }
  assert(merged, InstanceSettingsStruct);
  return merged;
}

/** Settings the planner reads. */
export const PLAN_SETTING_KEYS = ['maxPerHour', 'maxPer24h', 'minDelayMs', 'maxDelayMs', 'quietHours', 'enabled'] as const;

/** True when a change must re-plan the waiting jobs (SPEC.md planner rule 6, event `queue.replanned`). */
export function affectsPlan(before: Readonly<InstanceSettings>, after: Readonly<InstanceSettings>): boolean {
  return PLAN_SETTING_KEYS.some((k) => {
    if (k === 'quietHours') {
      const a = before.quietHours;
      const b = after.quietHours;
      return a === null || b === null ? a !== b : a.start !== b.start || a.end !== b.end || a.tz !== b.tz;
    }
    return before[k] !== after[k];
  });
}

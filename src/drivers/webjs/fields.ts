/**
 * Reading fields of objects that come out of a browser page. whatsapp-web.js's structures are filled from
 * WhatsApp Web's own models, which change without notice; a missing or oddly typed field must become a
 * sensible default here rather than a crash in an event handler.
 */

export type Fields = Record<string, unknown>;

export function isRecord(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null;
}

export function field(value: unknown, key: string): unknown {
  return isRecord(value) ? value[key] : undefined;
}

export function str(value: unknown, fallback = ''): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return fallback;
}

export function strOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

export function num(value: unknown, fallback = 0): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return fallback;
}

export function numOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

export function bool(value: unknown): boolean {
  return value === true;
}

/**
 * An id as a string. The network's ids appear both as strings and as wid objects
 * (`{server, user, _serialized}`, or message keys `{fromMe, remote, id, _serialized}`); the serialized form is
 * kept exactly as given, so `@lid`, `@c.us` and `@g.us` survive untouched.
 */
export function serialized(value: unknown): string {
  if (typeof value === 'string') return value;
  const s = field(value, '_serialized');
  return typeof s === 'string' ? s : '';
}

export function serializedOrNull(value: unknown): string | null {
  const s = serialized(value);
  return s === '' ? null : s;
}

export function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

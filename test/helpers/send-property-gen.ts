/**
 * Random inputs of the send parser's property test (test/unit/send-fast-paths-property.test.ts): text send bodies
 * as JSON text (valid or invalid in every field, extra keys, prototype keys, numbers JSON.stringify cannot write),
 * idempotency headers, and nested JSON payloads for the fingerprint. Seeded (fuzz-values.ts Rng).
 */
import { hash } from 'node:crypto';
import { Rng, hugeString, junkString, rawNumber, toJsonText } from './fuzz-values.js';
import type { payloadHash } from '../../src/http/routes/send.js';

export { Rng };

const ABSENT = Symbol('absent');
type Gen = (rng: Rng) => unknown;

/** A value of any JSON type (shallow), or a raw number marker. */
function anyJson(rng: Rng): unknown {
  switch (rng.int(0, 9)) {
    case 0: return null;
    case 1: return rng.chance(0.5);
    case 2: return rng.int(-5, 5);
    case 3: return rng.pick([1.5, -0.5, 1e21, 2 ** 53, 0.1]);
    case 4: return rawNumber(rng);
    case 5: return junkString(rng);
    case 6: return [];
    case 7: return [junkString(rng), 1, null];
    case 8: return {};
    default: return { a: junkString(rng) };
  }
}

/**
 * A field: mostly one of `good`, else one of `edge` (valid or not), absent, or any JSON value (about a third of
 * the bodies are valid in all their fields).
 */
function field(rng: Rng, good: Gen, edge: readonly unknown[], pAbsent: number): unknown {
  if (rng.chance(pAbsent)) return ABSENT;
  const r = rng.next();
  if (r < 0.8) return good(rng);
  if (r < 0.94) return rng.pick(edge);
  return anyJson(rng);
}

const PHONES = ['4915112345678', '01511234567', '+49 151 1234-5678', '0049151123456', '(0151) 123 45 67', '12345', '491511234567890123', '', ' ', '49151abc', '\u0661\u0662\u0663\u0664\u0665\u0666\u0667'];
const CHAT_IDS = ['4915112345678@c.us', '123456789012@lid', '12345678-1600000000@g.us', ' 4915112345678@c.us ', '4915112345678@C.US', '1234@c.us', '4915112345678@s.whatsapp.net', '', '@c.us', '4915112345678@c.us\n'];
const ISO = ['2030-01-31T09:00:00Z', '2030-01-31T09:00Z', '2030-01-31T09:00:00.123456789+01:00', '2030-01-31T09:00:00+0100', '2030-01-31T09:00:00.1234567890Z',
  '2030-01-31', '2030-01-31T09:00:00', '2030-01-31t09:00:00z', '2030-02-30T09:00:00Z', '2030-13-01T00:00:00Z', '2030-01-31T25:00:00Z', '1970-01-01T00:00:00Z',
  '2030-01-31 09:00:00Z', '+275760-09-13T00:00:00Z', '', '2030-01-31T09:00:00-23:59', '2030-01-31T09:00:60Z'];
const KEY_CHARS = 'AZaz09_.:-';

function idempotencyKey(rng: Rng): string {
  const len = rng.pick([8, 9, 64, 127, 128, 1, 7, 129, 200]);
  let s = '';
  for (let i = 0; i < len; i++) s += KEY_CHARS[rng.int(0, KEY_CHARS.length - 1)];
  if (rng.chance(0.15)) {
    const at = rng.int(0, s.length);
    s = `${s.slice(0, at)}${rng.pick([' ', '/', 'é', '😀', '\n', '+', '=', '\u0000'])}${s.slice(at)}`;
  }
  return s;
}

function message(rng: Rng): string {
  switch (rng.int(0, 5)) {
    case 0: return hugeString(rng, 4_000, 70_000);
    case 1: return rng.pick(['😀', '👩‍👩‍👧', '\u202eabc', '\ud800', '\udc00x', '\u0000', ' ', '\n', 'ß'.repeat(10)]);
    default: return `hello ${junkString(rng)}`;
  }
}

function options(rng: Rng): unknown {
  const o: Record<string, unknown> = {};
  const n = rng.int(0, 3);
  for (let i = 0; i < n; i++) {
    switch (rng.int(0, 7)) {
      case 0: o.linkPreview = rng.chance(0.8) ? rng.chance(0.5) : 'yes'; break;
      case 1: o.mentions = rng.chance(0.8) ? ['4915112345678@c.us', '123456789@lid'] : ['4915112345678']; break;
      case 2: o.quotedMessageId = rng.chance(0.8) ? 'true_4915112345678@c.us_ABC' : ''; break;
      case 3: o.groupMentions = [{ subject: 's', id: rng.chance(0.8) ? '120363000000000001@g.us' : 'x' }]; break;
      case 4: o.isViewOnce = anyJson(rng); break;
      case 5: o.sendAudioAsVoice = true; break; // not on the whitelist: dropped
      case 6: o[rng.pick(['__proto__', 'constructor', '10', '2', 'é'])] = anyJson(rng); break;
      default: o.sendMediaAsHd = rng.chance(0.5);
    }
  }
  return o;
}

const EXTRA_KEYS = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'extra', '10', '2', 'Message', 'message ', 'kind', 'payload', 'body'];

/** The JSON text of a text send body (the top level may be any JSON value, mostly an object). */
export function randomTextBody(rng: Rng): string {
  const top = rng.next();
  if (top < 0.04) return toJsonText(anyJson(rng));
  if (top < 0.05) return 'null';
  const target = rng.int(0, 9);
  const fields: [string, unknown][] = [
    ['phone', target < 5 ? field(rng, (r) => r.pick(PHONES.slice(0, 5)), [...PHONES, 4915112345678, null], 0.05) : target < 9 ? ABSENT : rng.pick(PHONES)],
    ['chatId', target >= 5 && target < 9 ? field(rng, (r) => r.pick(CHAT_IDS.slice(0, 3)), [...CHAT_IDS, null, 123], 0.05) : target === 9 ? rng.pick(CHAT_IDS) : ABSENT],
    ['message', field(rng, message, ['', null, 0, true, ['hi'], { text: 'hi' }], 0.05)],
    ['priority', field(rng, (r) => r.int(1, 9), [0, 10, -1, 2.5, '5', 1e0, 9.0000000001, '\u0001raw:-0', '\u0001raw:1e309', '\u0001raw:0.1e1'], 0.5)],
    ['ttlSeconds', field(rng, (r) => r.int(60, 2_592_000), [59, 60, 61, 2_592_000, 2_592_001, 60.5, '60', '\u0001raw:9007199254740993'], 0.6)],
    ['notBefore', field(rng, (r) => r.pick(ISO.slice(0, 4)), [...ISO, 1_900_000_000_000], 0.6)],
    ['idempotencyKey', field(rng, idempotencyKey, ['', 'short', 'a'.repeat(128), 'a'.repeat(129), 'abc def ghi', 12345678], 0.6)],
    ['options', field(rng, options, [{}, [], null, 'x', 1, true, [{ linkPreview: true }]], 0.6)],
  ];
  if (rng.chance(0.3)) fields.push([rng.pick(EXTRA_KEYS), anyJson(rng)]);
  // field order varies: it may change which failure the schema names first
  for (let i = fields.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [fields[i], fields[j]] = [fields[j] as [string, unknown], fields[i] as [string, unknown]];
  }
  // written by hand, so that "__proto__" is an own key of the parsed body (as JSON.parse makes it)
  const parts = fields.filter(([, v]) => v !== ABSENT).map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`);
  return `{${parts.join(',')}}`;
}

/** An X-Idempotency-Key header value, mostly absent. */
export function randomHeader(rng: Rng): string | undefined {
  const r = rng.next();
  if (r < 0.75) return undefined;
  if (r < 0.8) return '';
  return rng.chance(0.5) ? rng.pick(['key-12345678', 'AAAAAAAA', 'bad key!']) : idempotencyKey(rng);
}

/** The instance's linked number: mostly one that is not the recipient, sometimes the usual recipient. */
export function randomOwnNumber(rng: Rng): string | null {
  return rng.chance(0.1) ? '4915112345678' : rng.pick([null, '4915100000000']);
}

const PAYLOAD_KEYS = ['10', '2', '0', '1', 'a', 'B', 'b', 'body', 'chatId', 'options', '', 'é', 'z', '__proto__', '01', '-1', '4294967295', '4294967294', 'aa', 'A'];

/** A random JSON value as JSON.parse gives it (own "__proto__" keys), nested up to `depth`; some objects without a prototype. */
export function randomJson(rng: Rng, depth: number, nullProto: boolean): unknown {
  const text = jsonText(rng, depth);
  const value = JSON.parse(text) as unknown;
  return nullProto ? withoutPrototypes(value) : value;
}

function jsonText(rng: Rng, depth: number): string {
  const r = rng.next();
  if (depth === 0 || r < 0.3) return toJsonText(rng.pick([null, true, 'x', 1, -0.5, 'ü', '\ud800']));
  if (r < 0.5) return `[${Array.from({ length: rng.int(0, 4) }, () => jsonText(rng, depth - 1)).join(',')}]`;
  const n = rng.int(0, 6);
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(`${JSON.stringify(rng.pick(PAYLOAD_KEYS))}:${jsonText(rng, depth - 1)}`);
  // sometimes sorted already, so that the shortcut (no sorted copy) is taken
  if (rng.chance(0.4)) parts.sort();
  return `{${parts.join(',')}}`;
}

function withoutPrototypes(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutPrototypes);
  if (v === null || typeof v !== 'object') return v;
  const out = Object.create(null) as Record<string, unknown>;
  for (const [k, x] of Object.entries(v)) out[k] = withoutPrototypes(x);
  return out;
}

/** The payload fingerprint as first defined (the reference of src/http/routes/send.ts payloadHash): a sorted copy. */
export function sortedCopyHash(p: Parameters<typeof payloadHash>[0]): string {
  const sortKeys = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortKeys);
    if (v && typeof v === 'object') {
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, x]) => [k, sortKeys(x)]));
    }
    return v;
  };
  return hash('sha256', JSON.stringify([p.kind, p.chatId, sortKeys(p.payload), p.priority, p.notBefore, p.ttlSeconds]), 'hex');
}

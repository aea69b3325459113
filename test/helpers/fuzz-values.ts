/**
 * The fuzzer's randomness and its mutations (test/helpers/fuzz.ts drives them): a seeded PRNG, junk for path
 * parameters and query strings, and mutations of a route's expected JSON body (wrong types, missing and extra
 * fields, huge strings, deep nesting, prototype keys, NUL characters, lone surrogates, numbers JSON.stringify
 * cannot write).
 * Every request is a pure function of (seed, index): FUZZ_SEED and the index reproduce it exactly.
 */

/** splitmix32: small, fast, and good enough to spread one seed over a run. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    this.s = (this.s + 0x9e3779b9) >>> 0;
    let z = this.s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(list: readonly T[]): T {
    if (list.length === 0) throw new Error('pick from an empty list');
    return list[Math.floor(this.next() * list.length)] as T;
  }
}

/** The generator of request `index` of the run seeded with `seed`. */
export function rngFor(seed: number, index: number): Rng {
  return new Rng((Math.imul(seed >>> 0, 0x27d4eb2d) ^ Math.imul(index + 1, 0x165667b1)) >>> 0);
}

/** Text that a raw JSON body carries where JSON.stringify cannot write it (replaced after stringifying). */
const RAW_NUMBERS = ['1e309', '-1e309', '-0', '1e-400', '9007199254740993', '123456789012345678901234567890', '0.1e1', '-9223372036854775809'];
const RAW_MARK = '\u0001raw:';
export const rawNumber = (rng: Rng): string => `${RAW_MARK}${rng.pick(RAW_NUMBERS)}`;
/** JSON text of `value` with the raw-number markers written as bare numbers. */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value).replace(/"\\u0001raw:([^"]+)"/g, '$1');
}

/** Halves of a surrogate pair alone or the wrong way round (JSON.stringify writes them as `\\ud800` escapes). */
const LONE_SURROGATES = ['\ud800', '\udfff', '\ude00\ud83d', 'x\udbff'];
const UNICODE = ['é', 'ß', '😀', '👩‍👩‍👧', '\u202e', 'ｗｑ', '\u0301', '中文', '\ufeff', '\ud7ff', 'Ω'];
const ASCII_JUNK = ['\'', '"', '\\', '<script>', '${x}', '{{x}}', '..', '../..', '%', '&', '=', '#', '?', ';', ' ', '\t', '\n', '@', '@c.us', '@g.us', '@lid', '+', '-'];

export function junkString(rng: Rng, maxLen = 64): string {
  const n = rng.int(0, 6);
  let s = '';
  for (let i = 0; i < n && s.length < maxLen; i++) {
    const k = rng.int(0, 3);
    s += k === 0 ? rng.pick(UNICODE) : k === 1 ? rng.pick(ASCII_JUNK) : k === 2 ? String(rng.int(0, 99999)) : 'abcxyz'.slice(rng.int(0, 5));
  }
  return s;
}

export function hugeString(rng: Rng, min = 10_000, max = 300_000): string {
  return rng.pick(['a', 'é', '😀', ' ', '0']).repeat(rng.int(min, max));
}

/** Path parameter values a careless or hostile client would send instead of a plausible one. */
export function junkParam(rng: Rng, plausible: string): { value: string; encoded: boolean } {
  const raw = (value: string) => ({ value, encoded: true });
  const enc = (value: string) => ({ value, encoded: false });
  switch (rng.int(0, 19)) {
    case 0: return enc('');
    case 1: return enc(rng.pick(['constructor', '__proto__', 'prototype', 'hasOwnProperty', 'toString', 'valueOf', '__defineGetter__']));
    case 2: return enc(`wq_${junkString(rng)}`);
    case 3: return enc(rng.pick(['99999999999999999999', '-1', '0', '1e309', 'NaN', 'Infinity', '9223372036854775808', '00000000000000000000001']));
    case 4: return raw(rng.pick(['%00', `${plausible}%00`, '%00%00', `a%00b`]));
    case 5: return raw(rng.pick(['%', '%zz', '%ff%fe', '%C0%AF', '%2F', '%2e%2e', '%25', '%u0041', '%E2%80%AE', '%F0%9F%98']));
    case 6: return enc(hugeString(rng, 500, 6_000));
    case 7: return enc(junkString(rng));
    case 8: return enc(`${plausible}${rng.pick(UNICODE)}`);
    case 9: return enc(plausible.toUpperCase());
    case 10: return enc(`${plausible} `);
    case 11: return enc(plausible.slice(0, Math.max(0, plausible.length - rng.int(1, 5))));
    case 12: return enc(`${plausible}${plausible}`);
    case 13: return enc(rng.pick(['md_', 'md_!', 'true_', 'false_x@c.us_', '@c.us', '1@g.us', '123-456@g.us', 'status@broadcast', '0@c.us']));
    case 14: return enc(rng.pick(['null', 'undefined', 'true', '[]', '{}', '[object Object]']));
    case 15: return enc(`${rng.pick(['wq_', 'md_', ''])}${'9'.repeat(rng.int(15, 40))}`);
    case 16: return raw(encodeURIComponent(plausible).replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`));
    case 17: return enc(`${'00000000-0000-0000-0000-000000000000'.slice(0, rng.int(8, 36))}`);
    case 18: return enc(`${plausible.replace(/\d/g, () => String(rng.int(0, 9)))}`);
    default: return enc(rng.pick(UNICODE).repeat(rng.int(1, 40)));
  }
}

/** Query parameters: the route's own ones with good and bad values, duplicates, unknown keys, NUL. */
export function queryString(rng: Rng, known: Record<string, readonly string[]>, clean = false): string {
  const parts: string[] = [];
  const put = (k: string, v: string, encode = true) => parts.push(`${encode ? encodeURIComponent(k) : k}=${encode ? encodeURIComponent(v) : v}`);
  for (const [k, values] of Object.entries(known)) if (rng.chance(0.5)) put(k, rng.pick(values));
  const mutations = !clean && rng.chance(0.5) ? rng.int(1, 3) : 0;
  const keys = Object.keys(known);
  for (let i = 0; i < mutations; i++) {
    const k = keys.length > 0 && rng.chance(0.7) ? rng.pick(keys) : rng.pick(['cursor', 'limit', 'state', 'download', 'since', 'fromMe', 'archived']);
    switch (rng.int(0, 9)) {
      case 0: put(k, rng.pick(['99999999999999999999', '-1', '0', '1e309', '1.5', 'NaN', '0x10', '  7', '+5'])); break;
      case 1: put(k, '1'); put(k, '2'); break; // an array
      case 2: put(`${k}[]`, '1', false); break;
      case 3: put(rng.pick(['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'x', 'a.b']), junkString(rng)); break;
      case 4: parts.push(`${k}=%00`); break;
      case 5: put(k, ''); break;
      case 6: parts.push(rng.pick(['&&&', '=', '==', k, `${k}=%zz`, `${k}=%`, '%ff=1'])); break;
      case 7: put(k, hugeString(rng, 100, 3_000)); break;
      case 8: put(k, junkString(rng)); break;
      default: put(k, rng.pick(['true', 'false', '1', 'yes', 'sent', 'queued', 'failed', 'all']));
    }
  }
  return parts.length > 0 ? `?${parts.join('&')}` : '';
}

/** A value of another kind than the template's. */
export function junkValue(rng: Rng, depth = 0): unknown {
  switch (rng.int(0, 15)) {
    case 0: return null;
    case 1: return rng.pick([true, false]);
    case 2: return rng.pick([0, -1, 1.5, 2 ** 53, -(2 ** 31), 1e21, 5e-324, 300001, 86399]);
    case 3: return rawNumber(rng);
    case 4: return rng.pick(['NaN', 'Infinity', '-0', '1e309', '', ' ']);
    case 5: return junkString(rng);
    case 6: return `a\u0000b`;
    case 7: return hugeString(rng, 1_000, 100_000);
    case 8: return depth > 2 ? [] : [junkValue(rng, depth + 1), junkValue(rng, depth + 1)];
    case 9: return depth > 2 ? {} : { [junkString(rng, 8) || 'k']: junkValue(rng, depth + 1) };
    case 10: return nested(rng.int(5, 40));
    case 11: return protoObject(rng);
    case 12: return [];
    case 13: return {};
    case 14: return rng.pick(['2026-13-45T25:61:00Z', '2026-01-05T10:00:00Z', '1970-01-01T00:00:00Z', '9999-12-31T23:59:59Z']);
    default: return rng.pick(['4915112340001', '+4915112340001', '015112340001', '4915112340001@c.us', '120363000000000001@g.us', 'wq_x', 'md_x']);
  }
}

export function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { a: v };
  return v;
}

/** An object with an own `__proto__`, `constructor` or `prototype` key (as JSON.parse builds them). */
export function protoObject(rng: Rng): Record<string, unknown> {
  const key = rng.pick(['__proto__', 'constructor', 'prototype']);
  return JSON.parse(`{"${key}": {"polluted": true, "toString": 1}}`) as Record<string, unknown>;
}

type Json = unknown;

function paths(value: Json, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(prefix);
  if (prefix.length > 4) return out;
  if (Array.isArray(value)) value.forEach((v, i) => paths(v, [...prefix, i], out));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) paths(v, [...prefix, k], out);
  return out;
}

function setAt(root: Json, path: (string | number)[], f: (old: Json) => Json | undefined): Json {
  if (path.length === 0) return f(root);
  const [head, ...rest] = path;
  if (Array.isArray(root) && typeof head === 'number') {
    const copy = [...root];
    const v = setAt(copy[head], rest, f);
    if (v === undefined) copy.splice(head, 1);
    else copy[head] = v;
    return copy;
  }
  if (root !== null && typeof root === 'object' && typeof head === 'string') {
    const copy: Record<string, Json> = Object.create(null) as Record<string, Json>;
    for (const [k, v] of Object.entries(root)) copy[k] = v;
    const v = setAt(copy[head], rest, f);
    if (v === undefined) delete copy[head];
    else copy[head] = v;
    return copy;
  }
  return root;
}

/** One to three mutations of the template: a field's type, a missing or extra field, a wrapped or swapped value. */
export function mutateBody(rng: Rng, template: Json): Json {
  let body = template;
  const n = rng.int(1, 3);
  for (let i = 0; i < n; i++) {
    const all = paths(body);
    const at = rng.pick(all);
    switch (rng.int(0, 9)) {
      case 0:
      case 1:
      case 2: body = setAt(body, at, () => junkValue(rng)); break;
      case 3: body = at.length > 0 ? setAt(body, at, () => undefined) : body; break;
      case 4: body = setAt(body, at, (old) => (old !== null && typeof old === 'object' && !Array.isArray(old) ? { ...(old as object), [rng.pick(['extra', 'unknownField', 'x', 'a\u0000b', `k${rng.pick(LONE_SURROGATES)}`, junkString(rng, 10) || 'y'])]: junkValue(rng) } : old)); break;
      case 5: body = setAt(body, at, (old) => [old]); break;
      case 6: body = setAt(body, at, (old) => (typeof old === 'string' ? `${old}${rng.pick(['\u0000', hugeString(rng, 100, 20_000), rng.pick(UNICODE), ' ', rng.pick(LONE_SURROGATES)])}` : junkValue(rng))); break;
      case 7: body = setAt(body, at, (old) => (old !== null && typeof old === 'object' && !Array.isArray(old) ? { ...(old as object), ...protoObject(rng) } : old)); break;
      case 8: body = setAt(body, at, (old) => (typeof old === 'number' ? rng.pick([rawNumber(rng), -old, old * 1e6, String(old), old + 0.5]) : typeof old === 'boolean' ? String(old) : junkValue(rng))); break;
      default: body = setAt(body, at, () => nested(rng.int(20, 60)));
    }
  }
  return body;
}

/** Whole bodies that are not what any route wants, as raw bytes. */
export function junkBodyBytes(rng: Rng): Buffer {
  switch (rng.int(0, 11)) {
    case 0: return Buffer.from(rng.pick(['{', '}', '{"a":', '{\'a\':1}', '{"a":1,}', '[1,2', '{"a":1}{"b":2}', '{"a":1} x']));
    case 1: return Buffer.from(rng.pick(['null', 'true', '0', '"x"', '[]', '[{}]', '""', '1e309', '-0']));
    case 2: return Buffer.from('');
    case 3: return Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from('{"message":"bom"}')]);
    case 4: return Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x22, 0x7d]); // invalid UTF-8 in a string
    case 5: return Buffer.from(`${'['.repeat(rng.int(33, 200_000))}${']'.repeat(rng.int(0, 10))}`);
    case 6: return Buffer.from(`{"a":${'{"a":'.repeat(rng.int(33, 5_000))}1${'}'.repeat(rng.int(0, 40))}`);
    case 7: return Buffer.from('{"message":"a\\u0000b","phone":"4915112340001"}');
    case 8: return Buffer.from('{"__proto__":{"isAdmin":true},"message":"x"}');
    case 9: return Buffer.from(Array.from({ length: rng.int(1, 300) }, () => rng.int(0, 255)));
    case 10: return Buffer.from('{"message":"x","message":"y","phone":"1","phone":"2"}');
    default: return Buffer.from(`{"a":"${'\\'.repeat(rng.int(1, 5))}"}`);
  }
}

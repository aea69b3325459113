/**
 * A JSON body's text checked and parsed: nesting deeper than any request needs, keys that reach object prototypes,
 * NUL characters (PostgreSQL refuses them in text and JSON) and lone surrogates (its JSON refuses those) are 400
 * VALIDATION_FAILED naming the field, before anything stores them. Its bytes are read by src/http/body.ts.
 */
import { validationFailed as bad, type DomainError } from '../errors.js';

/** Deeper than any request of the API (options.groupMentions.0.x is 4); far below any stack limit. */
export const MAX_JSON_DEPTH = 32;
/**
 * More members than any object of the API has (send-bulk's entries are an array, which has no cap). Found from
 * the outside: an `options` of 1.1 million keys (9.85 MB) held the event loop 7–9 s (JSON.parse builds such an
 * object slowly, the walk below and the schema's copy of it more slowly still), long enough for the node to
 * lose the leases of every instance it ran; 1 MB of keys held it 0.6 s.
 */
export const MAX_OBJECT_MEMBERS = 1_000;
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Refuses nesting deeper than MAX_JSON_DEPTH, and an object of more than MAX_OBJECT_MEMBERS members, before
 * JSON.parse builds them (strings are skipped; a member is counted by the comma before it). Answers whether a
 * string holds an escaped surrogate (`\ud800` to `\udfff`): the only way a lone one reaches a parsed string
 * (strict UTF-8 decoding has none), and then the strings are searched for one.
 */
function checkDepth(text: string): boolean {
  let depth = 0;
  let inString = false;
  let surrogates = false;
  // per open level: the commas seen in it when it is an object, -1 when it is an array
  const commas = new Int32Array(MAX_JSON_DEPTH + 1);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) {
        // backslash: skip the escaped character; \uD800-\uDFFF is a surrogate
        if (text.charCodeAt(i + 1) === 0x75 && (text.charCodeAt(i + 2) | 0x20) === 0x64 && /[89a-f]/i.test(text.charAt(i + 3))) surrogates = true;
        i++;
      } else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x2c) {
      const seen = commas[depth] ?? -1;
      if (seen !== -1) {
        if (seen + 1 >= MAX_OBJECT_MEMBERS) throw bad('body', `an object of the body has more than ${MAX_OBJECT_MEMBERS} members`);
        commas[depth] = seen + 1;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) throw bad('body', `the body is nested deeper than ${MAX_JSON_DEPTH} levels`);
      commas[depth] = c === 0x7b ? 0 : -1;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return surrogates;
}

/** A surrogate that is not half of a pair (`\p{Cs}` matches only those under the `u` flag). */
const LONE_SURROGATE = /\p{Cs}/u;
/** Whether a key or string is refused: a NUL, or (when the text escaped surrogates) a lone surrogate. */
const refusedText = (s: string, surrogates: boolean) => s.includes('\u0000') || (surrogates && LONE_SURROGATE.test(s));

/** True when no key reaches a prototype and no key or string is refused (the usual body): no paths built. */
function clean(root: unknown, surrogates: boolean): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') {
      if (refusedText(value, surrogates)) return false;
    } else if (Array.isArray(value)) {
      for (const v of value) stack.push(v);
    } else if (value !== null && typeof value === 'object') {
      for (const k of Object.keys(value)) {
        if (FORBIDDEN_KEYS.has(k) || refusedText(k, surrogates)) return false;
        stack.push((value as Record<string, unknown>)[k]);
      }
    }
  }
  return true;
}

/**
 * The first key or string of `root` that is refused, named by its path under `base`, or null. `namesOnly`:
 * only a key that reaches a prototype (not what a text holds).
 */
function firstOffence(root: unknown, surrogates: boolean, base: string, namesOnly = false): DomainError | null {
  const stack: Array<{ value: unknown; path: string }> = [{ value: root, path: base }];
  const at = (path: string, key: string) => (path ? `${path}.${key}` : key);
  while (stack.length > 0) {
    const { value, path } = stack.pop() as { value: unknown; path: string };
    if (typeof value === 'string') {
      if (namesOnly) continue;
      if (value.includes('\u0000')) return bad(path || 'body', `${path || 'body'} must not contain NUL characters`);
      if (surrogates && LONE_SURROGATE.test(value)) return bad(path || 'body', `${path || 'body'} must be well-formed Unicode (it holds half of a surrogate pair)`);
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => stack.push({ value: v, path: at(path, String(i)) }));
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        const p = at(path, k);
        if (FORBIDDEN_KEYS.has(k)) return bad(p, `${p} is not an allowed field name`);
        if (namesOnly) {
          stack.push({ value: v, path: p });
          continue;
        }
        if (k.includes('\u0000')) return bad(path || 'body', `field names must not contain NUL characters`);
        if (surrogates && LONE_SURROGATE.test(k)) return bad(path || 'body', 'field names must be well-formed Unicode (one holds half of a surrogate pair)');
        stack.push({ value: v, path: p });
      }
    }
  }
  return null;
}

/** Why an entry of a body read with `entries` was refused (its text), by the entry: see `refusedEntry`. */
const REFUSED_ENTRIES = new WeakMap<object, string>();

/**
 * Why an entry of the route's entries (`jsonBody`'s `entriesAt`) holds text that cannot be stored: a NUL or a
 * lone surrogate, named by its field within the entry ("message must not contain NUL characters"). Undefined
 * for an entry without one. The route rejects that entry alone.
 */
export function refusedEntry(entry: unknown): string | undefined {
  return entry !== null && typeof entry === 'object' ? REFUSED_ENTRIES.get(entry) : undefined;
}

/**
 * Walks the parsed value without recursion: no key that reaches a prototype, no NUL in keys or strings, and no
 * lone surrogate (`surrogates`: the text escaped one). PostgreSQL's JSON refuses `\ud800` unpaired (a 500 from
 * the insert, found by probing), and in text it would become U+FFFD: stored, but not what the client sent.
 *
 * `entries`: the top-level array whose object entries the route takes one by one (v1 send-bulk's `messages`,
 * SPEC.md "send-bulk rules" 3: a rejected entry does not abort the batch). A NUL or a lone surrogate inside
 * such an entry is noted for the route (`refusedEntry`) instead of refusing the body; a key that reaches a
 * prototype is refused wherever it is, and so is anything outside the entries.
 */
function checkValues(root: unknown, surrogates: boolean, entries?: string): void {
  if (clean(root, surrogates)) return;
  // something to refuse: walk again with paths, to name the first offending field
  const list = entries !== undefined && !Array.isArray(root) ? (root as Record<string, unknown>)[entries] : undefined;
  if (entries === undefined || !Array.isArray(list) || !Object.hasOwn(root as object, entries)) {
    const offence = firstOffence(root, surrogates, '');
    if (offence) throw offence;
    return;
  }
  const outside = firstOffence({ ...(root as Record<string, unknown>), [entries]: [] }, surrogates, '');
  if (outside) throw outside;
  list.forEach((entry: unknown, i) => {
    if (clean(entry, surrogates)) return;
    const path = `${entries}.${i}`;
    // a key that reaches a prototype is refused wherever it is; an entry that is a bare string has nothing to
    // note its refusal on: the whole body, as anywhere else
    const whole = entry !== null && typeof entry === 'object' ? firstOffence(entry, surrogates, path, true) : firstOffence(entry, surrogates, path);
    if (whole) throw whole;
    const within = firstOffence(entry, surrogates, '');
    if (within) REFUSED_ENTRIES.set(entry as object, within.message);
  });
}

/**
 * An object or an array (as before: schemas refuse an array where they want an object, v1 in its frozen words).
 * `entries`: see `checkValues`.
 */
export function parseJsonText(text: string, entries?: string): object {
  const surrogates = checkDepth(text);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw bad('body', 'the body is not valid JSON');
  }
  if (value === null || typeof value !== 'object') throw bad('body', 'the body must be a JSON object');
  checkValues(value, surrogates, entries);
  return value;
}

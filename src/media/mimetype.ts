/**
 * Media types compared as RFC 2045 reads them, not as text: the send routes' rules on a type (a sticker's,
 * a voice note's; src/http/routes/send-payloads.ts) ask what the type is, whatever its spelling.
 */

/** `type/subtype` of a media type, lower-case, without its parameters ("IMAGE/GIF; x=1" → "image/gif"). */
export function mimeEssence(value: string): string {
  return (value.split(';')[0] ?? '').trim().toLowerCase();
}

/** RFC 2045 `token` characters: a type, subtype, parameter name or unquoted value. */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const ESSENCE = new RegExp(`\\s*(${TOKEN})/(${TOKEN})\\s*`, 'y');
const PARAMETER = new RegExp(`;\\s*(${TOKEN})\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|(${TOKEN}))\\s*`, 'y');

export interface ParsedMimetype {
  /** `type/subtype`, lower-case */
  essence: string;
  /** parameter name (lower-case) → value, unquoted (a quoted-pair's backslash removed), its case kept */
  params: Map<string, string>;
}

/**
 * A media type as RFC 2045 defines it, or null when it is not one (or names a parameter twice). Type, subtype
 * and parameter names are case-insensitive; a value is the same quoted or not (`codecs="opus"` is `codecs=opus`).
 */
export function parseMimetype(value: string): ParsedMimetype | null {
  ESSENCE.lastIndex = 0;
  const head = ESSENCE.exec(value);
  if (!head) return null;
  const params = new Map<string, string>();
  let at = ESSENCE.lastIndex;
  while (at < value.length) {
    PARAMETER.lastIndex = at;
    const p = PARAMETER.exec(value);
    if (!p) return null;
    const name = (p[1] ?? '').toLowerCase();
    if (params.has(name)) return null;
    params.set(name, p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : (p[3] ?? ''));
    at = PARAMETER.lastIndex;
  }
  return { essence: `${head[1] ?? ''}/${head[2] ?? ''}`.toLowerCase(), params };
}

/** Whether two media types are the same type with the same parameters (in any order), read as parseMimetype reads them. */
export function sameMimetype(a: string, b: string): boolean {
  const x = parseMimetype(a);
  const y = parseMimetype(b);
  if (!x || !y || x.essence !== y.essence || x.params.size !== y.params.size) return false;
  for (const [name, v] of x.params) if (y.params.get(name) !== v) return false;
  return true;
}

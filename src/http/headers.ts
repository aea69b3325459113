/**
 * How many times a request carried the header `name` (lower-case), from its raw headers (names and values in turn).
 * Node keeps the first of a repeated Host or Authorization and drops the others, where a proxy in front may read
 * the last: the checks that refuse such a request (src/http/target.ts for Host, src/http/auth.ts for Authorization)
 * count them here. A request has few headers; a name of another length is not lower-cased.
 */
export function headerCount(raw: readonly string[], name: string): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const header = raw[i] as string;
    if (header.length === name.length && header.toLowerCase() === name) n++;
  }
  return n;
}

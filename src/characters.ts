import { refine, string, type Struct } from 'superstruct';

/**
 * How long a text is where the API says "characters" (its validation messages, docs/api.md): in Unicode code
 * points, not in JavaScript's UTF-16 code units (`.length`). Found from the outside: 100 × "😀" as a poll answer
 * was refused as longer than 100 characters, each emoji being two code units. Code points are the count a
 * person least expects to be surprised by short of grapheme clusters (whose boundaries change with Unicode
 * versions, so a limit would move under a client), and the count JSON Schema's minLength/maxLength use, so
 * the OpenAPI document (src/http/openapi) states the same limits the routes apply. A family emoji
 * (👨‍👩‍👧‍👦) is 7 code points: within the 32 characters of a reaction.
 */
export function characterCount(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xd800 || c > 0xdbff) continue;
    const d = text.charCodeAt(i + 1);
    // a surrogate pair is one code point; a lone half (refused by the body parser anyway) counts as one
    if (d >= 0xdc00 && d <= 0xdfff) {
      n -= 1;
      i += 1;
    }
  }
  return n;
}

/**
 * A string of `lo` to `hi` characters, counted in code points (src/characters.ts): superstruct's `size` counts
 * UTF-16 code units. It fails as `size` does, named `size` and in `size`'s words, so its message ("must be 1 to
 * 100 characters long") and the OpenAPI document's minLength/maxLength are read from it as from `size`.
 */
export function chars(lo: number, hi: number): Struct<string, null> {
  const of = lo === hi ? `of \`${lo}\`` : `between \`${lo}\` and \`${hi}\``;
  return refine(string(), 'size', (v) => {
    const n = characterCount(v);
    return (lo <= n && n <= hi) || `Expected a string with a length ${of} but received one with a length of \`${n}\``;
  });
}

/**
 * PostgreSQL array literals (`{"a","b",NULL}`, `{1,2,NULL}`) of one-dimensional arrays, for statements that
 * take a batch as one array per column (src/queue/sql/job-rows.ts). Every text element is quoted, so that
 * nothing in it (braces, commas, blanks, the word NULL) is read as syntax; inside quotes only `"` and `\` are
 * special, escaped with `\`; a null is the unquoted word (array input reads it in any case). A string with a
 * NUL character cannot be stored by PostgreSQL at all; request bodies refuse them (src/http/json-text.ts).
 *
 * Strategy: JSON.stringify of the whole column is that literal between `[` and `]` whenever it escapes nothing
 * but `"` and `\`, which holds for strings without control characters or surrogates (JSON writes those as
 * `\n`, `\u…`, which array input would read differently): one native call per column instead of a quote and
 * an escape per element, which cost 3–5 µs a row over 17 columns. A column with such a string takes the
 * element-by-element path. A JSON text (JSON.stringify's own output) never holds a control character or a lone
 * surrogate, so `pushJson` skips the check (a message with emoji keeps the fast path).
 */
const UNSAFE = /[\u0000-\u001f\ud800-\udfff]/;
const ESCAPED = /["\\]/g;

/** A text[] (or any array whose elements are read from text: uuid[], jsonb[]) built element by element. */
export class TextArray {
  private readonly values: (string | null)[] = [];
  private plain = true;

  push(value: string | null): void {
    if (this.plain && value !== null && UNSAFE.test(value)) this.plain = false;
    this.values.push(value);
  }

  /** A JSON text (as JSON.stringify wrote it), e.g. an element of a jsonb[]. */
  pushJson(json: string): void {
    this.values.push(json);
  }

  literal(): string {
    if (this.plain) return `{${JSON.stringify(this.values).slice(1, -1)}}`;
    return `{${this.values.map((v) => (v === null ? 'NULL' : `"${v.replace(ESCAPED, '\\$&')}"`)).join(',')}}`;
  }
}

/** A numeric array (smallint[], float8[], …): finite numbers as JavaScript writes them, NULL for null. */
export class NumberArray {
  private readonly values: (number | null)[] = [];

  push(value: number | null): void {
    if (value !== null && !Number.isFinite(value)) throw new Error(`not a finite number: ${value}`);
    this.values.push(value);
  }

  literal(): string {
    return `{${JSON.stringify(this.values).slice(1, -1)}}`;
  }
}

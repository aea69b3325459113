/**
 * Validation of inputs with superstruct; failures become 400 VALIDATION_FAILED with `data.field` and a
 * message a person can act on: "<field> must be …", naming the allowed values, range, length or form.
 *
 * superstruct's own messages are never passed through: they echo the value received (which may be a
 * secret). The sentence is built from the failure's type and refinement; the numbers of `size`/`min`/`max`
 * and the values of `enums`/`literal` are read from superstruct's message (superstruct 2.x wording, pinned by
 * test/unit/validation-messages.test.ts). A custom refinement or `define` states its rule itself by
 * returning a sentence that starts with "must " (or with the field's own name).
 */
import { coerce, create, define, integer, refine, size, string, type Struct, type StructError, type Failure } from 'superstruct';
import { withoutStack } from '../errors.js';
import { chars } from '../characters.js';

export { chars };

/**
 * Validate (and coerce/default) `value`; throws StructError, which the boundary maps to 400.
 *
 * Without a stack: a StructError is a TypeError, and capturing its stack (through superstruct's nested
 * validators) was the largest single cost of a refused request (src/errors.ts withoutStack says more). The
 * refinements and coercers run here are ours and pure; what they might throw is a failure of the value.
 */
export function parse<T, S>(value: unknown, schema: Struct<T, S>): T {
  return withoutStack(() => create(value ?? {}, schema));
}

/** A string matching `re`; the failure says what it must be ("must be <what>"). */
export function matching(re: RegExp, what: string): Struct<string, null> {
  return refine(string(), 'pattern', (v) => re.test(v) || `must be ${what}`);
}

/**
 * A string matching `re` once blanks around it are gone (as a send's `chatId` is read): an id pasted with a
 * space or a line break reads the same in every field that takes one, and is kept trimmed.
 */
export function trimmedMatching(re: RegExp, what: string): Struct<string, null> {
  return coerce(matching(re, what), string(), (v) => v.trim());
}

/** An integer from `lo` to `hi`; any failure (a string, 1.5, out of range) states the whole rule. */
export function integerIn(lo: number, hi: number): Struct<number, null> {
  return define<number>('integer', (v) => (typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi) || `must be an integer from ${lo} to ${hi}`);
}

/**
 * The one spelling of an integer in a query string, on every route: ASCII digits and nothing else. A blank, a
 * sign, a decimal point, an exponent or an empty value is refused (`%205`, `+5`, `5.0`, `1e3`, `limit=`);
 * leading zeros are read as written (`05` is 5). It is what the queue list always accepted; the chat lists
 * trimmed blanks (found from the outside: `?limit=%205` was 200 there and 400 on the queue list).
 */
export const QUERY_INTEGER = /^[0-9]+$/;

/** An integer query parameter (QUERY_INTEGER) from `lo` to `hi`, as a struct of a query schema. */
export function queryInteger(lo: number, hi: number): Struct<number, null> {
  // any failure states the whole rule (found from the outside: `limit=-1` was "must be an integer", -1 being one)
  return coerce(integerIn(lo, hi), string(), (v) => (QUERY_INTEGER.test(v) ? Number(v) : NaN));
}

/** A string of 1 to `max` characters that is not only blanks. */
export function nonBlank(max: number): Struct<string, null> {
  return refine(chars(1, max), 'nonBlank', (v) => v.trim().length > 0 || 'must not be blank');
}

/** The path of the first failure of a superstruct error, as `data.field` ("options.mentions.0"). */
export function structField(err: StructError): string {
  const failure = err.failures()[0] ?? err;
  return failure.path.length > 0 ? failure.path.join('.') : String(failure.key ?? 'body');
}

/** "<field> must be …" for the first failure of a superstruct error. */
export function structMessage(err: StructError): string {
  const failure = err.failures()[0] ?? err;
  const field = structField(err);
  const own = failure.message;
  const key = failure.key === undefined ? undefined : String(failure.key);
  // a refinement that wrote the whole sentence itself ("maxDelayMs must be at least minDelayMs"): its own
  // name for the field becomes the full path ("quietHours.end must differ from start")
  if (own.startsWith(`${field} `)) return own;
  if (key !== undefined && own.startsWith(`${key} must`)) return `${field}${own.slice(key.length)}`;
  if (failure.type === 'never') return `${field} is not allowed here (unknown field)`;
  if (failure.value === undefined) return `${field} is required`;
  if (own.startsWith('must ')) return `${field} ${own}`;
  return `${field} ${describe(failure)}`;
}

/** What the failed struct accepts, from superstruct's failure. */
function describe(f: Failure): string {
  const m = f.message;
  switch (f.refinement) {
    case undefined:
      return describeType(f);
    case 'size': {
      const r = /between `(-?[\d.e+]+)` and `(-?[\d.e+]+)`/.exec(m) ?? /of `(-?[\d.e+]+)`/.exec(m);
      const lo = Number(r?.[1]);
      const hi = Number(r?.[2] ?? r?.[1]);
      return r ? sized(f.type, lo, hi) : 'has the wrong size';
    }
    case 'min':
    case 'max': {
      const r = /than (or equal to )?(-?[\d.e+]+) but/.exec(m);
      const what = f.type === 'integer' ? 'an integer ' : f.type === 'number' ? 'a number ' : '';
      // superstruct gives an exclusive bound no message: the bound cannot be named here
      if (!r) return `must be a ${f.refinement === 'min' ? 'larger' : 'smaller'} ${f.type === 'integer' ? 'integer' : 'number'}`;
      const [, inclusive, n] = r;
      if (f.refinement === 'min') return `must be ${what}${inclusive ? 'of at least' : 'greater than'} ${n}`;
      return `must be ${what}${inclusive ? 'of at most' : 'less than'} ${n}`;
    }
    case 'nonempty':
      return f.type === 'array' ? 'must have at least one item' : `must be a non-empty ${f.type}`;
    case 'empty':
      return 'must be empty';
    case 'pattern': {
      const r = /matching `\/(.*)\/` but received/s.exec(m);
      return r ? `must match the pattern /${r[1]}/` : 'must match the expected pattern';
    }
    default:
      // a custom refinement that gave no sentence: name it, never echo the value
      return `must be a valid ${f.refinement}`;
  }
}

function sized(type: string, lo: number, hi: number): string {
  const range = lo === hi ? `exactly ${lo}` : lo === 0 ? `at most ${hi}` : `${lo} to ${hi}`;
  switch (type) {
    case 'string':
      return `must be ${range} characters long`;
    case 'array':
      return lo === hi ? `must have exactly ${lo} items` : lo === 0 ? `must have at most ${hi} items` : `must have ${lo} to ${hi} items`;
    case 'integer':
      return lo === hi ? `must be the integer ${lo}` : `must be an integer from ${lo} to ${hi}`;
    case 'number':
      return lo === hi ? `must be ${lo}` : `must be a number from ${lo} to ${hi}`;
    default:
      return `must have a size of ${range}`;
  }
}

/** The value `print`ed by superstruct ("a", 1, true) as a person reads it. */
const unquote = (v: string) => v.trim().replace(/^"(.*)"$/, '$1');

function describeType(f: Failure): string {
  const m = f.message;
  switch (f.type) {
    case 'string':
      return 'must be a string';
    case 'number':
      return 'must be a number';
    case 'integer':
      return 'must be an integer';
    case 'boolean':
      return 'must be true or false';
    case 'object':
    case 'type':
    case 'record':
      return 'must be an object';
    case 'array':
    case 'tuple':
      return 'must be an array';
    case 'date':
      return 'must be a date';
    case 'enums': {
      const r = /one of `(.*)`, but received/s.exec(m);
      return r?.[1] ? `must be one of ${r[1].split(',').map(unquote).join(', ')}` : 'must be one of the allowed values';
    }
    case 'literal': {
      const r = /literal `(.*)`, but received/s.exec(m);
      return r?.[1] ? `must be ${unquote(r[1])}` : 'must be the expected value';
    }
    case 'union': {
      const r = /union of `(.*)`, but received/s.exec(m);
      return r?.[1] ? `must be one of: ${r[1].split(' | ').join(', ')}` : 'must be one of the allowed forms';
    }
    default:
      return `must be a valid ${f.type}`;
  }
}

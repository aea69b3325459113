/**
 * superstruct → JSON Schema (2020-12, the dialect of OpenAPI 3.1), for the struct kinds the routes use: object,
 * type, string, number, integer, boolean, enums, literal, array, record, union, optional, nullable, defaulted,
 * coerce and the refinements size, pattern, min, max, nonempty and the project's own (`matching`, `integerIn`,
 * `nonBlank`, src/http/validate.ts).
 *
 * superstruct keeps a refinement's parameters inside a closure, so they are read the way validate.ts reads them
 * for its messages: the struct is run against probe values and its failures' messages name the bounds, the
 * pattern, or (for the project's own refinements) the rule as a sentence ("must be …"), which becomes the
 * property's `description`. Nothing here is written per route: a struct changed in a route changes the document.
 */
import { Struct, type Failure, type StructError } from 'superstruct';

export type JsonSchema = { [key: string]: unknown };

/** Any superstruct struct, whatever it validates (Struct<T> is invariant in T). */
export interface AnyStruct {
  type: string;
  schema: unknown;
  validate(value: unknown, options?: { coerce?: boolean }): [StructError, undefined] | [undefined, unknown];
  create(value: unknown): unknown;
}

/** Every failure of `value` against `struct` (none when it passes). */
function failures(struct: AnyStruct, value: unknown): Failure[] {
  const [err] = struct.validate(value, { coerce: true });
  return err ? err.failures() : [];
}

const accepts = (struct: AnyStruct, value: unknown): boolean => failures(struct, value).length === 0;

/** The bounds, pattern and rule sentences that the failures of the probe values reveal. */
function refinements(struct: AnyStruct, probes: unknown[]): { lo?: number; hi?: number; pattern?: string; rules: string[]; loExclusive?: boolean; hiExclusive?: boolean } {
  const out: ReturnType<typeof refinements> = { rules: [] };
  for (const probe of probes) {
    for (const f of failures(struct, probe)) {
      if (f.path.length > 0) continue;
      const m = f.message;
      const between = /between `(-?[\d.e+]+)` and `(-?[\d.e+]+)`/.exec(m) ?? /length of `(-?[\d.e+]+)` but/.exec(m);
      const from = /from (-?[\d.e+]+) to (-?[\d.e+]+)/.exec(m);
      const bound = /(greater|less) than (or equal to )?(-?[\d.e+]+) but/.exec(m);
      const pattern = /matching `\/(.*)\/` but received/s.exec(m);
      if (f.refinement === 'size' && between) {
        out.lo = Number(between[1]);
        out.hi = Number(between[2] ?? between[1]);
      } else if (f.refinement === 'nonempty') {
        out.lo = Math.max(out.lo ?? 0, 1);
      } else if ((f.refinement === 'min' || f.refinement === 'max') && bound) {
        const [, dir, inclusive, n] = bound;
        if (dir === 'greater') (out.lo = Number(n)), (out.loExclusive = !inclusive);
        else (out.hi = Number(n)), (out.hiExclusive = !inclusive);
      } else if (pattern?.[1] !== undefined) {
        out.pattern = pattern[1];
      } else if (m.startsWith('must ')) {
        if (from) (out.lo = Number(from[1])), (out.hi = Number(from[2]));
        if (!out.rules.includes(m)) out.rules.push(m);
      }
    }
  }
  return out;
}

const withRules = (schema: JsonSchema, rules: string[]): JsonSchema => (rules.length > 0 ? { ...schema, description: rules.join('; ') } : schema);

/** The JSON Schema of one struct (its optional/nullable/default decorations included). */
export function structSchema(struct: AnyStruct): JsonSchema {
  let schema = core(struct);
  if (struct.type !== 'unknown' && struct.type !== 'any' && accepts(struct, null) && struct.type !== 'literal') {
    const t = schema.type;
    if (typeof t === 'string') schema = { ...schema, type: [t, 'null'] };
    else if (!('type' in schema)) schema = { anyOf: [schema, { type: 'null' }] };
  }
  try {
    const fallback = struct.create(undefined);
    if (fallback !== undefined) schema = { ...schema, default: fallback };
  } catch {
    // no default
  }
  return schema;
}

/** Whether an object property may be left out. */
export const isOptional = (struct: AnyStruct): boolean => accepts(struct, undefined);

function core(struct: AnyStruct): JsonSchema {
  switch (struct.type) {
    case 'object':
    case 'type':
      return objectSchema(struct, struct.type === 'object');
    case 'string': {
      const r = refinements(struct, ['', 'x'.repeat(70_000), '\u0000 ']);
      return withRules(
        {
          type: 'string',
          ...(r.lo !== undefined && r.lo > 0 ? { minLength: r.lo } : {}),
          ...(r.hi !== undefined && r.hi < 70_000 ? { maxLength: r.hi } : {}),
          ...(r.pattern !== undefined ? { pattern: r.pattern } : {}),
        },
        r.rules,
      );
    }
    case 'number':
    case 'integer': {
      const r = refinements(struct, [-1e15, 1e15, 0.5, Number.NaN]);
      return withRules(
        {
          type: struct.type,
          ...(r.lo !== undefined ? (r.loExclusive ? { exclusiveMinimum: r.lo } : { minimum: r.lo }) : {}),
          ...(r.hi !== undefined ? (r.hiExclusive ? { exclusiveMaximum: r.hi } : { maximum: r.hi }) : {}),
        },
        r.rules,
      );
    }
    case 'boolean':
      return { type: 'boolean' };
    case 'enums':
      return { enum: Object.values(struct.schema as Record<string, unknown>) };
    case 'literal':
      return { const: struct.schema };
    case 'array': {
      const element = struct.schema instanceof Struct ? structSchema(struct.schema as unknown as AnyStruct) : {};
      const r = refinements(struct, [[]]);
      return withRules(
        { type: 'array', items: element, ...(r.lo !== undefined && r.lo > 0 ? { minItems: r.lo } : {}), ...(r.hi !== undefined ? { maxItems: r.hi } : {}) },
        r.rules,
      );
    }
    case 'record':
      return { type: 'object', additionalProperties: true };
    case 'union':
      return unionSchema(struct);
    default:
      // unknown, any, or a `define` of the project: the failure of an impossible value states the rule
      return withRules({}, refinements(struct, [Symbol('probe')]).rules);
  }
}

function objectSchema(struct: AnyStruct, exact: boolean): JsonSchema {
  const shape = (struct.schema ?? {}) as Record<string, AnyStruct>;
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const [key, field] of Object.entries(shape)) {
    properties[key] = structSchema(field);
    if (!isOptional(field)) required.push(key);
  }
  // a refinement over the whole object (e.g. minDelayMs ≤ maxDelayMs) states its rule as a sentence
  const rules = refinements(struct, [{}]).rules;
  return withRules({ type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: !exact }, rules);
}

/** superstruct keeps a union's members in a closure; its failure message names their types. */
function unionSchema(struct: AnyStruct): JsonSchema {
  const f = failures(struct, Symbol('probe'))[0];
  const names = /union of `(.*)`, but received/s.exec(f?.message ?? '')?.[1]?.split(' | ') ?? [];
  const simple = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
  const members = names.map((n) => (simple.has(n) ? { type: n } : {}));
  return members.length > 0 && members.every((m) => 'type' in m) ? { anyOf: members } : {};
}

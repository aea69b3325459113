/** Validation of inputs with superstruct; failures become 400 VALIDATION_FAILED with `data.field`. */
import { create, type Struct } from 'superstruct';

/** Validate (and coerce/default) `value`; throws StructError, which the boundary maps to 400. */
export function parse<T, S>(value: unknown, schema: Struct<T, S>): T {
  return create(value ?? {}, schema);
}

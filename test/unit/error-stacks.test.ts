/**
 * Refusals are made without a stack (src/errors.ts withoutStack): a 4xx DomainError and a validation failure
 * of parse() carry none, a 5xx DomainError keeps its own for the log that reports it, and Error.stackTraceLimit
 * is what it was afterwards, whether the validation passed or threw.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StructError, object, string } from 'superstruct';
import { DomainError, withoutStack } from '../../src/errors.js';
import { parse } from '../../src/http/validate.js';

const frames = (err: Error) => (err.stack ?? '').split('\n').filter((l) => l.trimStart().startsWith('at ')).length;

test('a 4xx DomainError has no stack frames; a 5xx one has its own', () => {
  const limit = Error.stackTraceLimit;
  const refused = new DomainError('VALIDATION_FAILED', 'phone must be a string', { field: 'phone' });
  assert.equal(refused.status, 400);
  assert.equal(frames(refused), 0);
  assert.match(refused.stack ?? '', /phone must be a string/);
  const fault = new DomainError('INTERNAL_ERROR', 'boom');
  assert.equal(fault.status, 500);
  assert.ok(frames(fault) > 0, 'a 5xx keeps the frames of where it was made');
  assert.equal(Error.stackTraceLimit, limit);
  assert.ok(frames(new Error('an ordinary error')) > 0, 'other errors keep their stacks');
});

test('parse(): a validation failure has no stack frames, and the stack limit is restored either way', () => {
  const limit = Error.stackTraceLimit;
  const schema = object({ phone: string() });
  assert.deepEqual(parse({ phone: '49151' }, schema), { phone: '49151' });
  assert.equal(Error.stackTraceLimit, limit);
  let caught: unknown;
  try {
    parse({ phone: 12 }, schema);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof StructError);
  assert.equal(frames(caught), 0);
  assert.equal(caught.failures()[0]?.key, 'phone');
  assert.equal(Error.stackTraceLimit, limit);
});

test('withoutStack() restores the limit when what it runs throws', () => {
  const limit = Error.stackTraceLimit;
  assert.throws(() => withoutStack(() => {
    throw new Error('inside');
  }), (err: Error) => frames(err) === 0 && err.message === 'inside');
  assert.equal(Error.stackTraceLimit, limit);
});

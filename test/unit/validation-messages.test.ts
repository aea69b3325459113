/**
 * structMessage over every kind of superstruct failure, with superstruct's own structs: pins the wording
 * of superstruct 2.x that the messages are read from (a superstruct upgrade that changes it fails here), and
 * shows that no message echoes the value.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  array, boolean, date, define, enums, integer, literal, max, min, nonempty, number, object, optional, pattern, record, refine, size,
  string, tuple, union, validate, type Struct,
} from 'superstruct';
import { structField, structMessage, integerIn, matching, nonBlank } from '../../src/http/validate.js';

function messageOf<T, S>(struct: Struct<T, S>, value: unknown): { field: string; message: string } {
  const [err] = validate({ f: value }, object({ f: struct }));
  assert.ok(err, `${JSON.stringify(value)} must fail`);
  return { field: structField(err), message: structMessage(err) };
}

interface Case {
  what: string;
  run: () => { field: string; message: string };
  message: string;
}
const c = <T, S>(what: string, struct: Struct<T, S>, value: unknown, message: string): Case => ({ what, run: () => messageOf(struct, value), message });

const CASES: Case[] = [
  c('string', string(), 1, 'f must be a string'),
  c('number', number(), 'SECRET-1', 'f must be a number'),
  c('integer', integer(), 1.5, 'f must be an integer'),
  c('boolean', boolean(), 'SECRET-1', 'f must be true or false'),
  c('object', object({}), 'SECRET-1', 'f must be an object'),
  c('record', record(string(), string()), 'SECRET-1', 'f must be an object'),
  c('array', array(string()), 'SECRET-1', 'f must be an array'),
  c('tuple', tuple([string()]), 'SECRET-1', 'f must be an array'),
  c('date', date(), 'SECRET-1', 'f must be a date'),
  c('enums of strings', enums(['a', 'b', 'c']), 'SECRET-1', 'f must be one of a, b, c'),
  c('enums of numbers', enums([2, 3]), 7, 'f must be one of 2, 3'),
  c('literal', literal('on'), 'SECRET-1', 'f must be on'),
  c('union', union([string(), number()]), true, 'f must be one of: string, number'),
  c('required', string(), undefined, 'f is required'),
  c('string size range', size(string(), 2, 5), 'SECRET-123', 'f must be 2 to 5 characters long'),
  c('string size exact', size(string(), 4), 'SECRET-1', 'f must be exactly 4 characters long'),
  c('string size max', size(string(), 0, 3), 'SECRET-1', 'f must be at most 3 characters long'),
  c('array size', size(array(string()), 1, 3), [], 'f must have 1 to 3 items'),
  c('integer size', size(integer(), 1, 9), 10, 'f must be an integer from 1 to 9'),
  c('number size', size(number(), -1, 1), 2, 'f must be a number from -1 to 1'),
  c('min', min(integer(), 5), 4, 'f must be an integer of at least 5'),
  // superstruct's exclusive bounds carry no message, so the bound cannot be named (no schema here uses them)
  c('min exclusive', min(number(), 0, { exclusive: true }), -1, 'f must be a larger number'),
  c('max', max(integer(), 5), 6, 'f must be an integer of at most 5'),
  c('nonempty string', nonempty(string()), '', 'f must be a non-empty string'),
  c('nonempty array', nonempty(array(string())), [], 'f must have at least one item'),
  c('pattern', pattern(string(), /^\d+$/), 'SECRET-1', 'f must match the pattern /^\\d+$/'),
  c('refinement with its own sentence', refine(string(), 'x', () => 'must be a nice string'), 'SECRET-1', 'f must be a nice string'),
  c('refinement without one', refine(string(), 'colourful', () => false), 'SECRET-1', 'f must be a valid colourful'),
  c('define without one', define('postcode', () => false), 'SECRET-1', 'f must be a valid postcode'),
  c('integerIn, wrong type', integerIn(1, 9), 'SECRET-1', 'f must be an integer from 1 to 9'),
  c('integerIn, out of range', integerIn(1, 9), 0, 'f must be an integer from 1 to 9'),
  c('matching', matching(/^md_/, 'a media id'), 'SECRET-1', 'f must be a media id'),
  c('nonBlank', nonBlank(10), '   ', 'f must not be blank'),
  c('nonBlank too long', nonBlank(3), 'SECRET-1', 'f must be 1 to 3 characters long'),
];

test('each kind of failure reads "<field> must …" and never carries the value', () => {
  for (const { what, run, message } of CASES) {
    const got = run();
    assert.equal(got.message, message, what);
    assert.equal(got.field, 'f');
    assert.ok(!got.message.includes('SECRET'), `${what}: no value echoed`);
  }
});

test('unknown keys, nested paths, and a refinement that names its own field', () => {
  const [unknown] = validate({ a: 1 }, object({}));
  assert.ok(unknown);
  assert.equal(structMessage(unknown), 'a is not allowed here (unknown field)');
  const [nested] = validate({ o: { list: ['x', 5] } }, object({ o: object({ list: array(string()) }) }));
  assert.ok(nested);
  assert.deepEqual([structField(nested), structMessage(nested)], ['o.list.1', 'o.list.1 must be a string']);
  const pair = refine(object({ lo: integer(), hi: integer() }), 'order', (v, ctx) => v.lo <= v.hi || { path: [...ctx.path, 'hi'], key: 'hi', message: 'hi must be at least lo' });
  const [order] = validate({ p: { lo: 2, hi: 1 } }, object({ p: pair }));
  assert.ok(order);
  assert.deepEqual([structField(order), structMessage(order)], ['p.hi', 'p.hi must be at least lo']);
  const [top] = validate('x', object({ a: optional(string()) }));
  assert.ok(top);
  assert.equal(structMessage(top), 'body must be an object');
});

/** Characters are counted in code points (src/characters.ts), and `chars` fails in the words of superstruct's `size`. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { object, validate } from 'superstruct';
import { characterCount, chars } from '../../src/characters.js';
import { structMessage } from '../../src/http/validate.js';

test('characterCount: code points, a surrogate pair is one', () => {
  assert.equal(characterCount(''), 0);
  assert.equal(characterCount('abc'), 3);
  assert.equal(characterCount('äöü'), 3);
  assert.equal(characterCount('😀'.repeat(100)), 100);
  assert.equal(characterCount('👍🏽'), 2);
  assert.equal(characterCount('👨‍👩‍👧‍👦'), 7);
  assert.equal(characterCount('\ud800x'), 2, 'a lone half counts as one');
});

test('chars: bounds in code points, the message of size', () => {
  const s = object({ f: chars(1, 3) });
  assert.equal(validate({ f: '😀😀😀' }, s)[0], undefined);
  const [err] = validate({ f: '😀😀😀😀' }, s);
  assert.ok(err);
  assert.equal(structMessage(err), 'f must be 1 to 3 characters long');
  const [empty] = validate({ f: '' }, s);
  assert.ok(empty);
  assert.equal(structMessage(empty), 'f must be 1 to 3 characters long');
  const [exact] = validate({ f: 'ab' }, object({ f: chars(4, 4) }));
  assert.ok(exact);
  assert.equal(structMessage(exact), 'f must be exactly 4 characters long');
});

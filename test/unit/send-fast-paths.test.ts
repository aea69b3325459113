/**
 * The v2 send parser's shortcuts (src/http/routes/send-schemas.ts, send.ts) answer exactly what the slow way
 * does: a text body checked without superstruct gives the same send as the schema, every body the schema
 * refuses is still refused with the schema's own failure, and the payload fingerprint of a payload whose
 * keys are already sorted is the one of its sorted copy.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { StructError } from 'superstruct';
import { parseSend, SCHEMAS } from '../../src/http/routes/send-schemas.js';
import { payloadHash } from '../../src/http/routes/send.js';
import { parse, structMessage } from '../../src/http/validate.js';
import { sortedCopyHash } from '../helpers/send-property-gen.js';


const base = { kind: 'text' as const, chatId: '4915112345678@c.us', priority: 5, notBefore: null, ttlSeconds: null };

describe('send fast paths', () => {
  test('the payload fingerprint is the sorted copy\'s, sorted or not, nested, with integer-like keys', () => {
    const payloads: Record<string, unknown>[] = [
      { body: 'hi', chatId: '4915112345678@c.us' },
      { chatId: 'x@c.us', body: 'unsorted' },
      { body: 'b', chatId: 'c', options: { mentions: ['1@c.us'], linkPreview: false } },
      { a: { z: 1, b: [{ y: 1, x: 2 }] }, b: null },
      { '10': 'ten', '2': 'two', a: 1 },
      { body: 'u', chatId: 'c', options: undefined },
      Object.assign(Object.create(null) as Record<string, unknown>, { body: 'no prototype', chatId: 'c' }),
      { when: new Date(0), body: 'not plain' },
    ];
    for (const payload of payloads) {
      const p = { ...base, payload } as unknown as Parameters<typeof payloadHash>[0];
      assert.equal(payloadHash(p), sortedCopyHash(p), JSON.stringify(payload));
    }
  });

  test('a text body: the same send as through the schema; a refused one fails with the schema\'s failure', () => {
    const good = [
      { phone: '4915112345678', message: 'hi' },
      { chatId: '4915112345678@c.us', message: 'hi', priority: 9, ttlSeconds: 60, idempotencyKey: 'key-12345678' },
      { phone: '4915112345678', message: 'hi', notBefore: '2030-01-31T09:00:00Z', options: { linkPreview: false }, extra: 1 },
    ];
    for (const body of good) {
      const viaSchema = parseSend('text', parse(body, SCHEMAS.text), undefined, null);
      assert.deepEqual(parseSend('text', body, undefined, null), viaSchema);
    }
    const bad: unknown[] = [
      { phone: '4915112345678', message: '' },
      { phone: '4915112345678' },
      { phone: 4915112345678, message: 'hi' },
      { phone: '4915112345678', message: 'hi', priority: 0 },
      { phone: '4915112345678', message: 'hi', priority: 2.5 },
      { phone: '4915112345678', message: 'hi', ttlSeconds: 59 },
      { phone: '4915112345678', message: 'hi', notBefore: '2030-01-31' },
      { phone: '4915112345678', message: 'hi', options: [] },
      { phone: '4915112345678', message: 'hi', options: 'none' },
      { phone: 123, chatId: '4915112345678@c.us', message: 'hi' },
      ['not', 'an', 'object'],
    ];
    for (const body of bad) {
      let expected: string | undefined;
      try {
        parse(body, SCHEMAS.text);
      } catch (err) {
        if (err instanceof StructError) expected = structMessage(err);
      }
      assert.ok(expected, `the schema refuses ${JSON.stringify(body)}`);
      assert.throws(() => parseSend('text', body, undefined, null), (err: unknown) => err instanceof StructError && structMessage(err) === expected, JSON.stringify(body));
    }
  });
});

describe('null for a common field means not given', () => {
  const sent = { phone: '4915112345678', message: 'typed client' };
  test('every common field as null parses as if it were absent, with the same fingerprint', () => {
    const nulls = { ...sent, chatId: null, idempotencyKey: null, priority: null, notBefore: null, ttlSeconds: null, options: null };
    const a = parseSend('text', nulls, undefined, null);
    const b = parseSend('text', sent, undefined, null);
    assert.deepEqual(a, b);
    assert.equal(payloadHash(a), payloadHash(b));
    const keyed = parseSend('media', { phone: '4915112345678', mediaUrl: 'https://example.com/a.png', notBefore: null, options: null }, 'order-0000001', null);
    assert.equal(keyed.idempotencyKey, 'order-0000001');
    assert.equal(keyed.notBefore, null);
  });
  test('a null anywhere else is still checked as sent: the poll answers, the message', () => {
    const at = (field: string) => (e: unknown) => e instanceof StructError && e.path[0] === field;
    assert.throws(() => parseSend('poll', { phone: '4915112345678', name: 'q', options: null }, undefined, null), at('options'));
    assert.throws(() => parseSend('text', { ...sent, message: null }, undefined, null), at('message'));
  });
});

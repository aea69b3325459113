/**
 * Property tests of the send parser's shortcuts (src/http/routes/send-schemas.ts plainText/commonValid, the typed
 * text send; send.ts payloadHash/isSorted) against the slow way they replace, over seeded random inputs:
 * - a v2 text body (valid or invalid in every field, as JSON.parse gives it) parses to exactly what the schema
 *   path gives (the same send, field order included) or fails exactly as it does (the same error, field and
 *   sentence); the v1 parser (which hands its fields to the v2 parser) answers the same as it would through
 *   the schema path, and so does a v1 send-bulk entry;
 * - the payload fingerprint is the one of the payload's sorted copy, for random nested payloads with
 *   integer-like keys ("10", "2"), own "__proto__" keys from JSON.parse, null-prototype objects and arrays
 *   of objects.
 * A failure prints its seed and case number; PROPERTY_SEED=<n> repeats a run.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { StructError } from 'superstruct';
import { idempotencyKeyOf, parseSend, resolveTarget, SCHEMAS, withoutNulls, type ParsedSend } from '../../src/http/routes/send-schemas.js';
import { payloadHash } from '../../src/http/routes/send.js';
import { parse, structField, structMessage } from '../../src/http/validate.js';
import { checkSend } from '../../src/queue/payload.js';
import { DomainError } from '../../src/errors.js';
import { V1Error } from '../../src/http/errors.js';
import { parseBulkEntry, parseV1Send } from '../../src/http/routes/legacy-parse.js';
import { Rng, randomHeader, randomJson, randomOwnNumber, randomTextBody, sortedCopyHash } from '../helpers/send-property-gen.js';

const SEED = Number(process.env.PROPERTY_SEED ?? 20261123);
const CASES = 4000;

type Outcome = { ok: true; value: string } | { ok: false; error: string };

/** What a parse answered, as comparable text: the value (with its key order) or the error's class, code, field, sentence. */
function outcome(f: () => unknown): Outcome {
  try {
    return { ok: true, value: JSON.stringify(f()) };
  } catch (err) {
    if (err instanceof StructError) return { ok: false, error: `struct ${structField(err)}: ${structMessage(err)}` };
    if (err instanceof DomainError) return { ok: false, error: `domain ${err.code} ${JSON.stringify(err.data)}: ${err.message}` };
    if (err instanceof V1Error) return { ok: false, error: `v1 ${err.status}: ${err.message}` };
    throw err;
  }
}

/**
 * The options whitelist of a text send (the same code on both ways, reached after the schema accepted the body):
 * asked through a body whose other fields are fixed and valid.
 */
function optionsOf(raw: unknown): Record<string, unknown> | undefined {
  if (raw === undefined || raw === null) return undefined;
  const p = parseSend('text', { chatId: '4915199999999@c.us', message: 'm', options: raw }, undefined, null).payload as { options?: Record<string, unknown> };
  return p.options;
}

/** parseSend('text', …) as it was before the shortcuts: every body through the schema, the send checked against its kind. */
function viaSchema(sent: unknown, header: string | undefined, own: string | null): ParsedSend {
  // a common field sent as null means not given, on either way
  const body = withoutNulls(sent, false);
  const idempotencyKey = idempotencyKeyOf(body, header);
  const b = parse(body, SCHEMAS.text);
  const target = resolveTarget(b, own);
  const payload: Record<string, unknown> = { body: b.message, chatId: target.chatId };
  const options = optionsOf(b.options);
  if (options !== undefined) payload.options = options;
  return {
    chatId: target.chatId,
    phone: target.phone,
    priority: b.priority ?? 5,
    notBefore: b.notBefore ? Date.parse(b.notBefore) : null,
    ttlSeconds: b.ttlSeconds ?? null,
    idempotencyKey,
    warnings: [],
    ...checkSend('text', payload),
  };
}


function eachCase(label: string, run: (rng: Rng, i: number) => void): void {
  const rng = new Rng(SEED);
  for (let i = 0; i < CASES; i++) {
    try {
      run(rng, i);
    } catch (err) {
      if (err instanceof assert.AssertionError) err.message = `${label}: PROPERTY_SEED=${SEED}, case ${i}: ${err.message}`;
      throw err;
    }
  }
}

describe('send fast paths, property', () => {
  test('a v2 text body parses (or fails) exactly as through the schema', () => {
    let accepted = 0;
    eachCase('v2 text', (rng) => {
      const text = randomTextBody(rng);
      const header = randomHeader(rng);
      const own = randomOwnNumber(rng);
      const fast = outcome(() => parseSend('text', JSON.parse(text) as unknown, header, own));
      const slow = outcome(() => viaSchema(JSON.parse(text) as unknown, header, own));
      assert.deepEqual(fast, slow, `body ${text.slice(0, 300)}, header ${String(header)}, own ${String(own)}`);
      if (fast.ok) accepted++;
    });
    // both kinds of answer are exercised (not a run of only failures)
    assert.ok(accepted > CASES / 8 && accepted < CASES - CASES / 8, `accepted ${accepted} of ${CASES}`);
  });

  test('a v1 text body and a send-bulk entry: an answer or a v1 error, nothing else', () => {
    // the v1 parser hands its picked fields to parseSend, whose equality with the schema is the test above;
    // here: whatever the body, the v1 parser answers or fails as v1 does (outcome rethrows any other error)
    eachCase('v1 text', (rng) => {
      const body = JSON.parse(randomTextBody(rng)) as unknown;
      const own = randomOwnNumber(rng);
      outcome(() => parseV1Send('text', body, own));
      outcome(() => parseBulkEntry(body, own));
    });
  });

  test('the payload fingerprint is the sorted copy\'s for random nested payloads', () => {
    eachCase('payloadHash', (rng, i) => {
      const payload = randomJson(rng, 4, i % 7 === 0);
      const p = { kind: 'text' as const, chatId: '4915112345678@c.us', priority: 1 + (i % 9), notBefore: i % 2 ? null : 1_900_000_000_000, ttlSeconds: null, payload } as unknown as Parameters<typeof payloadHash>[0];
      assert.equal(payloadHash(p), sortedCopyHash(p), JSON.stringify(payload).slice(0, 300));
    });
  });
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { signBody, verifyWebhook, type VerifyInput, type VerifyResult } from '../../src/webhooks/sign.js';

const secret = 'whsec_0123456789abcdef';
const body = '{"v":2,"eventId":"ev_1","event":"test","instanceId":"i","timestamp":1,"data":{"message":"héllo"}}';
const ts = 1767607200000;

/** The verification snippet of docs/webhooks.md, loaded as the module an integrator would copy. */
type Snippet = (input: VerifyInput) => VerifyResult;
let dir = '';
let snippet: Snippet;
before(async () => {
  const doc = await readFile(path.resolve('docs/webhooks.md'), 'utf8');
  const code = /<!-- verify-snippet[^>]*-->\s*```js\n([\s\S]*?)```/.exec(doc)?.[1];
  assert.ok(code, 'docs/webhooks.md has the verify snippet');
  dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-snippet-'));
  const file = path.join(dir, 'verify.mjs');
  await writeFile(file, code);
  const mod = (await import(pathToFileURL(file).href)) as { verifyWebhook: Snippet };
  snippet = mod.verifyWebhook;
});
after(() => rm(dir, { recursive: true, force: true }));

test('signBody: HMAC-SHA256 of the exact body, and of `<ts>.<body>`', () => {
  const h = signBody(secret, body, ts);
  const v1 = createHmac('sha256', secret).update(Buffer.from(body, 'utf8')).digest('hex');
  const v2 = createHmac('sha256', secret).update(`${ts}.${body}`, 'utf8').digest('hex');
  assert.equal(h['X-Webhook-Signature'], `sha256=${v1}`);
  assert.equal(h['X-Webhook-Signature-V2'], `t=${ts},v1=${v2}`);
  assert.deepEqual(signBody(secret, Buffer.from(body), ts), h, 'string and bytes sign alike');
});

test('the gateway verifier and the documented snippet agree on every case', () => {
  const good = signBody(secret, body, ts);
  const lower = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
  const cases: Array<[string, VerifyInput, VerifyResult]> = [
    ['valid, node headers', { rawBody: body, headers: lower({ ...good }), secret, now: ts + 1000 }, { ok: true, timestamp: ts }],
    ['valid, fetch Headers', { rawBody: Buffer.from(body), headers: new Headers({ ...good }), secret, now: ts }, { ok: true, timestamp: ts }],
    ['tampered body', { rawBody: body.replace('héllo', 'hello'), headers: lower({ ...good }), secret, now: ts }, { ok: false, reason: 'bad X-Webhook-Signature' }],
    ['wrong secret', { rawBody: body, headers: lower({ ...good }), secret: 'another-secret-0000', now: ts }, { ok: false, reason: 'bad X-Webhook-Signature' }],
    ['stale', { rawBody: body, headers: lower({ ...good }), secret, now: ts + 5 * 60_000 + 1 }, { ok: false, reason: 'stale X-Webhook-Signature-V2 timestamp' }],
    ['custom tolerance', { rawBody: body, headers: lower({ ...good }), secret, now: ts + 20 * 60_000, toleranceMs: 30 * 60_000 }, { ok: true, timestamp: ts }],
    ['v2 missing', { rawBody: body, headers: lower({ 'X-Webhook-Signature': good['X-Webhook-Signature'] }), secret, now: ts }, { ok: false, reason: 'missing or malformed X-Webhook-Signature-V2' }],
    ['v2 t moved', { rawBody: body, headers: lower({ ...good, 'X-Webhook-Signature-V2': good['X-Webhook-Signature-V2'].replace(`t=${ts}`, `t=${ts + 1}`) }), secret, now: ts }, { ok: false, reason: 'bad X-Webhook-Signature-V2' }],
    ['v2 rotated secrets', { rawBody: body, headers: lower({ ...good, 'X-Webhook-Signature-V2': `t=${ts},v1=${'0'.repeat(64)},${good['X-Webhook-Signature-V2'].split(',')[1]}` }), secret, now: ts }, { ok: true, timestamp: ts }],
    ['v1 odd-length suffix', { rawBody: body, headers: lower({ ...good, 'X-Webhook-Signature': `${good['X-Webhook-Signature']}0` }), secret, now: ts }, { ok: false, reason: 'bad X-Webhook-Signature' }],
    ['v1 missing', { rawBody: body, headers: {}, secret, now: ts }, { ok: false, reason: 'bad X-Webhook-Signature' }],
  ];
  for (const [name, input, expected] of cases) {
    assert.deepEqual(verifyWebhook(input), expected, `gateway: ${name}`);
    assert.deepEqual(snippet(input), expected, `snippet: ${name}`);
  }
});

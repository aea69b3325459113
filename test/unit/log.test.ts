import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger, registerSecret } from '../../src/log.js';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({ write(chunk: Buffer, _e, cb) { lines.push(chunk.toString()); cb(); } });
  return { lines, stream };
}

test('API keys, secrets, QR and pairing codes never reach a log line', () => {
  const { lines, stream } = capture();
  const log = createLogger({ level: 'info', stream });
  const key = 'wapi_demo_Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA';
  registerSecret('mgwadm_supersecret_token_value');
  log.info({ data: { qr: '2@abcdefQRSTRING', code: 'ABCD-1234', secret: 'whsec_123456789', apiKey: key } }, `request with ${key}`);
  log.info({ payload: { nested: { authorization: 'Bearer x' } } }, 'admin mgwadm_supersecret_token_value used');
  log.error({ err: new Error(`bad key ${key}`) }, 'failure');
  const out = lines.join('');
  for (const secret of [key, '2@abcdefQRSTRING', 'ABCD-1234', 'whsec_123456789', 'Bearer x', 'mgwadm_supersecret_token_value']) {
    assert.ok(!out.includes(secret), `log contains ${secret}`);
  }
  assert.match(out, /wapi_\[redacted\]/);
  assert.equal(lines.length, 3);
});

test('many registered secrets (one per webhook) are all masked, wherever they sit in a line', () => {
  const { lines, stream } = capture();
  const log = createLogger({ level: 'info', stream });
  const secrets = Array.from({ length: 40 }, (_, i) => `whsec_many_${String(i).padStart(3, '0')}_${'x'.repeat(i % 7)}tail`);
  for (const s of secrets) registerSecret(s);
  // next to each other, at the start of a string, inside words, and one secret that starts another's text
  log.info({ note: `${secrets[0]}${secrets[39]} mid${secrets[17]}dle ${secrets[5]}` }, `${secrets[38]} and ${secrets[38]}!`);
  const out = lines.join('');
  for (const s of secrets) assert.ok(!out.includes(s), `log contains ${s}`);
  assert.match(out, /\[redacted\]\[redacted\] mid\[redacted\]dle \[redacted\]/);
  assert.match(out, /"msg":"\[redacted\] and \[redacted\]!"/);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { spawnSync } from 'node:child_process';
import { BatchedLines, createLogger, maskClientText, maskClientValue, redact, registerSecret } from '../../src/log.js';

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

/** Every character of `s` at the indexes given, percent-encoded (`lower`: lower-case hex). */
const encodeAt = (s: string, at: readonly number[], lower = false) =>
  [...s].map((c, i) => (at.includes(i) ? `%${c.charCodeAt(0).toString(16).padStart(2, '0')[lower ? 'toLowerCase' : 'toUpperCase']()}` : c)).join('');

test('a secret in client text is masked in every spelling a server decodes to it', () => {
  const key = 'wapi_demo_Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA';
  const admin = 'mgwadm_spelled_token_value_0123';
  registerSecret(admin);
  for (const [secret, marker] of [[key, '/x/wapi_[redacted]/y'], [admin, '/x/[redacted]/y']] as const) {
    const spellings = [
      encodeAt(secret, [4]), // the underscore
      encodeAt(secret, [0], true),
      encodeAt(secret, [0, 1, 2, 3, 4, 5, secret.length - 1], true),
      encodeAt(secret, [2]).replace(/%(.)(.)/, (_m, a: string, b: string) => `%${a.toLowerCase()}${b.toUpperCase()}`),
      encodeAt(secret, [0]).replace('%', '%25'), // a secret only once decoded twice
      encodeAt(secret, [0]).replace('%', '%2525'),
      `${secret.slice(0, 12)}${encodeAt(secret.slice(12), [0, 5])}`, // a plain head, an encoded tail
      encodeAt(secret, [...secret].map((_c, i) => i)), // every character
    ];
    for (const spelled of spellings) assert.equal(maskClientText(`/x/${spelled}/y`), marker, spelled);
    assert.equal(maskClientText(`/x/${secret}/y`), marker, 'as written');
  }
  // a multi-byte character beside it, decoded as UTF-8
  assert.equal(maskClientText(`/%E2%82%AC${encodeAt(key, [4])}`), '/€wapi_[redacted]');
});

test('client text with no secret is given back as written; malformed escapes never throw', () => {
  for (const text of ['/api/v2/messages/abc', '/a%20b/%41', '/%zz/%4/%E0%A4%A/%', '/%ff%fe%00', '/wapi%5F', '/wapi%5Fdemo%5F']) {
    assert.equal(maskClientText(text), text);
  }
  // a hostile nesting of %25 costs a bounded number of rounds
  const hostile = `/%${'25'.repeat(5000)}41`;
  const started = performance.now();
  assert.equal(maskClientText(hostile), hostile);
  assert.ok(performance.now() - started < 200, 'bounded work');
});

test('the request log\'s path and the serialized fields mask the encoded spellings; error answers\' values too', () => {
  const { lines, stream } = capture();
  const log = createLogger({ level: 'info', stream });
  const key = 'wapi_demo_Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA';
  const spelled = encodeAt(key, [4]);
  log.info({ path: `/api/v2/messages/${spelled}` }, 'request');
  log.info({ path: '/plain%20path' }, 'request');
  log.info({ data: { id: spelled } }, 'data');
  log.error({ err: new Error(`no route for GET /${spelled}`) }, 'failure');
  const records = lines.map((l) => JSON.parse(l) as { path?: string; data?: { id: string }; err?: { message: string } });
  assert.equal(records[0]?.path, '/api/v2/messages/wapi_[redacted]');
  assert.equal(records[1]?.path, '/plain%20path');
  assert.equal(records[2]?.data?.id, 'wapi_[redacted]');
  assert.equal(records[3]?.err?.message, 'no route for GET /wapi_[redacted]');
  assert.equal(redact(`a ${key}`), 'a wapi_[redacted]');
  assert.deepEqual(maskClientValue({ error: `no route for GET /${spelled}`, code: 'NOT_FOUND', data: { msgId: key, n: 3, list: [spelled, null] } }), {
    error: 'no route for GET /wapi_[redacted]',
    code: 'NOT_FOUND',
    data: { msgId: 'wapi_[redacted]', n: 3, list: ['wapi_[redacted]', null] },
  });
});

test('the batched writer: the lines of one turn go out in one write, in order, right after the turn', async () => {
  const writes: string[] = [];
  const lines = new BatchedLines({ write: (chunk: string) => writes.push(chunk) });
  const log = createLogger({ level: 'info', stream: lines });
  for (let i = 0; i < 50; i++) log.info({ i }, 'request');
  assert.equal(writes.length, 0, 'nothing is written inside the turn');
  await new Promise((r) => setImmediate(r));
  assert.equal(writes.length, 1, 'one write for the turn');
  const records = (writes[0] as string).trimEnd().split('\n').map((l) => JSON.parse(l) as { i: number });
  assert.deepEqual(records.map((r) => r.i), Array.from({ length: 50 }, (_, i) => i));
  log.info({ i: 50 }, 'next turn');
  await new Promise((r) => setImmediate(r));
  assert.equal(writes.length, 2, 'the next turn writes its own');
});

test('the batched writer writes at once when it holds its maximum', () => {
  const writes: string[] = [];
  const lines = new BatchedLines({ write: (chunk: string) => writes.push(chunk) }, 100);
  lines.write('a'.repeat(60));
  assert.equal(writes.length, 0);
  lines.write('b'.repeat(60));
  assert.deepEqual(writes, [`${'a'.repeat(60)}${'b'.repeat(60)}`]);
  lines.flush();
  assert.equal(writes.length, 1, 'nothing held, nothing written');
});

test('the process\'s log lines on stdout survive process.exit() and an uncaught exception in the same turn', async () => {
  const logModule = new URL('../../src/log.ts', import.meta.url).href;
  for (const [end, code] of [['process.exit(3)', 3], ['throw new Error("boom")', 1]] as const) {
    const script = `const { createLogger } = await import(${JSON.stringify(logModule)});
const log = createLogger({ level: 'info' });
for (let i = 0; i < 1000; i++) log.info({ i }, 'line');
${end};`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, code, r.stderr);
    const got = r.stdout.trimEnd().split('\n').map((l) => (JSON.parse(l) as { i: number }).i);
    assert.deepEqual(got, Array.from({ length: 1000 }, (_, i) => i), `every line, in order, after ${end}`);
  }
});

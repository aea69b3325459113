import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { spawnSync } from 'node:child_process';
import { BatchedLines, createLogger, registerSecret } from '../../src/log.js';

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

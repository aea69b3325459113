import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import pg from 'pg';
import { DomainError } from '../../src/errors.js';
import { DriverError } from '../../src/drivers/contract.js';
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

/** A real refused connection, as the store's or a webhook's would fail: a port that was just closed. */
async function refusedConnection(): Promise<Error> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return new Promise((resolve) => net.connect(port, '127.0.0.1').on('error', resolve));
}

test('error codes reach the log line; pairing codes and every other code stay redacted', async () => {
  const { lines, stream } = capture();
  const log = createLogger({ level: 'info', stream });
  const refused = await refusedConnection();
  // a pg error as pg-protocol builds it from the server's ErrorResponse (severity, code, routine, …)
  const terminated = Object.assign(new pg.DatabaseError('terminating connection due to administrator command', 116, 'error'), {
    severity: 'FATAL', code: '57P01', routine: 'ProcessInterrupts',
  });
  log.error({ err: refused }, 'store unreachable');
  log.error({ err: new DomainError('INSTANCE_UNREACHABLE', 'the instance did not answer') }, 'call failed');
  log.error({ err: terminated }, 'store session ended');
  log.error({ err: Object.assign(new Error('bad header'), { code: 'ERR_INVALID_CHAR' }) }, 'node');
  log.error({ err: Object.assign(new Error('socket'), { code: 'UND_ERR_SOCKET' }) }, 'undici');
  log.info({ data: { code: 'ECONNRESET', signal: 'SIGTERM' } }, 'errno in data');
  log.info({ data: { code: 'SIGKILL' } }, 'signal in data');
  log.info({ data: { code: 'QUEUE_FULL' } }, 'domain code in data');
  log.warn({ err: new DriverError('the call timed out', 'TIMEOUT', false) }, 'driver error');
  // pairing codes and login codes, in any spelling, and codes that name nothing known
  log.info({ data: { code: '4F7K-9XQ3' } }, 'dashed pairing code');
  log.info({ data: { code: 'ABCD1234' } }, 'pairing code');
  log.info({ data: { event: 'code', data: { code: 'K7QM9XD2' } } }, 'code event');
  log.info({ payload: { name: 'code', code: 'ZX2W-PL8R' } }, 'code event payload');
  log.info({ data: { code: '57P01' } }, 'a SQLSTATE outside a pg error');
  log.error({ err: Object.assign(new Error('not from pg'), { code: '4F7K9' }) }, 'five characters without severity and routine');
  log.error({ err: Object.assign(new Error('pairing'), { code: 'ABCD-1234' }) }, 'pairing code on an error');
  log.info({ data: { code: 123456 } }, 'a numeric code');
  log.info({ data: { code: 'econnrefused' } }, 'another spelling');
  // an error without a code (pg-pool's own, when no connection came free in time): no code, not a hidden one
  log.warn({ err: new Error('timeout exceeded when trying to connect') }, 'pool timeout');
  log.info({ data: { code: null, token: null } }, 'empty secret-named fields');
  const records = lines.map((l) => JSON.parse(l) as { msg: string; err?: { code?: unknown }; data?: Record<string, unknown>; payload?: Record<string, unknown> });
  const codeOf = (msg: string) => {
    const r = records.find((x) => x.msg === msg);
    assert.ok(r, msg);
    return r.err?.code ?? r.data?.code ?? r.payload?.code ?? (r.data?.data as { code?: unknown } | undefined)?.code;
  };
  assert.equal(codeOf('store unreachable'), 'ECONNREFUSED');
  assert.equal(codeOf('call failed'), 'INSTANCE_UNREACHABLE');
  assert.equal(codeOf('store session ended'), '57P01');
  assert.equal(codeOf('node'), 'ERR_INVALID_CHAR');
  assert.equal(codeOf('undici'), 'UND_ERR_SOCKET');
  assert.equal(codeOf('errno in data'), 'ECONNRESET');
  assert.equal(codeOf('signal in data'), 'SIGKILL');
  assert.equal(codeOf('domain code in data'), 'QUEUE_FULL');
  assert.equal(codeOf('driver error'), 'TIMEOUT');
  const pool = lines.find((l) => l.includes('"msg":"pool timeout"')) ?? '';
  assert.doesNotMatch(pool, /"code"/, pool);
  assert.deepEqual(records.find((x) => x.msg === 'empty secret-named fields')?.data, { code: null, token: null });
  for (const msg of ['dashed pairing code', 'pairing code', 'code event', 'code event payload', 'a SQLSTATE outside a pg error',
    'five characters without severity and routine', 'pairing code on an error', 'a numeric code', 'another spelling']) {
    assert.equal(codeOf(msg), '[redacted]', msg);
  }
  const out = lines.join('');
  for (const secret of ['4F7K-9XQ3', 'ABCD1234', 'K7QM9XD2', 'ZX2W-PL8R', '4F7K9', 'ABCD-1234', '123456']) {
    assert.ok(!out.includes(secret), `log contains ${secret}`);
  }
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

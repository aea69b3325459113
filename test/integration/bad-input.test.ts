/**
 * A client's bad bytes are a 4xx in the envelope, never a 5xx, and nothing is logged as an error for them
 * (issue 13, finding 2): broken gzip/deflate, a body that inflates past the limit, keys that reach prototypes,
 * NUL characters (PostgreSQL refuses them in text and JSON), deep nesting, bodies that are not JSON, charsets
 * other than UTF-8, a cursor past bigint, an aborted request, and a lower-case `bearer`.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { gzipSync, deflateSync } from 'node:zlib';
import { settle, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { MAX_OBJECT_MEMBERS } from '../../src/http/json-text.js';

let t: TestGateway;
let key = '';
const logLines: string[] = [];
const RECIPIENT = '4915112340001';

before(async () => {
  t = await startTestGateway({ label: 'bad_input', simulated: true, logLines });
  key = (await t.createInstance('badinput', { settings: { quietHours: null } })).apiKey;
});
after(async () => {
  await t?.stop();
});

async function raw(method: string, path: string, body: Buffer | string | undefined, headers: Record<string, string>) {
  const res = await fetch(`${t.url}${path}`, { method, headers: { authorization: `Bearer ${key}`, ...headers }, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as { success: boolean; code?: string; error?: string; data?: Record<string, unknown> } };
}
const JSON_CT = { 'content-type': 'application/json' };
const send = (body: Buffer | string, headers: Record<string, string> = JSON_CT) => raw('POST', '/api/v2/send-message', body, headers);

function refused(r: { status: number; text: string; body: { success: boolean; code?: string; data?: Record<string, unknown> } }, status: number, code: string, field?: string) {
  assert.equal(r.status, status, r.text);
  assert.equal(r.body.success, false);
  assert.equal(r.body.code, code, r.text);
  if (field !== undefined) assert.equal(r.body.data?.field, field, r.text);
}

test('Content-Encoding: gzip and deflate are read; broken bytes are 400, an unknown encoding 415', async () => {
  const body = JSON.stringify({ phone: RECIPIENT, message: 'compressed' });
  assert.equal((await send(gzipSync(body), { ...JSON_CT, 'content-encoding': 'gzip' })).status, 202);
  assert.equal((await send(deflateSync(body), { ...JSON_CT, 'content-encoding': 'deflate' })).status, 202);
  // the answer says the bytes did not decode (it said the request was aborted: found from the outside)
  const gz = gzipSync(body);
  for (const [bytes, encoding] of [['definitely not gzip', 'gzip'], [gz.subarray(0, gz.length - 6), 'gzip'], ['definitely not deflate', 'deflate']] as const) {
    const r = await send(bytes, { ...JSON_CT, 'content-encoding': encoding });
    refused(r, 400, 'VALIDATION_FAILED', 'body');
    assert.match(String(r.body.error), new RegExp(`could not be decoded with Content-Encoding ${encoding}`), r.text);
  }
  refused(await send(body, { ...JSON_CT, 'content-encoding': 'compress' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
});

test('a transfer coding besides chunked is 415 (Node undoes only the chunked framing), chunked alone is read', async () => {
  // found from the outside: `Transfer-Encoding: gzip, chunked` was read as if it were not coded
  const gz = gzipSync(JSON.stringify({ phone: RECIPIENT, message: 'transfer coded' }));
  const head = (te: string) => `POST /api/v2/send-message HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: ${te}\r\n\r\n`;
  const chunked = (b: Buffer) => Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n0\r\n\r\n')]);
  assert.deepEqual(await piecewise([[head('gzip, chunked'), chunked(gz)]], 1), [415]);
  assert.deepEqual(await piecewise([[head('chunked'), chunked(Buffer.from(JSON.stringify({ phone: RECIPIENT, message: 'plain chunked' })))]], 1), [202]);
});

test('a body that inflates past 10 MB is 413 with data.maxBytes', async () => {
  const bomb = gzipSync(Buffer.concat([Buffer.from('{"message":"'), Buffer.alloc(11 * 1024 * 1024, 0x61), Buffer.from('"}')]));
  const r = await send(bomb, { ...JSON_CT, 'content-encoding': 'gzip' });
  refused(r, 413, 'PAYLOAD_TOO_LARGE');
  assert.equal(r.body.data?.maxBytes, 10 * 1024 * 1024);
});

test('keys that reach prototypes are refused, naming the field', async () => {
  refused(await send(`{"phone":"${RECIPIENT}","message":"x","__proto__":{"admin":true}}`), 400, 'VALIDATION_FAILED', '__proto__');
  refused(await send(`{"phone":"${RECIPIENT}","message":"x","options":{"constructor":{"prototype":{}}}}`), 400, 'VALIDATION_FAILED', 'options.constructor');
  refused(await send(`{"phone":"${RECIPIENT}","message":"x","options":{"mentions":[{"prototype":1}]}}`), 400, 'VALIDATION_FAILED', 'options.mentions.0.prototype');
});

test('a NUL character in any text field is 400 naming it, on v2 and v1; nothing is queued', async () => {
  const before = await t.db.pool.query('SELECT count(*)::int AS n FROM jobs');
  refused(await send(JSON.stringify({ phone: RECIPIENT, message: 'a\u0000b' })), 400, 'VALIDATION_FAILED', 'message');
  refused(await raw('POST', '/api/send-message', JSON.stringify({ phone: RECIPIENT, message: 'a\u0000b' }), JSON_CT), 400, 'VALIDATION_FAILED', 'message');
  refused(await send(JSON.stringify({ phone: RECIPIENT, message: 'x', options: { mentions: ['a\u0000@c.us'] } })), 400, 'VALIDATION_FAILED', 'options.mentions.0');
  refused(await raw('GET', '/api/v2/chats/abc%00def/messages', undefined, {}), 400, 'VALIDATION_FAILED', 'path');
  refused(await raw('GET', '/api/v2/queue/items?state=queued%00', undefined, {}), 400, 'VALIDATION_FAILED', 'query');
  refused(await raw('POST', '/api/send-bulk', JSON.stringify({ messages: [{ phone: RECIPIENT, message: 'b' }], note: 'a\u0000b' }), JSON_CT), 400, 'VALIDATION_FAILED', 'note');
  const after = await t.db.pool.query('SELECT count(*)::int AS n FROM jobs');
  assert.deepEqual(after.rows, before.rows);
});

test('a path with a malformed percent escape is 400 naming its path parameter, on every route family; a secret in it is never echoed', async () => {
  const as = (auth: string | null) => async (method: string, path: string) => {
    const res = await fetch(`${t.url}${path}`, { method, headers: auth === null ? {} : { authorization: `Bearer ${auth}` } });
    const text = await res.text();
    return { status: res.status, text, body: JSON.parse(text) as { success: boolean; code?: string; data?: Record<string, unknown> } };
  };
  const api = as(key);
  const admin = as(t.adminToken);
  const instanceId = (await t.createInstance('malformed-paths', { link: false })).instance.id;
  // a `%` without two hex digits, a UTF-8 sequence cut short, bytes that are no UTF-8
  for (const escape of ['%ZZ', '%E0%A4%A', '%C3%28', '%ff', 'ab%4']) {
    // named as the first route of the method that takes the path names it (a job or a message: `:id`, docs/api.md)
    refused(await api('GET', `/api/v2/messages/${escape}`), 400, 'VALIDATION_FAILED', 'id');
    refused(await api('GET', `/api/v2/messages/${escape}/media`), 400, 'VALIDATION_FAILED', 'msgId');
    refused(await api('PUT', `/api/v2/messages/${escape}/reaction`), 400, 'VALIDATION_FAILED', 'msgId');
    refused(await api('GET', `/api/v2/chats/abc${escape}/messages`), 400, 'VALIDATION_FAILED', 'chatId');
    refused(await api('GET', `/api/check-number/${escape}`), 400, 'VALIDATION_FAILED', 'phone');
    refused(await admin('GET', `/admin/v1/instances/${escape}`), 400, 'VALIDATION_FAILED', 'id');
    refused(await admin('POST', `/admin/v1/instances/${instanceId}/webhook/deliveries/${escape}/redeliver`), 400, 'VALIDATION_FAILED', 'eventId');
    // no route's parameter holds it: the path as a whole
    refused(await admin('GET', `/debug/actors${escape}`), 400, 'VALIDATION_FAILED', 'path');
    refused(await api('GET', `/api/v2/mess${escape}/x`), 400, 'VALIDATION_FAILED', 'path');
    // before a credential is looked at, as a NUL in the path is
    refused(await as(null)('GET', `/api/v2/contacts/${escape}`), 400, 'VALIDATION_FAILED', 'contactId');
  }
  // well-formed escapes are decoded for the route as before
  const decoded = await api('GET', '/api/v2/messages/wq_abc%41');
  refused(decoded, 404, 'JOB_NOT_FOUND');
  assert.equal(decoded.body.data?.jobId, 'wq_abcA', decoded.text);
  // a secret beside a malformed escape: refused, and neither the answer nor the log line holds it
  const before = logLines.length;
  const withKey = await api('GET', `/api/v2/messages/${key.replace('_', '%5F')}%ZZ`);
  refused(withKey, 400, 'VALIDATION_FAILED', 'id');
  await settle();
  for (const [what, text] of [['answer', withKey.text], ['log', logLines.slice(before).join('')]] as const) {
    assert.ok(!text.includes(key.slice(5)), `the ${what} holds the key: ${text}`);
  }
  assert.match(logLines.slice(before).join(''), /wapi_\[redacted\]%ZZ/);
});

test('a query with a malformed percent escape is 400 naming its parameter, on every route family and before a credential; nothing of it is echoed', async () => {
  // found from the outside: a malformed escape was read as written (`%ZZ`), or as U+FFFD for bytes that are no
  // UTF-8, so a route saw a value the client did not mean (the sandbox's ledger read `since=%ZZ` as no bound at
  // all) or refused an unknown parameter by echoing its raw name
  const as = (auth: string | null) => async (method: string, path: string) => {
    const res = await fetch(`${t.url}${path}`, { method, headers: auth === null ? {} : { authorization: `Bearer ${auth}` } });
    const text = await res.text();
    return { status: res.status, text, body: JSON.parse(text) as { success: boolean; code?: string; error?: string; data?: Record<string, unknown> } };
  };
  const api = as(key);
  const admin = as(t.adminToken);
  const instanceId = (await t.createInstance('malformed-queries', { link: false })).instance.id;
  const texts = new Set<string>();
  const percentRule = /is not valid percent-encoding: a % must be followed by two hex digits, and the escapes must spell UTF-8/;
  // a `%` without two hex digits, a UTF-8 sequence cut short, bytes that are no UTF-8, a `%` at the end
  for (const escape of ['%ZZ', '%E0%A4%A', '%C3%28', '%ff', 'ab%4', 'ab%']) {
    const cases: [ReturnType<typeof as>, string, string, string][] = [
      // routes that ignore parameters they do not read, routes that refuse them, v1, operator, sandbox, open
      [api, 'GET', `/api/v2/chats?limit=${escape}`, 'limit'],
      [api, 'GET', `/api/v2/chats?archived=1&limit=${escape}&cursor=0`, 'limit'],
      [api, 'GET', `/api/v2/queue/items?state=${escape}`, 'state'],
      [api, 'GET', `/api/v2/messages?idempotencyKey=${escape}`, 'idempotencyKey'],
      [api, 'POST', `/api/v2/send-message?note=${escape}`, 'note'],
      [api, 'GET', `/api/check-number/4915112340001?x=${escape}`, 'x'],
      [admin, 'GET', `/admin/v1/instances/${instanceId}/webhook/deliveries?state=${escape}`, 'state'],
      [admin, 'GET', `/sandbox/v1/instances/${instanceId}/ledger?since=${escape}`, 'since'],
      [api, 'GET', `/health?probe=${escape}`, 'probe'],
      // the name decoded as a route reads it (`+` is a blank)
      [api, 'GET', `/api/v2/queue/items?a+b%2Bc=${escape}`, 'a b+c'],
      // in a name, or in the value of a name that does not decode: the query as a whole
      [api, 'GET', `/api/v2/queue/items?state${escape}=queued`, 'query'],
      [api, 'GET', `/api/v2/chats?limit=5&${escape}`, 'query'],
      [api, 'GET', `/api/v2/chats?%ZZ=${escape}`, 'query'],
      [api, 'GET', `/api/v2/chats?=${escape}`, 'query'],
      // on a path no route has, and before a credential is looked at, as a malformed path is
      [api, 'GET', `/api/v2/nothing-here?x=${escape}`, 'x'],
      [as(null), 'GET', `/api/v2/chats?limit=${escape}`, 'limit'],
      [as(null), 'GET', `/admin/v1/instances?cursor=${escape}`, 'cursor'],
      [as('wapi_malformed_0123456789abcdef0123'), 'DELETE', `/api/v2/messages/wq_x?y=${escape}`, 'y'],
    ];
    for (const [who, method, path, field] of cases) {
      const r = await who(method, path);
      refused(r, 400, 'VALIDATION_FAILED', field);
      assert.match(String(r.body.error), percentRule, `${method} ${path}: ${r.text}`);
      texts.add(String(r.body.error));
    }
  }
  // nothing of the query is echoed: one text for a parameter named in data.field, one for the query as a whole
  assert.equal(texts.size, 2, [...texts].join('\n'));
  // the first parameter that does not decode is named
  refused(await api('GET', '/api/v2/chats?limit=%ZZ&cursor=%ZZ'), 400, 'VALIDATION_FAILED', 'limit');
  refused(await api('GET', '/api/v2/chats?limit=5&cursor=%ZZ&archived=%ZZ'), 400, 'VALIDATION_FAILED', 'cursor');
  // an encoded NUL is refused as before, whatever else the query holds
  refused(await api('GET', '/api/v2/chats?limit=%ZZ&cursor=%00'), 400, 'VALIDATION_FAILED', 'query');
  // well-formed escapes, `+` for a blank and an encoded `+` are decoded for the route as before
  const decoded = await api('GET', '/api/v2/messages?idempotencyKey=abc%2Ddef%3A12');
  refused(decoded, 404, 'JOB_NOT_FOUND');
  assert.equal(decoded.body.data?.idempotencyKey, 'abc-def:12', decoded.text);
  refused(await api('GET', '/api/v2/queue/items?a+b=1'), 400, 'VALIDATION_FAILED', 'a b');
  refused(await api('GET', '/api/v2/queue/items?a%2Bb=1'), 400, 'VALIDATION_FAILED', 'a+b');
  refused(await api('GET', '/api/v2/messages?idempotencyKey=with+blank'), 400, 'VALIDATION_FAILED', 'idempotencyKey');
  const percent = await api('GET', '/api/v2/messages?idempotencyKey=100%25-sure');
  refused(percent, 400, 'VALIDATION_FAILED', 'idempotencyKey');
  assert.doesNotMatch(String(percent.body.error), percentRule, percent.text);
  assert.equal((await api('GET', '/api/v2/chats?limit=%35&archived=tr%75e')).status, 200);
  // a secret beside a malformed escape, in a value or in a name: refused, and neither the answer nor the log holds it
  const before = logLines.length;
  const answers = [
    await api('GET', `/api/v2/messages?idempotencyKey=${key}%ZZ`),
    await api('GET', `/api/v2/queue/items?${key}%ZZ=1`),
    await as(null)('GET', `/api/v2/chats?token=${t.adminToken}%E0%A4%A`),
  ];
  refused(answers[0]!, 400, 'VALIDATION_FAILED', 'idempotencyKey');
  refused(answers[1]!, 400, 'VALIDATION_FAILED', 'query');
  refused(answers[2]!, 400, 'VALIDATION_FAILED', 'token');
  await settle();
  for (const text of [...answers.map((a) => a.text), logLines.slice(before).join('')]) {
    assert.ok(!text.includes(key.slice(5)) && !text.includes(t.adminToken), `holds a secret: ${text}`);
  }
});

test('send-bulk: an entry with a NUL or half of a surrogate pair is rejected alone (SPEC.md send-bulk rule 3)', async () => {
  // found from the outside: 400 VALIDATION_FAILED field messages.1.message for the whole batch, nothing queued
  for (const bad of ['a\u0000b', '\ud800']) {
    const r = await raw('POST', '/api/send-bulk', JSON.stringify({ messages: [{ phone: RECIPIENT, message: 'b1' }, { phone: RECIPIENT, message: bad }] }), JSON_CT);
    assert.equal(r.status, 200, r.text);
    const entries = (r.body.data?.messages ?? []) as Array<{ phone: string; status: string; jobId?: string; error?: string }>;
    assert.deepEqual(entries.map((e) => [e.phone, e.status]), [[RECIPIENT, 'queued'], [RECIPIENT, 'rejected']], r.text);
    assert.match(String(entries[1]?.error), /^message must /, r.text);
    const { rows } = await t.db.pool.query<{ message: string }>("SELECT payload->>'body' AS message FROM jobs WHERE id = $1", [entries[0]?.jobId]);
    assert.equal(rows[0]?.message, 'b1');
  }
});

test('half of a surrogate pair in a text field or a key is 400 naming it, on v2 and v1; a whole pair is a character', async () => {
  // PostgreSQL's JSON refuses an unpaired \ud800 (the insert failed: 500 INTERNAL_ERROR, found by probing)
  const before = await t.db.pool.query('SELECT count(*)::int AS n FROM jobs');
  refused(await send(JSON.stringify({ phone: RECIPIENT, message: 'a\ud800' })), 400, 'VALIDATION_FAILED', 'message');
  // the escape as a client writes it (JSON.stringify writes a lone half the same way)
  refused(await send(`{"phone":"${RECIPIENT}","message":"\\uDFFFb"}`), 400, 'VALIDATION_FAILED', 'message');
  refused(await raw('POST', '/api/send-message', JSON.stringify({ phone: RECIPIENT, message: '\udc00x' }), JSON_CT), 400, 'VALIDATION_FAILED', 'message');
  refused(await send(JSON.stringify({ phone: RECIPIENT, message: 'x', options: { mentions: ['\ud83d@c.us'] } })), 400, 'VALIDATION_FAILED', 'options.mentions.0');
  refused(await send(`{"phone":"${RECIPIENT}","message":"x","k\\ud800":1}`), 400, 'VALIDATION_FAILED', 'body');
  // two halves the wrong way round are two lone halves
  refused(await send(JSON.stringify({ phone: RECIPIENT, message: '\ude00\ud83d' })), 400, 'VALIDATION_FAILED', 'message');
  assert.deepEqual((await t.db.pool.query('SELECT count(*)::int AS n FROM jobs')).rows, before.rows);
  // a pair, escaped or as UTF-8, is one character: accepted and stored as sent
  for (const body of [`{"phone":"${RECIPIENT}","message":"smile \\ud83d\\ude00"}`, JSON.stringify({ phone: RECIPIENT, message: 'smile \u{1F600}' })]) {
    const r = await send(body);
    assert.equal(r.status, 202, r.text);
    const { rows } = await t.db.pool.query<{ message: string }>("SELECT payload->>'body' AS message FROM jobs WHERE id = $1", [r.body.data?.jobId]);
    assert.equal(rows[0]?.message, 'smile \u{1F600}');
  }
});

test('JSON nested 200,000 levels deep is 400, and the gateway goes on', async () => {
  refused(await send(`{"message":${'['.repeat(200_000)}${']'.repeat(200_000)}}`), 400, 'VALIDATION_FAILED', 'body');
  refused(await send(`${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`), 400, 'VALIDATION_FAILED', 'body');
  assert.equal((await send(JSON.stringify({ phone: RECIPIENT, message: 'still here' }))).status, 202);
});

test('an object of more than MAX_OBJECT_MEMBERS members is 400 before it is built, at any level; an array of many entries and commas inside strings are not counted', async () => {
  const keys = (n: number) => Array.from({ length: n }, (_, i) => `"k${i.toString(36)}":1`).join(',');
  // found from the outside: 1.1 million keys in `options` (9.85 MB) held the event loop 7-9 s; 800,000 (8 MB) here
  refused(await send(`{"phone":"${RECIPIENT}","message":"x","options":{${keys(800_000)}}}`), 400, 'VALIDATION_FAILED', 'body');
  refused(await send(`{"phone":"${RECIPIENT}","message":"x","options":{${keys(MAX_OBJECT_MEMBERS + 1)}}}`), 400, 'VALIDATION_FAILED', 'body');
  refused(await send(`{${keys(MAX_OBJECT_MEMBERS + 1)},"phone":"${RECIPIENT}","message":"x"}`), 400, 'VALIDATION_FAILED', 'body');
  const r = await send(`{"phone":"${RECIPIENT}","message":"${','.repeat(5_000)}","options":{${keys(MAX_OBJECT_MEMBERS - 2)},"list":[${Array(5_000).fill(1).join(',')}]}}`);
  assert.equal(r.status, 202, r.text);
  const refusal = await send(`{"phone":"${RECIPIENT}","message":"x","options":{${keys(MAX_OBJECT_MEMBERS + 1)}}}`);
  assert.equal(refusal.body.error, `an object of the body has more than ${MAX_OBJECT_MEMBERS} members`);
});

test('a body that is not JSON is 415 (not silently read as empty); a charset other than UTF-8 is 415', async () => {
  const body = JSON.stringify({ phone: RECIPIENT, message: 'x' });
  refused(await send(body, { 'content-type': 'text/plain' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
  refused(await send(`phone=${RECIPIENT}&message=x`, { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
  refused(await send(Buffer.from(body), {}), 415, 'UNSUPPORTED_MEDIA_TYPE');
  refused(await send(body, { 'content-type': 'application/json; charset=latin1' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
  assert.equal((await send(body, { 'content-type': 'application/json; charset=UTF-8' })).status, 202);
  refused(await send('{"message": "unterminated', JSON_CT), 400, 'VALIDATION_FAILED', 'body');
  refused(await send(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), JSON_CT), 400, 'VALIDATION_FAILED', 'body');
  refused(await send('"just a string"', JSON_CT), 400, 'VALIDATION_FAILED', 'body');
});

test('a cursor past bigint is 400, not 500', async () => {
  refused(await raw('GET', '/api/v2/queue/items?cursor=99999999999999999999', undefined, {}), 400, 'VALIDATION_FAILED', 'cursor');
});

test('an integer query parameter has one spelling on every route: digits only, leading zeros read', async () => {
  // found from the outside: /api/v2/chats?limit=%205 was 200 while /api/v2/queue/items?limit=%205 was 400
  for (const route of ['/api/v2/chats', '/api/v2/queue/items']) {
    for (const limit of ['%205', '5%20', '+5', '%2B5', '', '5.0', '1e1']) refused(await raw('GET', `${route}?limit=${limit}`, undefined, {}), 400, 'VALIDATION_FAILED', 'limit');
    const r = await raw('GET', `${route}?limit=05`, undefined, {});
    assert.equal(r.status, 200, `${route}: ${r.text}`);
  }
});

test('the Bearer scheme is case-insensitive', async () => {
  for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
    const r = await fetch(`${t.url}/api/status`, { headers: { authorization: `${scheme} ${key}` } });
    assert.equal(r.status, 200, scheme);
  }
});

/** Send the head of a request and the first bytes of its body over a raw socket, then close the socket. */
function abortMidBody(headers: string, firstBytes: Buffer | string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const u = new URL(t.url);
    const s = net.connect(Number(u.port), u.hostname, () => {
      s.write(`POST /api/v2/send-message HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n${headers}\r\n`);
      s.write(firstBytes);
      setImmediate(() => {
        s.destroy();
        resolve();
      });
    });
    s.on('error', reject);
  });
}

test('an aborted request is not logged as an error, and no line of the log is at error level for client input', async () => {
  const jobs = async () => (await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs')).rows[0]?.n;
  const before = await jobs();
  await abortMidBody('Content-Length: 1000\r\n', '{"phone":"');
  // a compressed body cut off mid-stream: the inflating stream is abandoned too
  const gz = gzipSync(JSON.stringify({ phone: RECIPIENT, message: 'x'.repeat(5_000) }));
  await abortMidBody(`Content-Encoding: gzip\r\nContent-Length: ${gz.length}\r\n`, gz.subarray(0, Math.floor(gz.length / 2)));
  await settle(50); // the gateway runs in this process: let it see the aborts
  assert.equal(await jobs(), before, 'nothing was accepted from a body that never arrived');
  // the gateway still answers, and has logged nothing at error level (bunyan: 50) for any request of this file
  assert.equal((await fetch(`${t.url}/health`)).status, 200);
  const errors = logLines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level >= 50);
  assert.deepEqual(errors, []);
});

/**
 * Raw requests on one keep-alive socket, each written as the given pieces (a turn of the event loop between pieces);
 * the status lines of the first `answers` answers (a write may hold more than one request).
 */
function piecewise(requests: (string | Buffer)[][], answers: number): Promise<number[]> {
  return new Promise<number[]>((resolve, reject) => {
    const u = new URL(t.url);
    const statuses: number[] = [];
    let received = '';
    const s = net.connect(Number(u.port), u.hostname, async () => {
      for (const pieces of requests) {
        for (const piece of pieces) {
          s.write(piece);
          await new Promise((r) => setImmediate(r));
          await settle(3);
        }
      }
    });
    s.on('data', (d: Buffer) => {
      received += d.toString('latin1');
      // a response's status line follows the previous body without a line break
      const lines = received.match(/HTTP\/1\.1 \d{3} /g) ?? [];
      if (lines.length >= answers) {
        for (const l of lines) statuses.push(Number(l.slice(9)));
        s.destroy();
        resolve(statuses);
      }
    });
    s.on('error', reject);
  });
}

test('a body read whole with its headers, in pieces, or with the next request in the same packet: each accepted once, on one connection', { timeout: 20_000 }, async () => {
  const jobs = async () => (await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs')).rows[0]?.n ?? 0;
  const before = await jobs();
  const request = (n: number) => {
    const body = JSON.stringify({ phone: RECIPIENT, message: `piece ${n} ü` });
    return `POST /api/v2/send-message HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  };
  const split = (text: string, at: number): Buffer[] => {
    const b = Buffer.from(text);
    return [b.subarray(0, at), b.subarray(at)];
  };
  const whole = request(1);
  const headEnd = Buffer.from(whole).indexOf('\r\n\r\n') + 4;
  const statuses = await piecewise([
    [whole], // head and body in one packet
    split(request(2), headEnd + 5), // the head and 5 bytes of the body, then the rest
    split(request(3), headEnd), // the head alone, then the body
    [request(4) + request(5)], // two requests in one packet: the first body must not take the second's bytes
  ], 5);
  assert.deepEqual(statuses, [202, 202, 202, 202, 202]);
  assert.equal(await jobs(), before + 5);
  const texts = (await t.db.pool.query<{ m: string }>("SELECT payload->>'body' AS m FROM jobs WHERE payload->>'body' LIKE 'piece %' ORDER BY seq")).rows.map((r) => r.m);
  assert.deepEqual(texts, [1, 2, 3, 4, 5].map((n) => `piece ${n} ü`));
});

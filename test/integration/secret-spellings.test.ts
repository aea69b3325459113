/**
 * Found from the outside: an API key or the admin token sent percent-encoded in a URL path (`wapi%5Fdemo_…`,
 * `%77api_…`, `…%54OKEN…`) appeared in full in the request log's `path`, and the 404 answers that echo an id
 * (MESSAGE_NOT_FOUND, JOB_NOT_FOUND, NOT_FOUND's path) gave it back. A secret is masked in every spelling a
 * server decodes to it, in the log and in the answer; a path with no secret is logged as it was sent.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, settle, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let t: TestGateway;
let key = '';
const logLines: string[] = [];

before(async () => {
  t = await startTestGateway({ label: 'secret_spellings', logLines });
  key = (await t.createInstance('spellings')).apiKey;
});
after(async () => {
  await t?.stop();
});

/** Every character of `s` at the indexes given, percent-encoded with the hex in `hexCase`. */
const encodeAt = (s: string, at: readonly number[], hexCase: 'upper' | 'lower' = 'upper') =>
  [...s].map((c, i) => {
    if (!at.includes(i)) return c;
    const hex = c.charCodeAt(0).toString(16).padStart(2, '0');
    return `%${hexCase === 'upper' ? hex.toUpperCase() : hex}`;
  }).join('');

/** The text as a server would read it after decoding it again and again; a malformed escape stays as written. */
function decodedAll(text: string): string {
  let out = text;
  for (let i = 0; i < 10; i++) {
    const next = out.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run;
      }
    });
    if (next === out) break;
    out = next;
  }
  return out;
}

interface RequestLine {
  msg: string;
  reqId: string;
  path: string;
  status: number;
}

async function call(method: string, path: string, auth: string) {
  const before = logLines.length;
  const res = await fetch(`${t.url}${path}`, { method, headers: { authorization: `Bearer ${auth}` } });
  const text = await res.text();
  await settle();
  const lines = logLines.slice(before).map((l) => JSON.parse(l) as RequestLine);
  const logged = lines.find((l) => l.msg === 'request' && l.reqId === res.headers.get('x-request-id'));
  assert.ok(logged, `the request line of ${path}`);
  return { status: res.status, text, logged, lines: logLines.slice(before).join('') };
}

function noSecret(what: string, text: string, secret: string) {
  assert.ok(!text.includes(secret), `${what} holds the secret: ${text}`);
  assert.ok(!decodedAll(text).includes(secret), `${what} decodes to the secret: ${text}`);
}

test('an API key in a path, in any spelling, is masked in the request log and in the 404 that echoes it', async () => {
  const at = key.indexOf('_');
  const spellings = [
    encodeAt(key, [at]), // wapi%5Fdemo_…
    encodeAt(key, [0], 'lower'), // %77api_…
    encodeAt(key, [0, 1, 2, 3, at, key.length - 1], 'lower'),
    encodeAt(key, [at, key.length - 2]).replace('%5F', '%5f'), // mixed case
    encodeAt(key, [0]).replace('%', '%25'), // decodes to the key only when decoded twice
    `${key.slice(0, -3)}${encodeAt(key.slice(-3), [0, 1, 2])}`, // the key's tail alone encoded
  ];
  for (const spelled of spellings) {
    for (const path of [`/api/v2/messages/${spelled}`, `/${spelled}`, `/api/v2/messages/${spelled}/requeue`]) {
      const r = await call(path.endsWith('/requeue') ? 'POST' : 'GET', path, key);
      assert.ok(r.status >= 400 && r.status < 500, `${path}: ${r.status} ${r.text}`);
      noSecret(`the log of ${path}`, r.lines, key);
      noSecret(`the answer to ${path}`, r.text, key);
      assert.match(r.logged.path, /wapi_\[redacted\]/, `the logged path of ${path}`);
    }
  }
  // the echoing answers themselves: MESSAGE_NOT_FOUND / JOB_NOT_FOUND / NOT_FOUND
  const echoed = await call('GET', `/api/v2/messages/${encodeAt(key, [at])}`, key);
  assert.match(echoed.text, /wapi_\[redacted\]/, echoed.text);
  const job = await fetch(`${t.url}/api/v2/messages/${encodeAt(key, [0])}/requeue`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
  const jobBody = (await job.json()) as { code: string; data: { jobId: string } };
  assert.deepEqual([job.status, jobBody.code, jobBody.data.jobId], [404, 'JOB_NOT_FOUND', 'wapi_[redacted]']);
  const byKey = await fetch(`${t.url}/api/v2/messages?idempotencyKey=${encodeAt(key, [at])}`, { headers: { authorization: `Bearer ${key}` } });
  const byKeyBody = (await byKey.json()) as { code: string; data: { idempotencyKey: string } };
  assert.deepEqual([byKey.status, byKeyBody.code, byKeyBody.data.idempotencyKey], [404, 'JOB_NOT_FOUND', 'wapi_[redacted]']);
  // the literal spelling too: the answer no longer echoes it
  noSecret('the answer to the literal key', (await call('GET', `/api/v2/messages/${key}`, key)).text, key);
});

test('the admin token in an operator path, in any spelling, is masked in the log and the answer', async () => {
  const at = ADMIN_TOKEN.indexOf('token');
  for (const spelled of [encodeAt(ADMIN_TOKEN, [at]), encodeAt(ADMIN_TOKEN, [at, at + 1], 'lower'), encodeAt(ADMIN_TOKEN, [0]).replace('%', '%25')]) {
    for (const path of [`/admin/v1/instances/${spelled}`, `/admin/v1/instances/${spelled}/queue`]) {
      const r = await call('GET', path, ADMIN_TOKEN);
      assert.equal(r.status, 404, r.text);
      noSecret(`the log of ${path}`, r.lines, ADMIN_TOKEN);
      noSecret(`the answer to ${path}`, r.text, ADMIN_TOKEN);
      assert.match(r.logged.path, /\[redacted\]/, `the logged path of ${path}`);
    }
  }
});

test('a path with no secret is logged as it was sent; malformed escapes are answered, logged and never thrown on', async () => {
  for (const path of ['/api/v2/messages/abc%20def', '/api/v2/messages/%E0%A4%A', '/api/v2/messages/%zz%4', '/%ff%fe/wapi%5F']) {
    const r = await call('GET', path, key);
    assert.ok(r.status >= 400 && r.status < 500, `${path}: ${r.status} ${r.text}`);
    assert.equal(r.logged.path, path);
  }
});

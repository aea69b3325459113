/**
 * docs/api.md "Requests and answers": the interaction, group (except creation), queue and operator routes refuse
 * a query parameter or body field they do not take with 400 VALIDATION_FAILED naming it. Found from the outside:
 * the routes without a query schema or without a body answered 200 to `?foo=1` and to `{"foo":1}`. Each route
 * of those families declares what it takes (src/http/router.ts `takes`), and the app is not built without it.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Router from '@koa/router';
import { startTestGateway, type ApiResponse, type TestGateway } from '../helpers/gateway.js';
import { createApp } from '../../src/http/app.js';
import { createRouter, takes } from '../../src/http/router.js';
import { silentLogger } from '../../src/log.js';

let t: TestGateway;
let key = '';
let instanceId = '';
let phone = '';
const CHAT = '4915112340001@c.us';
const MSG = `true_${CHAT}_3EB0ABCDEF012345`;
const GROUP = '120363000000000001@g.us';
const enc = encodeURIComponent;

before(async () => {
  t = await startTestGateway({ label: 'unknown_inputs' });
  const created = await t.createInstance('unknowninputs');
  key = created.apiKey;
  instanceId = created.instance.id;
  phone = created.phone;
});
after(async () => {
  await t?.stop();
});

function refused(r: ApiResponse, field: string, what: string): void {
  assert.equal(r.status, 400, `${what}: ${r.text}`);
  assert.equal(r.body.code, 'VALIDATION_FAILED', `${what}: ${r.text}`);
  assert.equal(r.body.data?.field, field, `${what}: ${r.text}`);
  assert.ok(String(r.body.error).startsWith(`${field} is not allowed here`), `${what}: ${r.text}`);
}

test("the probe's list: an unknown query parameter or body field is 400 naming it", async () => {
  const v2: Array<[string, string, unknown?]> = [
    ['POST', `/api/v2/chats/${enc(CHAT)}/seen`],
    ['POST', `/api/v2/chats/${enc(CHAT)}/typing`],
    ['POST', `/api/v2/chats/${enc(CHAT)}/recording`],
    ['DELETE', `/api/v2/chats/${enc(CHAT)}/state`],
    ['POST', `/api/v2/messages/${enc(MSG)}/reaction`, { emoji: '👍' }],
    ['DELETE', `/api/v2/messages/${enc(MSG)}/reaction`],
    ['PATCH', `/api/v2/messages/${enc(MSG)}`, { message: 'edited' }],
    ['DELETE', `/api/v2/messages/${enc(MSG)}`],
    ['GET', `/api/v2/groups/${enc(GROUP)}/invite`],
    ['POST', `/api/v2/groups/${enc(GROUP)}/leave`],
    ['GET', '/api/v2/queue'],
    ['GET', '/api/v2/queue/items'],
    ['POST', '/api/v2/queue/replan'],
    ['GET', '/api/v2/messages/wq_nosuchjob'],
    ['DELETE', '/api/v2/messages/wq_nosuchjob'],
  ];
  for (const [method, path, body] of v2) refused(await t.api(key, method, `${path}${path.includes('?') ? '&' : '?'}foo=1`, body), 'foo', `${method} ${path}?foo=1`);
  const bodiless: Array<[string, string]> = [
    ['POST', `/api/v2/chats/${enc(CHAT)}/seen`],
    ['DELETE', `/api/v2/chats/${enc(CHAT)}/state`],
    ['DELETE', `/api/v2/messages/${enc(MSG)}/reaction`],
    ['POST', `/api/v2/groups/${enc(GROUP)}/invite/revoke`],
    ['POST', `/api/v2/groups/${enc(GROUP)}/leave`],
    ['POST', '/api/v2/queue/replan'],
    ['DELETE', '/api/v2/messages/wq_nosuchjob'],
    ['POST', '/api/v2/messages/wq_nosuchjob/requeue'],
  ];
  for (const [method, path] of bodiless) refused(await t.api(key, method, path, { foo: 1 }), 'foo', `${method} ${path} {"foo":1}`);
  // the routes with a body: their schemas refused an unknown field before, and still do
  refused(await t.api(key, 'POST', `/api/v2/chats/${enc(CHAT)}/typing`, { foo: 1 }), 'foo', 'typing {"foo":1}');
  refused(await t.api(key, 'PATCH', `/api/v2/messages/${enc(MSG)}`, { message: 'x', foo: 1 }), 'foo', 'edit {"foo":1}');

  const admin: Array<[string, string]> = [
    ['GET', '/admin/v1/instances'],
    ['GET', `/admin/v1/instances/${instanceId}`],
    ['GET', `/admin/v1/instances/${instanceId}/qr`],
    ['GET', '/admin/v1/nodes'],
    ['GET', `/admin/v1/instances/${instanceId}/webhook`],
    ['GET', `/admin/v1/instances/${instanceId}/webhook/deliveries`],
    ['GET', `/admin/v1/instances/${instanceId}/queue`],
    ['GET', `/admin/v1/instances/${instanceId}/queue/items`],
  ];
  for (const [method, path] of admin) refused(await t.admin(method, `${path}?foo=1`), 'foo', `${method} ${path}?foo=1`);
  for (const path of [`/admin/v1/instances/${instanceId}/restart`, `/admin/v1/instances/${instanceId}/logout`, `/admin/v1/instances/${instanceId}/keys`]) {
    refused(await t.admin('POST', path, { foo: 1 }), 'foo', `POST ${path} {"foo":1}`);
  }
  // an array parameter spelled with brackets is another name, not the known one
  refused(await t.api(key, 'GET', '/api/v2/queue/items?limit[]=5'), 'limit[]', 'limit[]');
});

test("every route's known parameters still work, and the routes outside these families still ignore unknown ones", async () => {
  const ok = async (r: Promise<ApiResponse>, status: number, what: string) => {
    const res = await r;
    assert.equal(res.status, status, `${what}: ${res.text}`);
  };
  await ok(t.api(key, 'GET', '/api/v2/queue/items?state=queued&limit=5&cursor=0'), 200, 'queue items');
  await ok(t.api(key, 'GET', '/api/v2/queue'), 200, 'queue summary');
  await ok(t.api(key, 'GET', '/api/v2/messages?idempotencyKey=unknown-inputs-1'), 404, 'job by key');
  await ok(t.api(key, 'GET', '/api/v2/messages/wq_nosuchjob'), 404, 'job by id');
  await ok(t.api(key, 'POST', `/api/v2/chats/${enc(CHAT)}/typing`, { durationMs: 1000 }), 200, 'typing');
  await ok(t.api(key, 'DELETE', `/api/v2/chats/${enc(CHAT)}/state`, {}), 200, 'clear state with {}');
  await ok(t.api(key, 'POST', `/api/v2/chats/${enc(CHAT)}/seen`), 200, 'seen');
  await ok(t.admin('GET', '/admin/v1/instances'), 200, 'instances');
  await ok(t.admin('GET', `/admin/v1/instances/${instanceId}/queue/items?state=queued&limit=5`), 200, 'operator queue items');
  await ok(t.admin('GET', `/admin/v1/instances/${instanceId}/webhook/deliveries?limit=5&state=pending`), 200, 'deliveries');
  await ok(t.admin('GET', `/admin/v1/instances/${instanceId}`), 200, 'one instance');

  // the send routes and the reads ignore what they do not read (docs/api.md says so)
  await ok(t.api(key, 'POST', '/api/v2/send-message?foo=1', { phone: phone === '4915112340001' ? '4915112340002' : '4915112340001', message: 'x', foo: 1 }), 202, 'send');
  await ok(t.api(key, 'GET', '/api/v2/chats?foo=1'), 200, 'chat list');
  // a network message id on GET /api/v2/messages/:id is the reads' route: the job route passes it on unchecked
  const read = await t.api(key, 'GET', `/api/v2/messages/${enc(MSG)}?foo=1`);
  assert.notEqual(read.status, 400, read.text);
});

test('a family that refuses unknown inputs is not built with a route that does not declare them', () => {
  const router: Router = createRouter();
  router.get('/declared', takes(), (ctx) => void (ctx.body = {}));
  router.post('/forgotten', (ctx) => void (ctx.body = {}));
  assert.throws(
    () => createApp({ log: silentLogger(), families: [{ name: 'strict', auth: 'none', guard: null, router, unknownInputs: 'refused' }] }),
    /route POST \/forgotten of family strict must declare what it takes/,
  );
});

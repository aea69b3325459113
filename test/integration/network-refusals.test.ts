/**
 * How the network's refusals and the ids it does not know read over the API (found by the outside contract
 * probe): a refusal of a request without a body names the route's path parameter in `data.field`, not `body`; an
 * id of a shape the gateway lets through that names nothing is the route's 404, not a 400 "malformed"; a chatId of
 * another shape is refused with a message that says the shapes. Real HTTP, real PostgreSQL, the sandbox network.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'network_refusals' });
});
after(async () => {
  await t.stop();
});

const enc = encodeURIComponent;

test('a group the instance left: GET invite and POST invite/revoke are 400 naming groupId, not body', async () => {
  const { instance, apiKey } = await t.createInstance('refusals-left');
  const created = await t.admin('POST', `/sandbox/v1/instances/${instance.id}/groups`, { from: '4915112345678', title: 'left behind', participants: [] });
  assert.equal(created.status, 201, created.text);
  const groupId = String(created.body.data?.groupId);
  const left = await t.api(apiKey, 'POST', `/api/v2/groups/${enc(groupId)}/leave`);
  assert.equal(left.status, 200, left.text);
  for (const [method, path] of [['GET', `/api/v2/groups/${enc(groupId)}/invite`], ['POST', `/api/v2/groups/${enc(groupId)}/invite/revoke`]] as const) {
    const r = await t.api(apiKey, method, path);
    assert.equal(r.status, 400, `${method} ${path}: ${r.text}`);
    assert.equal(r.body.code, 'VALIDATION_FAILED');
    assert.equal(r.body.data?.field, 'groupId', r.text);
  }
});

test('a chat id of a valid shape that names nothing is 404 on every route that reads one; another shape is 400 saying the shapes', async () => {
  const { apiKey } = await t.createInstance('refusals-shapes');
  for (const id of ['12345@g.us', '12345-67890@g.us', '12345@c.us']) {
    const chat = await t.api(apiKey, 'GET', `/api/v2/chats/${enc(id)}`);
    assert.equal(chat.status, 404, `${id}: ${chat.text}`);
    assert.equal(chat.body.code, 'CHAT_NOT_FOUND', chat.text);
  }
  const bad = await t.api(apiKey, 'POST', '/api/v2/send-message', { chatId: '123-456@g.us', message: 'x' });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(bad.body.data?.field, 'chatId');
  assert.match(String(bad.body.error), /digits-digits@g\.us/);
});

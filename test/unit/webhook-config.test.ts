import { test } from 'node:test';
import assert from 'node:assert/strict';
import { create, StructError } from 'superstruct';
import { WebhookInput, holdsMask, maskWebhookUrl, toView } from '../../src/webhooks/config.js';
import { envelopeBody } from '../../src/webhooks/outbox.js';

const valid = { url: 'https://hooks.example.com/x', secret: '0123456789abcdef' };
const fails = (value: unknown, field: string) => {
  assert.throws(() => create(value, WebhookInput), (err: unknown) => err instanceof StructError && String(err.path[0]) === field);
};

test('webhook input: url http(s), secret ≥ 16, events known names or *', () => {
  assert.deepEqual(create(valid, WebhookInput), valid);
  assert.deepEqual(create({ ...valid, events: ['*'] }, WebhookInput).events, ['*']);
  assert.deepEqual(create({ ...valid, events: ['message.sent', 'qr'] }, WebhookInput).events, ['message.sent', 'qr']);
  fails({ ...valid, url: 'ftp://example.com/' }, 'url');
  fails({ ...valid, url: 'not a url' }, 'url');
  fails({ ...valid, url: 'javascript:alert(1)' }, 'url');
  fails({ ...valid, secret: '0123456789abcde' }, 'secret');
  fails({ ...valid, events: ['message.scheduled'] }, 'events');
  fails({ ...valid, events: [] }, 'events');
  fails({ ...valid, allowPrivate: 'yes' }, 'allowPrivate');
  fails({ ...valid, extra: 1 }, 'extra');
});

test('the view never carries the secret and masks a URL password and the query values', () => {
  const view = toView({
    instanceId: 'x', url: 'https://u:pw123@h.example/p?q=1', secret: 's'.repeat(20), events: ['message'],
    allowPrivate: false, enabled: true, updatedAt: new Date(),
  });
  assert.deepEqual(Object.keys(view).sort(), ['allowPrivate', 'enabled', 'events', 'url']);
  assert.equal(view.url, 'https://u:***@h.example/p?q=***');
  assert.equal(JSON.stringify(view).includes('sss'), false);
  assert.equal(maskWebhookUrl('https://h.example/'), 'https://h.example/');
  assert.equal(maskWebhookUrl('http://sk_live_x@h.example:8080/ok'), 'http://***@h.example:8080/ok');
  assert.equal(maskWebhookUrl('https://:pw@h.example/'), 'https://:***@h.example/');
  assert.equal(maskWebhookUrl('https://h.example/p%20q?a%20b=c%20d&&e'), 'https://h.example/p%20q?a%20b=***&&***', 'names kept as written');
  assert.equal(maskWebhookUrl('not a url'), '***');
});

test('envelope: v, eventId, then the v1 fields in their v1 order', () => {
  const body = envelopeBody('ev_1', 'test', 'i-1', 1767607200000, { message: 'hi' });
  assert.equal(body, '{"v":2,"eventId":"ev_1","event":"test","instanceId":"i-1","timestamp":1767607200000,"data":{"message":"hi"}}');
});

test('holdsMask: a URL with the mask where maskWebhookUrl puts one, in any spelling the parser reads as it; not elsewhere', () => {
  for (const url of [
    'https://***@hooks.example.com/ok',
    'HTTPS://***@HOOKS.example.com:443/ok',
    'https://ops:***@hooks.example.com/ok',
    'https://hooks.example.com/h?token=***',
    'https://hooks.example.com/h?token=%2A%2A%2A&v=2',
    'https://hooks.example.com/h?***',
    'https://hooks.example.com/h#***',
    maskWebhookUrl('https://sk_live_abc@hooks.example.com/ok?token=abc#frag'),
  ]) assert.equal(holdsMask(url), true, url);
  for (const url of [
    'https://hooks.example.com/***/x',
    'https://hooks.example.com/h?token=****',
    'https://hooks.example.com/h?token=a***',
    'https://sk_live_abc@hooks.example.com/ok?token=abc',
    'not a url',
  ]) assert.equal(holdsMask(url), false, url);
});

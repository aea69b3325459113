import { test } from 'node:test';
import assert from 'node:assert/strict';
import { create, StructError } from 'superstruct';
import { WebhookInput, holdsMask, maskWebhookUrl, toView } from '../../src/webhooks/config.js';
import { envelopeBody } from '../../src/webhooks/outbox.js';
import { attemptErrorText } from '../../src/webhooks/deliver.js';

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
  // the length as sent (found from the outside: 2,015 CJK characters were stored as 18,015), and no port 0
  const base = 'https://hooks.example.com/';
  assert.equal(create({ ...valid, url: base + 'a'.repeat(2048 - base.length) }, WebhookInput).url.length, 2048);
  fails({ ...valid, url: base + 'a'.repeat(2049 - base.length) }, 'url');
  fails({ ...valid, url: base + '中'.repeat(1000) }, 'url');
  fails({ ...valid, url: 'https://hooks.example.com:0/x' }, 'url');
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
    // a path segment: where a path token is shown masked (whichever segment held one in the URL masked)
    'https://hooks.example.com/***/x',
    'https://hooks.slack.com/services/T0123ABCD/B0123ABCD/%2a%2A%2a',
    maskWebhookUrl('https://hooks.slack.com/services/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'),
  ]) assert.equal(holdsMask(url), true, url);
  for (const url of [
    'https://hooks.example.com/a***/x',
    'https://hooks.example.com/h?token=****',
    'https://hooks.example.com/h?token=a***',
    'https://sk_live_abc@hooks.example.com/ok?token=abc',
    'not a url',
  ]) assert.equal(holdsMask(url), false, url);
});

test('a token in the path is shown masked, the segment whole; the words and ids that tell the receiver are kept', () => {
  const cases: [string, string][] = [
    // Slack, Discord, Zapier: at their known place whatever the token looks like (Slack's documented placeholder too)
    ['https://hooks.slack.com/services/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', 'https://hooks.slack.com/services/T0123ABCD/B0123ABCD/***'],
    ['https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX', 'https://hooks.slack.com/services/T00000000/B00000000/***'],
    ['https://HOOKS.slack.com./services/T00000000/B00000000/xxxxxxxx', 'https://hooks.slack.com./services/T00000000/B00000000/***'],
    [
      'https://discord.com/api/webhooks/123456789012345678/aBcD-eFgH_1234567890abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU',
      'https://discord.com/api/webhooks/123456789012345678/***',
    ],
    ['https://discord.com/api/v10/webhooks/123456789012345678/aBcD-eFgH_1234567890abcdefghij', 'https://discord.com/api/v10/webhooks/123456789012345678/***'],
    // a versioned Discord path, and a doubled slash (no segment to the receiver), with a token of one kind
    ['https://discord.com/api/v10/webhooks/123456789012345678/abcdefghijklmnopqrstuvwxyz', 'https://discord.com/api/v10/webhooks/123456789012345678/***'],
    ['https://hooks.slack.com//services/T0123ABCD/B0123ABCD/xxxxxxxxxxxxxxxxxxxxxxxx', 'https://hooks.slack.com//services/T0123ABCD/B0123ABCD/***'],
    ['https://hooks.slack.com/services//T0123ABCD/B0123ABCD/xxxxxxxxxxxxxxxxxxxxxxxx', 'https://hooks.slack.com/services//T0123ABCD/B0123ABCD/***'],
    ['https://hooks.zapier.com/hooks/catch/1234567/abcdefg/', 'https://hooks.zapier.com/hooks/catch/1234567/***/'],
    ['https://hooks.zapier.com/hooks/catch/1234567/o0h5dcd/silent/', 'https://hooks.zapier.com/hooks/catch/1234567/***/silent/'],
    // anywhere else by the rule: 16 or more token characters of two kinds at least (hex, base64url, a UUID)
    [
      'https://contoso.webhook.office.com/webhookb2/3f2504e0-4f89-11d3-9a0c-0305e82c3301@3f2504e0-4f89-11d3-9a0c-0305e82c3301/IncomingWebhook/0123456789abcdef0123456789abcdef/3f2504e0-4f89-11d3-9a0c-0305e82c3301',
      'https://contoso.webhook.office.com/webhookb2/3f2504e0-4f89-11d3-9a0c-0305e82c3301@3f2504e0-4f89-11d3-9a0c-0305e82c3301/IncomingWebhook/***/***',
    ],
    [
      'https://prod-12.westeurope.logic.azure.com:443/workflows/0123456789abcdef0123456789abcdef/triggers/manual/paths/invoke?api-version=2016-06-01&sv=1.0&sig=AbCdEf123',
      'https://prod-12.westeurope.logic.azure.com/workflows/***/triggers/manual/paths/invoke?api-version=***&sv=***&sig=***',
    ],
    ['https://api.example.com/webhook/3f2504e0-4f89-11d3-9a0c-0305e82c3301', 'https://api.example.com/webhook/***'],
    ['https://api.example.com/in/tok_9fK2xQ7mZ4pL8vN3/events', 'https://api.example.com/in/***/events'],
    ['https://api.example.com/in/%74ok_9fK2xQ7mZ4pL8vN3', 'https://api.example.com/in/***'],
    // kept: short segments, words however long, numeric ids, segments with other characters
    ['https://api.example.com/api/v2/events', 'https://api.example.com/api/v2/events'],
    ['https://api.example.com/webhooks/order-created-events/', 'https://api.example.com/webhooks/order-created-events/'],
    ['https://api.example.com/accounts/1234567890123456789/hook', 'https://api.example.com/accounts/1234567890123456789/hook'],
    ['https://api.example.com/a%20b/Ab3dEf6hIj9lMn2p%20x', 'https://api.example.com/a%20b/Ab3dEf6hIj9lMn2p%20x'],
    ['https://other.example.com/services/T0/B0/xxxxxxxx', 'https://other.example.com/services/T0/B0/xxxxxxxx'],
  ];
  for (const [url, shown] of cases) assert.equal(maskWebhookUrl(url), shown, url);
  // every URL shown with a masked path is one a PUT refuses
  for (const [url, shown] of cases) assert.equal(holdsMask(shown), shown !== url, shown);
});

test('the attempt log names no token of the URL path, even where an error names the path without the rest', () => {
  const token = 'Ab3dEf6hIj9lMn2pQr5tUv8x';
  const cfg = { url: `https://hooks.slack.com/services/T0123ABCD/B0123ABCD/${token}`, secret: 'whsec_0123456789abcdef' };
  const text = attemptErrorText(new Error(`POST /services/T0123ABCD/B0123ABCD/${token} failed: socket hang up`), cfg);
  assert.equal(text, 'POST /services/T0123ABCD/B0123ABCD/[redacted] failed: socket hang up');
  const encoded = attemptErrorText(new Error(`no route to /in/${token}`), { ...cfg, url: `https://api.example.com/in/%41${token.slice(1)}` });
  assert.equal(encoded, 'no route to /in/[redacted]');
});

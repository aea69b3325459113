/**
 * The OpenAPI document against a real gateway: it validates as OpenAPI 3.1 (a real validator), every mounted
 * route (gw.routes) is documented and every documented route is mounted, each documented example request gets
 * the documented status and a body that validates (ajv, JSON Schema 2020-12) against the documented answer,
 * and /docs renders in real Chromium from the gateway alone (no other host is asked), saving a screenshot.
 * The document and /docs are served by the gateway itself (src/gateway.ts mounts the `openapi` family).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { chromium } from 'playwright-core';
import { startTestGateway, ADMIN_TOKEN, type TestGateway } from '../helpers/gateway.js';
import type { RouteInfo } from '../../src/http/router.js';
import { REGISTRY } from '../../src/http/openapi/registry.js';
import { openApiPath, registryKey } from '../../src/http/openapi/document.js';
import { saveScreenshot } from '../helpers/screenshots.js';
import { CHROME, NEEDS_CHROME } from '../helpers/chromium.js';

type Json = Record<string, unknown>;
interface Op extends Json {
  responses: Record<string, Json>;
  'x-routes': RouteInfo[];
  'x-example'?: { body?: unknown; query?: Record<string, string> };
  'x-undocumented'?: boolean;
}

let t: TestGateway;
let key = '';
let routes: readonly RouteInfo[] = [];
let doc: Json & { paths: Record<string, Record<string, Op>>; components: Json & { responses: Record<string, Json> } };

before(async () => {
  t = await startTestGateway({ label: 'openapi' });
  const inst = await t.createInstance('openapi', { settings: { quietHours: null, minDelayMs: 0, maxDelayMs: 0, maxPerHour: null, maxPer24h: null } });
  key = inst.apiKey;
  routes = t.gw.routes;
  const res = await fetch(`${t.url}/openapi.json`);
  assert.equal(res.status, 200);
  doc = (await res.json()) as typeof doc;
});
after(async () => {
  await t?.stop();
});

test('the gateway mounts the openapi family', () => {
  const mounted = routes.filter((r) => r.family === 'openapi').map(registryKey);
  assert.deepEqual(mounted.sort(), ['GET /docs', 'GET /docs/redoc.standalone.js', 'GET /openapi.json']);
  assert.ok(routes.filter((r) => r.family === 'openapi').every((r) => r.auth === 'none'));
});

test('/openapi.json validates as OpenAPI 3.1', async () => {
  const result = await new Validator().validate(doc as never);
  assert.equal(doc.openapi, '3.1.0');
  assert.ok(result.valid, JSON.stringify(result.errors, null, 1)?.slice(0, 3000));
});

test('every mounted route is documented, and every documented route is mounted', () => {
  const ops = Object.entries(doc.paths).flatMap(([template, methods]) => Object.entries(methods).map(([method, op]) => ({ template, method, op })));
  const documented = new Set(ops.flatMap(({ op }) => op['x-routes'].map(registryKey)));
  const missing = routes.filter((r) => !REGISTRY[registryKey(r)] || !documented.has(registryKey(r))).map(registryKey);
  assert.deepEqual(missing, [], 'mounted but not described in src/http/openapi/operations/');
  const mountedKeys = new Set(routes.map(registryKey));
  for (const { template, method, op } of ops) {
    assert.ok(!op['x-undocumented'], `${method} ${template} is undocumented`);
    for (const r of op['x-routes']) {
      assert.ok(mountedKeys.has(registryKey(r)), `${registryKey(r)} is documented but not mounted`);
      assert.equal(r.method.toLowerCase(), method);
      assert.equal(openApiPath(r.path).replace(/\{[^}]+\}/g, '{}'), template.replace(/\{[^}]+\}/g, '{}'));
    }
  }
  // nothing in the registry that no route has (a removed route must leave the document)
  const stale = Object.keys(REGISTRY).filter((k) => !mountedKeys.has(k));
  assert.deepEqual(stale, [], 'described but not mounted');
});

test('each operation names the credentials it takes, every one a declared scheme; /metrics takes the metrics token too', () => {
  const schemes = new Set(Object.keys(doc.components.securitySchemes as Json));
  for (const [template, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      for (const alternative of op.security as Json[]) {
        for (const name of Object.keys(alternative)) assert.ok(schemes.has(name), `${method} ${template}: ${name} is declared`);
      }
    }
  }
  assert.deepEqual(doc.paths['/metrics']?.get?.security, [{ adminToken: [] }, { metricsToken: [] }]);
  assert.deepEqual(doc.paths['/admin/v1/instances']?.get?.security, [{ adminToken: [] }], 'the others of the family: the admin token alone');
});

test('every error code is a response with its status', () => {
  for (const [name, response] of Object.entries(doc.components.responses)) {
    const code = name.slice(2);
    const example = ((response.content as Json)['application/json'] as Json).example as Json;
    assert.equal(example.code, code);
    assert.match(String(response.description), new RegExp(`^${String(response['x-status'])} ${code}`));
  }
});

test('each documented example, sent to the gateway, gets the documented status and a valid body', async () => {
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  const components = doc.components;
  const resolveResponse = (r: Json): Json => (typeof r.$ref === 'string' ? (components.responses[r.$ref.split('/').pop() ?? ''] ?? {}) : r);
  let sent = 0;
  for (const [template, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const example = op['x-example'];
      if (!example || template.includes('{')) continue;
      const route = op['x-routes'][0];
      assert.ok(route);
      const auth = route.auth === 'admin' ? ADMIN_TOKEN : route.auth === 'instance' ? key : null;
      const qs = example.query ? `?${new URLSearchParams(example.query).toString()}` : '';
      const res = await fetch(`${t.url}${template}${qs}`, {
        method: method.toUpperCase(),
        headers: { ...(auth ? { authorization: `Bearer ${auth}` } : {}), ...(example.body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(example.body !== undefined ? { body: JSON.stringify(example.body) } : {}),
      });
      const text = await res.text();
      const successes = Object.keys(op.responses).filter((s) => Number(s) < 300);
      assert.ok(successes.includes(String(res.status)), `${method} ${template}: ${res.status} is none of ${successes.join(', ')}: ${text.slice(0, 300)}`);
      const response = resolveResponse(op.responses[String(res.status)] ?? {});
      const schema = ((response.content as Json)['application/json'] as Json).schema as Json;
      const validate = ajv.compile({ ...schema, components });
      const body: unknown = JSON.parse(text);
      assert.ok(validate(body), `${method} ${template}: ${JSON.stringify(validate.errors)} in ${text.slice(0, 500)}`);
      sent += 1;
    }
  }
  // at least the v2 sends, queue, status, health and the admin create/list
  assert.ok(sent >= 17, `only ${sent} examples sent`);
  for (const must of ['/api/v2/send-message', '/api/v2/send-poll', '/api/v2/queue', '/api/v2/queue/items', '/api/status', '/health', '/admin/v1/instances']) {
    assert.ok(Object.values(doc.paths[must] ?? {}).some((o) => o['x-example']), `${must} has no example`);
  }
});

test('a send answers 202 and its replay 200, both as the document says (the replay was the one real answer it did not declare)', async () => {
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  const op = doc.paths['/api/v2/send-message']?.post;
  assert.ok(op);
  const send = () => fetch(`${t.url}/api/v2/send-message`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    // the example with a key of its own (the example's key was sent by the test of the examples)
    body: JSON.stringify({ ...(op['x-example']?.body as Json), idempotencyKey: 'openapi-replay-1' }),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as unknown }));
  for (const [status, r] of [[202, await send()], [200, await send()]] as const) {
    assert.equal(r.status, status, JSON.stringify(r.body));
    const response = op.responses[String(status)] as Json | undefined;
    assert.ok(response, `${status} is declared`);
    const validate = ajv.compile({ ...((response.content as Json)['application/json'] as Json).schema as Json, components: doc.components });
    assert.ok(validate(r.body), `${status}: ${JSON.stringify(validate.errors)}`);
  }
});

test('the docs page is served with no address of another host in it (Redoc linked its logo to a CDN)', async () => {
  const bundle = await fetch(`${t.url}/docs/redoc.standalone.js`).then((r) => r.text());
  assert.ok(bundle.length > 100_000);
  assert.doesNotMatch(bundle, /cdn\.redoc\.ly/);
});

test('/docs renders in Chromium from the gateway alone', NEEDS_CHROME, async () => {
  const browser = await chromium.launch({ executablePath: CHROME, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const foreign: string[] = [];
    await page.route('**/*', (route) => {
      const u = route.request().url();
      if (u.startsWith(t.url) || u.startsWith('data:') || u.startsWith('blob:')) return route.continue();
      foreign.push(u);
      return route.abort();
    });
    await page.goto(`${t.url}/docs#operation/postApiV2SendMessage`);
    await page.getByRole('heading', { name: /Messaging gateway API/ }).first().waitFor({ timeout: 30_000 });
    // the operations are rendered (the side menu's groups start collapsed)
    await page.getByRole('heading', { name: 'Send a text message' }).first().waitFor({ timeout: 10_000 });
    assert.deepEqual(foreign, [], 'the docs page asked another host');
    await saveScreenshot(page, 'api-docs.png');
  } finally {
    await browser.close();
  }
});

/**
 * The OpenAPI document against a real gateway: it validates as OpenAPI 3.1 (a real validator), every mounted
 * route (gw.routes) is documented and every documented route is mounted, each documented example request gets
 * the documented status and a body that validates (ajv, JSON Schema 2020-12) against the documented answer,
 * and /docs renders in real Chromium from the gateway alone (no other host is asked), saving a screenshot.
 * Every answer checked (`conforms`) must be declared with its status and its media type, validate against its
 * schema, and carry no field its schema does not name. Beyond the examples, the route table drives probes that
 * every route must answer as documented: a body not typed JSON and broken JSON on every route whose family reads
 * JSON, unknown inputs on every route whose family refuses them, every /api/v2 route during an ordered restart,
 * every sandbox route asked about what does not exist; and the answers an outside probe found undeclared.
 * The document and /docs are served by the gateway itself (src/gateway.ts mounts the `openapi` family).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
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
let instanceId = '';
let routes: readonly RouteInfo[] = [];
let doc: Json & { paths: Record<string, Record<string, Op>>; components: Json & { responses: Record<string, Json>; schemas: Record<string, Json> } };

const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
const compiled = new Map<Json, ValidateFunction>();
/** A schema of the document, compiled once, its `$ref`s resolved against the document's components. */
function validator(schema: Json): ValidateFunction {
  let v = compiled.get(schema);
  if (!v) compiled.set(schema, (v = ajv.compile({ ...schema, components: doc.components })));
  return v;
}
const resolveResponse = (r: Json): Json => (typeof r.$ref === 'string' ? (doc.components.responses[r.$ref.split('/').pop() ?? ''] ?? {}) : r);
const deref = (schema: Json): Json => (typeof schema.$ref === 'string' ? (doc.components.schemas[schema.$ref.split('/').pop() ?? ''] ?? {}) : schema);

/**
 * The fields of `value` that `schema` does not name, as paths (`data.state`). Every object of the document allows
 * more properties (fields are only ever added), so validation alone let an answer carry fields the document never
 * mentions (the instance's `state` and `browser`): this walks the value with its schema instead.
 */
function undeclared(value: unknown, schema: Json, at: string): string[] {
  const s = deref(schema);
  const alternatives = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (alternatives) {
    const branch = alternatives.find((b) => validator(b)(value));
    return branch ? undeclared(value, branch, at) : [];
  }
  const parts = ((s.allOf as Json[] | undefined) ?? []).map(deref);
  const properties = Object.assign({}, ...parts.map((p) => p.properties ?? {}), s.properties ?? {}) as Record<string, Json>;
  if (Array.isArray(value)) return s.items ? value.flatMap((v, i) => undeclared(v, s.items as Json, `${at}[${i}]`)) : [];
  if (value === null || typeof value !== 'object' || Object.keys(properties).length === 0) return [];
  return Object.entries(value).flatMap(([k, v]) => (properties[k] ? undeclared(v, properties[k], `${at}.${k}`) : [`${at}.${k}`]));
}

interface Answer {
  status: number;
  type: string;
  text: string;
}
const answerOf = async (res: Response): Promise<Answer> => ({ status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() });

/**
 * The answer is one the operation declares: its status, its media type (exactly, or `type/*`, or `*\/*`), and for
 * JSON a body that validates against the schema and carries no field the schema does not name.
 */
function conforms(what: string, op: Op, a: Answer): void {
  const declared = op.responses[String(a.status)];
  assert.ok(declared, `${what}: ${a.status} is none of ${Object.keys(op.responses).join(', ')}: ${a.text.slice(0, 300)}`);
  const content = (resolveResponse(declared).content ?? {}) as Record<string, Json>;
  const type = (a.type.split(';')[0] ?? '').trim().toLowerCase();
  const media = content[type] ?? content[`${type.split('/')[0] ?? ''}/*`] ?? content['*/*'];
  assert.ok(media, `${what}: ${a.status} answered ${type || 'no Content-Type'}, documented ${Object.keys(content).join(', ')}`);
  if (type !== 'application/json' || !content[type]) return;
  const schema = media.schema as Json;
  const body: unknown = JSON.parse(a.text);
  const validate = validator(schema);
  assert.ok(validate(body), `${what}: ${a.status} ${JSON.stringify(validate.errors)} in ${a.text.slice(0, 500)}`);
  assert.deepEqual(undeclared(body, schema, 'body'), [], `${what}: ${a.status} carries fields its schema does not name: ${a.text.slice(0, 500)}`);
}

/** The operation that documents a mounted route. */
function opOf(r: RouteInfo): Op {
  for (const methods of Object.values(doc.paths)) {
    const op = methods[r.method.toLowerCase()];
    if (op?.['x-routes'].some((x) => registryKey(x) === registryKey(r))) return op;
  }
  throw new Error(`${registryKey(r)} is not documented`);
}

const ZERO_UUID = '00000000-0000-4000-8000-000000000000';
/** A path of the route with a value for each parameter (of the right form where the route checks it first). */
function pathOf(r: RouteInfo, values: Record<string, string> = {}): string {
  return r.path.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => {
    if (values[name] !== undefined) return values[name];
    if (name === 'jobId' || (name === 'id' && r.path.startsWith('/api/v2/messages/'))) return 'wq_probe';
    if (name === 'id' || name === 'instanceId') return ZERO_UUID;
    if (name === 'phone') return '4915112345678';
    return 'probe';
  });
}

const credentialOf = (r: RouteInfo, apiKey = key): Record<string, string> =>
  r.auth === 'admin' ? { authorization: `Bearer ${ADMIN_TOKEN}` } : r.auth === 'instance' ? { authorization: `Bearer ${apiKey}` } : {};

before(async () => {
  t = await startTestGateway({ label: 'openapi' });
  const inst = await t.createInstance('openapi', { settings: { quietHours: null, minDelayMs: 0, maxDelayMs: 0, maxPerHour: null, maxPer24h: null } });
  key = inst.apiKey;
  instanceId = inst.instance.id;
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
      const a = await answerOf(res);
      const successes = Object.keys(op.responses).filter((s) => Number(s) < 300);
      assert.ok(successes.includes(String(a.status)), `${method} ${template}: ${a.status} is none of ${successes.join(', ')}: ${a.text.slice(0, 300)}`);
      conforms(`${method} ${template}`, op, a);
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
    const validate = validator(((response.content as Json)['application/json'] as Json).schema as Json);
    assert.ok(validate(r.body), `${status}: ${JSON.stringify(validate.errors)}`);
  }
});

/** A request to the gateway, answered (`query`: appended as given; `body`: sent as is with `type`). */
async function ask(r: RouteInfo, path: string, init: { body?: string; type?: string; apiKey?: string } = {}): Promise<Answer> {
  const res = await fetch(`${t.url}${path}`, {
    method: r.method,
    headers: { ...credentialOf(r, init.apiKey), ...(init.type ? { 'content-type': init.type } : {}) },
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
  return answerOf(res);
}

test('every route answers a body it cannot read, and an input it does not take, with an error the document declares', async () => {
  let probed = 0;
  for (const r of routes) {
    // the test gateway has no CLUSTER_SECRET: every request of the cluster's routes is 401 before its body is read
    if (r.auth === 'cluster') continue;
    const op = opOf(r);
    const what = registryKey(r);
    const path = pathOf(r);
    const refused = async (probe: string, a: Answer, status: number, code: string) => {
      assert.equal(a.status, status, `${what} ${probe}: ${a.text.slice(0, 300)}`);
      assert.equal((JSON.parse(a.text) as Json).code, code, `${what} ${probe}`);
      conforms(`${what} ${probe}`, op, a);
      probed += 1;
    };
    // the family's JSON body reader runs before the route on these methods, whether or not the route takes a body
    if (r.body === 'json' && !['GET', 'HEAD', 'OPTIONS'].includes(r.method)) {
      await refused('with a text/plain body', await ask(r, path, { body: 'x', type: 'text/plain' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
      await refused('with broken JSON', await ask(r, path, { body: '{', type: 'application/json' }), 400, 'VALIDATION_FAILED');
    }
    // a family that refuses unknown inputs refuses them on every route (src/http/router.ts `takes`)
    if (r.unknownInputs === 'refused') {
      const a = await ask(r, `${path}?zzProbe=1`);
      await refused('with an unknown query parameter', a, 400, 'VALIDATION_FAILED');
      assert.equal(((JSON.parse(a.text) as Json).data as Json).field, 'zzProbe', what);
      if (!op.requestBody && r.method !== 'GET') {
        await refused('with a body field on a route without a body', await ask(r, path, { body: '{"zzProbe":1}', type: 'application/json' }), 400, 'VALIDATION_FAILED');
      }
    }
  }
  // the JSON families' body-less POSTs and DELETEs among them (restart, logout, replan, seen, leave, …)
  assert.ok(probed > 100, `only ${probed} probes`);
});

test('during an ordered restart every /api/v2 route answers 503 QUEUE_PAUSED, as the document says', async () => {
  const { instance, apiKey } = await t.createInstance('openapi-restart');
  // unlinked first, its restart waits for a scan: paused until ORDERED_RESTART_HARD_MS (2 min), long enough to ask every route
  assert.equal((await t.admin('POST', `/sandbox/v1/instances/${instance.id}/unlink`)).status, 200);
  const restart = await t.admin('POST', `/admin/v1/instances/${instance.id}/restart`);
  assert.equal(restart.status, 202, restart.text);
  const v2 = routes.filter((r) => r.auth === 'instance' && r.path.startsWith('/api/v2/'));
  assert.ok(v2.length > 40);
  for (const r of v2) {
    const a = await ask(r, pathOf(r), { apiKey });
    assert.equal(a.status, 503, `${registryKey(r)}: ${a.text.slice(0, 300)}`);
    assert.equal((JSON.parse(a.text) as Json).code, 'QUEUE_PAUSED', registryKey(r));
    conforms(registryKey(r), opOf(r), a);
  }
});

test('every sandbox route, asked about what does not exist, answers as the document says', async () => {
  const sandbox = routes.filter((r) => r.family === 'sandbox-control');
  assert.ok(sandbox.length > 20);
  // an instance the network never linked, a group and a message it does not have, a phone that is not one
  const values = { instanceId: ZERO_UUID, groupId: 'nope', messageId: 'nope', chatId: 'nope', phone: 'abc' };
  for (const r of sandbox) {
    const a = await ask(r, pathOf(r, values), r.method === 'GET' ? {} : { body: '{}', type: 'application/json' });
    conforms(`${registryKey(r)} (nothing there)`, opOf(r), a);
  }
});

test('the answers an outside probe found undeclared are declared', async () => {
  const route = (method: string, path: string): RouteInfo => {
    const r = routes.find((x) => x.method === method && x.path === path);
    assert.ok(r, `${method} ${path} is mounted`);
    return r;
  };
  const check = async (r: RouteInfo, path: string, status: number, init: { body?: unknown; apiKey?: string } = {}): Promise<Answer> => {
    const a = await ask(r, path, init.body === undefined ? { ...(init.apiKey ? { apiKey: init.apiKey } : {}) } : { body: JSON.stringify(init.body), type: 'application/json', ...(init.apiKey ? { apiKey: init.apiKey } : {}) });
    assert.equal(a.status, status, `${registryKey(r)} ${path}: ${a.text.slice(0, 300)}`);
    conforms(`${registryKey(r)} ${path}`, opOf(r), a);
    return a;
  };

  // v1's number lookup refuses a phone that is not one
  await check(route('GET', '/api/check-number/:phone'), '/api/check-number/abc', 400);

  // SPEC.md v1 rule 5: with legacyQueueMode async the v1 sends answer 202, queued
  const async = await t.createInstance('openapi-v1-async', { settings: { legacyQueueMode: 'async', quietHours: null, minDelayMs: 0, maxDelayMs: 0, maxPerHour: null, maxPer24h: null } });
  await check(route('POST', '/api/send-message'), '/api/send-message', 202, { body: { phone: '4915112345678', message: 'queued' }, apiKey: async.apiKey });
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
  await check(route('POST', '/api/send-media'), '/api/send-media', 202, { body: { phone: '4915112345678', mediaBase64: png, mimetype: 'image/png' }, apiKey: async.apiKey });

  // every admin answer of an instance carries `state` and `browser`
  await check(route('GET', '/admin/v1/instances/:id'), `/admin/v1/instances/${instanceId}`, 200);
  await check(route('PATCH', '/admin/v1/instances/:id'), `/admin/v1/instances/${instanceId}`, 200, { body: { settings: { maxPer24h: null } } });
  await check(route('GET', '/admin/v1/instances'), '/admin/v1/instances', 200);

  // ?download=1: the file's bytes with its own Content-Type, of an upload and of a network message's attachment
  const form = new FormData();
  form.append('file', new Blob([Buffer.from(png, 'base64')], { type: 'image/png' }), 'dot.png');
  const up = await fetch(`${t.url}/api/v2/media`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const upText = await up.text();
  assert.equal(up.status, 201, upText);
  const mediaId = String(((JSON.parse(upText) as Json).data as Json).mediaId);
  const media = route('GET', '/api/v2/media/:mediaId');
  await check(media, `/api/v2/media/${mediaId}`, 200);
  assert.match((await check(media, `/api/v2/media/${mediaId}?download=1`, 200)).type, /^image\/png/);
  const inbound = await t.admin('POST', `/sandbox/v1/instances/${instanceId}/messages`, { from: '4917612345678', type: 'media', media: { mimetype: 'image/png', data: png, filename: 'dot.png' } });
  assert.equal(inbound.status, 201, inbound.text);
  const msgId = String(inbound.body.data?.messageId);
  const attachment = route('GET', '/api/v2/messages/:msgId/media');
  await check(attachment, `/api/v2/messages/${encodeURIComponent(msgId)}/media`, 200);
  assert.match((await check(attachment, `/api/v2/messages/${encodeURIComponent(msgId)}/media?download=1`, 200)).type, /^image\/png/);

  // the sandbox's own refusals
  await check(route('GET', '/sandbox/v1/instances/:instanceId/qr'), `/sandbox/v1/instances/${instanceId}/qr`, 404);
  await check(route('POST', '/sandbox/v1/instances/:instanceId/messages'), `/sandbox/v1/instances/${ZERO_UUID}/messages`, 409, { body: { from: '4917612345678', body: 'hi' } });
  await check(route('GET', '/sandbox/v1/accounts/:phone'), '/sandbox/v1/accounts/abc', 400);
  await check(route('GET', '/sandbox/v1/groups/:groupId'), '/sandbox/v1/groups/nope', 404);
});

test('the docs page is served with no address of another host in it (Redoc linked its logo to a CDN), framed by no page, its type never sniffed', async () => {
  const docs = await fetch(`${t.url}/docs`);
  assert.match(docs.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
  assert.equal(docs.headers.get('x-content-type-options'), 'nosniff');
  // a refusal that names what the client sent (the path) is never read as anything but JSON
  const unknown = await fetch(`${t.url}/docs/<b>x</b>`);
  assert.equal(unknown.status, 404);
  assert.equal(unknown.headers.get('x-content-type-options'), 'nosniff');
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

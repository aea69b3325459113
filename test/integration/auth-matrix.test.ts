/**
 * Route × credential matrix, generated from the gateway's own route table (gw.routes, built from the mounted
 * routers): every route × {no header, malformed headers, unknown key, another instance's key, the admin token
 * on instance routes, an instance key on admin/debug/sandbox routes} × spellings of its path (upper and mixed
 * case, trailing slash, double slash, a percent-encoded segment). Each answer is the right 401/403/404 in the
 * envelope, and no rejected request changes anything: every table is digested before and after.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type ApiResponse, type TestGateway } from '../helpers/gateway.js';
import type { RouteInfo } from '../../src/http/router.js';

let t: TestGateway;
let A: { id: string; key: string };
let B: { id: string; key: string };
let aJob = '';
const RECIPIENT = '4915112340001';
const TABLES = ['instances', 'api_keys', 'jobs', 'idempotency_keys', 'dispatches', 'webhooks', 'outbox', 'webhook_attempts', 'media', 'inbound_messages'];

before(async () => {
  // real time: B's key really runs handlers (a v1 send waits for its outcome), so B sends without pauses
  t = await startTestGateway({ label: 'auth_matrix' });
  const fast = { quietHours: null, minDelayMs: 0, maxDelayMs: 0, maxPerHour: null, maxPer24h: null };
  const a = await t.createInstance('matrixa', { settings: fast });
  const b = await t.createInstance('matrixb', { settings: fast });
  A = { id: a.instance.id, key: a.apiKey };
  B = { id: b.instance.id, key: b.apiKey };
  const later = new Date(t.clock.now() + 6 * 3_600_000).toISOString();
  const r = await t.api(A.key, 'POST', '/api/v2/send-message', { phone: RECIPIENT, message: 'waits', notBefore: later });
  assert.equal(r.status, 202, r.text);
  aJob = String(r.body.data?.jobId);
  // What the instances write on their own must be in before the digests: the number linking reports after
  // `connected` (written by the events actor). (A brand-new instance's queue starts without writing.)
  let settling = -1;
  for (let i = 0; i < 1_500 && settling !== 0; i++) {
    const { rows } = await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM instances WHERE phone_number IS NULL');
    settling = rows[0]?.n ?? -1;
    if (settling !== 0) await new Promise((res) => setTimeout(res, 20));
  }
  assert.equal(settling, 0, 'both instances linked and planned before the digests');
});
after(async () => {
  await t?.stop();
});

/** A value for each path parameter: ids of instance B on admin routes, A's things on instance routes. */
function fill(route: RouteInfo): string {
  const values: Record<string, string> = {
    id: route.auth === 'admin' ? B.id : aJob,
    instanceId: B.id,
    jobId: aJob,
    msgId: 'true_4915112340001@c.us_3EB0MATRIX',
    chatId: `${RECIPIENT}@c.us`,
    groupId: '120363000000000001@g.us',
    mediaId: 'md_matrix0000000000',
    phone: RECIPIENT,
    contactId: `${RECIPIENT}@c.us`,
  };
  return route.path.replace(/:([A-Za-z]+)/g, (_m, name: string) => encodeURIComponent(values[name] ?? 'x'));
}

async function call(method: string, path: string, authorization: string | null): Promise<ApiResponse> {
  const body = ['GET', 'HEAD', 'DELETE'].includes(method) ? undefined : JSON.stringify({ message: 'matrix', phone: RECIPIENT });
  const res = await fetch(`${t.url}${path}`, {
    method,
    signal: AbortSignal.timeout(15_000),
    headers: { ...(authorization !== null ? { authorization } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body } : {}),
  });
  const text = await res.text();
  let parsed: ApiResponse['body'];
  try {
    parsed = JSON.parse(text) as ApiResponse['body'];
  } catch {
    parsed = { success: false, error: `not JSON: ${text.slice(0, 80)}` };
  }
  return { status: res.status, text, body: parsed, headers: res.headers };
}

/** Every row of every table, digested (per instance when `instanceId` is given). */
async function digest(instanceId?: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const table of TABLES) {
    const cols = await t.db.pool.query<{ column_name: string }>(`SELECT column_name FROM information_schema.columns WHERE table_name = $1`, [table]);
    const scoped = instanceId && cols.rows.some((c) => c.column_name === 'instance_id');
    const where = instanceId ? (scoped ? 'WHERE instance_id = $1' : table === 'instances' ? 'WHERE id = $1' : 'WHERE false') : '';
    const r = await t.db.pool.query<{ d: string | null }>(`SELECT md5(string_agg(x::text, '|' ORDER BY x::text)) AS d FROM ${table} x ${where}`, instanceId && where !== 'WHERE false' ? [instanceId] : []);
    out[table] = r.rows[0]?.d ?? 'empty';
  }
  return out;
}

const MALFORMED = ['Bearer', 'Bearer ', 'Basic d2FwaV94Onk=', 'Token wapi_matrixa_0123456789abcdef0123', 'Bearer a b', 'Bearerwapi_x_0123456789abcdef01'];
const UNKNOWN_KEY = 'Bearer wapi_matrixa_ZZZZZZZZZZZZZZZZZZZZZZZZ';

function expectError(r: ApiResponse, status: number, code: string, what: string): void {
  assert.equal(r.status, status, `${what}: ${r.text}`);
  assert.equal(r.body.success, false, what);
  assert.equal(r.body.code, code, `${what}: ${r.text}`);
  assert.equal(r.headers.get('content-type')?.startsWith('application/json'), true, what);
}

test('the route table covers every family and only /health is open', () => {
  const families = new Set(t.gw.routes.map((r) => r.family));
  for (const f of ['health', 'admin-instances', 'admin-webhooks', 'debug', 'status', 'v2-queue', 'v2-send', 'v1', 'v1-reads', 'v2-groups', 'v2-interactions', 'v2-reads', 'v2-media', 'sandbox-control']) {
    assert.ok(families.has(f), `family ${f} is mounted`);
  }
  assert.deepEqual(
    t.gw.routes.filter((r) => r.auth === 'none').map((r) => `${r.method} ${r.path}`).sort(),
    ['DELETE /console/session', 'GET /console', 'GET /console/app.css', 'GET /console/app.js', 'GET /console/session', 'GET /docs', 'GET /docs/redoc.standalone.js', 'GET /health', 'GET /openapi.json', 'POST /console/session'],
  );
  assert.ok(t.gw.routes.length > 60, `${t.gw.routes.length} routes`);
});

test('every route × every wrong credential: 401/403 in the envelope, and nothing changes', async () => {
  const before = await digest();
  let checked = 0;
  for (const route of t.gw.routes) {
    const path = fill(route);
    const what = (cred: string) => `${route.method} ${route.path} with ${cred}`;
    if (route.auth === 'none') {
      const r = await call(route.method, path, null);
      // the console's sign-in signs nobody in without X-Console: 1 and the admin token; its sign-out (which needs no
      // valid session) ends nothing without X-Console: 1, nor with a credential that is not the admin token
      if (route.path === '/console/session' && route.method !== 'GET') expectError(r, 403, 'FORBIDDEN', what('no header'));
      else assert.equal(r.status, 200, what('no header'));
      if (route.path === '/console/session' && route.method === 'DELETE') {
        expectError(await call(route.method, path, 'Bearer not-the-admin-token-0000'), 401, 'UNAUTHORIZED', what('a wrong admin token'));
        expectError(await call(route.method, path, `Bearer ${A.key}`), 403, 'FORBIDDEN', what("an instance's key"));
      }
      continue;
    }
    expectError(await call(route.method, path, null), 401, 'UNAUTHORIZED', what('no header'));
    for (const m of MALFORMED) expectError(await call(route.method, path, m), 401, 'UNAUTHORIZED', what(`malformed "${m}"`));
    if (route.auth === 'cluster') {
      // the nodes' internal route: only the cluster secret (none is set here: nothing is accepted)
      for (const cred of [`Bearer ${t.adminToken}`, `Bearer ${A.key}`, 'Bearer not-the-cluster-secret-000']) {
        const r = await call(route.method, path, cred);
        expectError(r, 401, 'UNAUTHORIZED', what('a credential that is not the cluster secret'));
        assert.match(String(r.body.error), /cluster secret/, what('the 401 speaks of the cluster secret'));
      }
    } else if (route.auth === 'instance') {
      expectError(await call(route.method, path, UNKNOWN_KEY), 401, 'INVALID_API_KEY', what('an unknown key'));
      expectError(await call(route.method, path, `Bearer ${t.adminToken}`), 401, 'INVALID_API_KEY', what('the admin token'));
    } else {
      const unknown = await call(route.method, path, 'Bearer not-the-admin-token-0000');
      expectError(unknown, 401, 'UNAUTHORIZED', what('a wrong admin token'));
      assert.match(String(unknown.body.error), /admin token/, what('the 401 speaks of the admin token'));
      expectError(await call(route.method, path, `Bearer ${A.key}`), 403, 'FORBIDDEN', what("an instance's key"));
      expectError(await call(route.method, path, `bearer ${B.key}`), 403, 'FORBIDDEN', what("another instance's key, lower-case scheme"));
    }
    checked += 1;
  }
  assert.ok(checked > 50);
  assert.deepEqual(await digest(), before, 'no rejected request changed a row');
});

test('every route × every spelling of its path: 404 before any guard or handler, with or without a credential', async () => {
  const before = await digest();
  const spellings = (p: string): string[] => [
    p.toUpperCase(),
    p.replace(/^\/([a-z])/, (_m, c: string) => `/${c.toUpperCase()}`),
    `${p}/`,
    `/${p}`,
    p.replace(/^\/([a-z]+)\//, '/$1//'),
    p.replace(/^\/([a-z])/, (_m, c: string) => `/%${c.charCodeAt(0).toString(16)}`),
  ];
  for (const route of t.gw.routes) {
    const cred = route.auth === 'admin' ? `Bearer ${t.adminToken}` : route.auth === 'instance' ? `Bearer ${A.key}` : null;
    for (const variant of new Set(spellings(fill(route)))) {
      if (variant === fill(route)) continue;
      for (const auth of [null, cred]) {
        const r = await call(route.method, variant, auth);
        expectError(r, 404, 'NOT_FOUND', `${route.method} ${variant} (${auth ? 'with' : 'without'} credential)`);
      }
    }
  }
  assert.deepEqual(await digest(), before, 'no spelling reached a handler');
});

test("another instance's key reaches only its own instance: nothing of A changes", async () => {
  const beforeA = await digest(A.id);
  for (const route of t.gw.routes.filter((r) => r.auth === 'instance')) {
    const r = await call(route.method, fill(route), `Bearer ${B.key}`).catch((err: unknown) => {
      throw new Error(`${route.method} ${route.path} with B's key: ${String(err)}`);
    });
    assert.notEqual(r.status, 401, `${route.method} ${route.path}: ${r.text}`);
    assert.notEqual(r.status, 403, `${route.method} ${route.path}: ${r.text}`);
    assert.ok(r.status < 500 || [502, 503, 504].includes(r.status), `${route.method} ${route.path}: ${r.status} ${r.text}`);
  }
  assert.deepEqual(await digest(A.id), beforeA, "B's key changed nothing of A");
  const job = await t.api(A.key, 'GET', `/api/v2/messages/${aJob}`);
  assert.equal(job.body.data?.state, 'scheduled', "A's waiting job is untouched");
});

test('a wrong method is 405 with the allowed methods; OPTIONS lists them; an unknown method is 405 too', async () => {
  const r = await call('PUT', '/api/status', `Bearer ${A.key}`);
  expectError(r, 405, 'METHOD_NOT_ALLOWED', 'PUT /api/status');
  assert.deepEqual((r.body.data as { allowed: string[] }).allowed, ['GET', 'HEAD']);
  const o = await fetch(`${t.url}/api/v2/send-message`, { method: 'OPTIONS' });
  assert.equal(o.status, 204);
  assert.equal(o.headers.get('allow'), 'POST, OPTIONS');
  const p = await call('PROPFIND', '/admin/v1/instances', null);
  expectError(p, 405, 'METHOD_NOT_ALLOWED', 'PROPFIND');
  expectError(await call('GET', '/no/such/route', null), 404, 'NOT_FOUND', 'unknown path');
});

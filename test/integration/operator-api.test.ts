/**
 * The operator interface (DESIGN.md "Operator interface") over real HTTP and PostgreSQL: create, list, get,
 * patch settings, delete, and what each does to the running actors. The API key is shown on creation only.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type ApiResponse, type TestGateway } from '../helpers/gateway.js';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'operator_api', simulated: true });
});
after(async () => {
  await t.stop();
});

const NEW_DEFAULTS = {
  maxPerHour: 40,
  maxPer24h: 500,
  minDelayMs: 4000,
  maxDelayMs: 12000,
  quietHours: { start: '22:00', end: '07:00', tz: 'Europe/Berlin' },
  defaultTtlSeconds: 86400,
  legacyQueueMode: 'sync',
  enabled: true,
  storeIncomingMedia: false,
};

function assertError(r: ApiResponse, status: number, code: string): void {
  assert.equal(r.status, status, r.text);
  assert.equal(r.body.success, false, r.text);
  assert.equal(r.body.code, code, r.text);
  assert.equal(typeof r.body.error, 'string');
}

/**
 * The random part of a key, what must never show up outside the create/rotate answers: everything after
 * `wapi_<name>_` (names hold no `_`; the base64url random part may).
 */
const secretPart = (key: string) => key.split('_').slice(2).join('_');

test('create: 201 {instance, apiKey}, key wapi_<name>_..., the new-instance defaults of SPEC.md; the key works', async () => {
  const r = await t.admin('POST', '/admin/v1/instances', { name: 'shop-berlin', driver: 'sandbox' });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.success, true);
  const data = r.body.data as { instance: Record<string, unknown>; apiKey: string; startDeferred: string | null };
  assert.deepEqual(Object.keys(data).sort(), ['apiKey', 'instance', 'startDeferred']);
  assert.equal(data.startDeferred, null, 'placed at its creation');
  assert.match(data.apiKey, /^wapi_shop-berlin_[A-Za-z0-9_-]{16,}$/);
  const inst = data.instance;
  assert.match(String(inst.id), /^[0-9a-f-]{36}$/);
  assert.equal(inst.name, 'shop-berlin');
  assert.equal(inst.driver, 'sandbox');
  assert.deepEqual(inst.settings, NEW_DEFAULTS);
  assert.ok(!JSON.stringify(inst).includes(secretPart(data.apiKey)), 'the instance record carries no key');
  assert.equal(new Date(String(inst.createdAt)).toISOString(), inst.createdAt);

  // its actors run at once; the key authenticates its own instance
  assert.ok(t.gw.actors.instanceActor(String(inst.id)), 'the instance actor was spawned');
  const s = await t.api(data.apiKey, 'GET', '/api/status');
  assert.equal(s.status, 200, s.text);
  assert.ok(['initializing', 'waiting_qr'].includes(String(s.body.data?.status)), s.text);
  assert.equal(s.body.data?.connected, false);
  // settings given at creation override the defaults field by field
  const custom = await t.admin('POST', '/admin/v1/instances', { name: 'custom', settings: { maxPerHour: 5, quietHours: null } });
  assert.equal(custom.status, 201, custom.text);
  const cs = (custom.body.data as { instance: { settings: Record<string, unknown>; driver: string } }).instance;
  assert.deepEqual(cs.settings, { ...NEW_DEFAULTS, maxPerHour: 5, quietHours: null });
  assert.equal(cs.driver, 'sandbox', 'driver defaults to the sandbox');
});

test('create: invalid input is 400 VALIDATION_FAILED naming the field; a duplicate name is 409', async () => {
  const cases: [unknown, string][] = [
    [{}, 'name'],
    [{ name: '' }, 'name'],
    [{ name: 'has space' }, 'name'],
    [{ name: 'under_score' }, 'name'], // `_` would make the key's name part ambiguous
    [{ name: 'x'.repeat(41) }, 'name'],
    [{ name: 'okname', driver: 'carrier-pigeon' }, 'driver'],
    [{ name: 'okname', settings: { maxPerHour: -1 } }, 'settings.maxPerHour'],
    [{ name: 'okname', settings: { minDelayMs: 5000, maxDelayMs: 1000 } }, 'settings.maxDelayMs'],
    [{ name: 'okname', settings: { quietHours: { start: '22:00', end: '07:00', tz: 'Mars/Olympus' } } }, 'settings.quietHours.tz'],
    [{ name: 'okname', settings: { bogus: true } }, 'settings.bogus'],
  ];
  for (const [body, field] of cases) {
    const r = await t.admin('POST', '/admin/v1/instances', body);
    assertError(r, 400, 'VALIDATION_FAILED');
    assert.equal(r.body.data?.field, field, `${JSON.stringify(body)} → ${r.text}`);
  }
  assert.equal((await t.admin('GET', '/admin/v1/instances')).body.data?.items instanceof Array, true);
  const names = ((await t.admin('GET', '/admin/v1/instances')).body.data?.items as { name: string }[]).map((i) => i.name);
  assert.ok(!names.includes('okname'), 'nothing was created by a refused request');

  const first = await t.admin('POST', '/admin/v1/instances', { name: 'twin' });
  assert.equal(first.status, 201, first.text);
  const dup = await t.admin('POST', '/admin/v1/instances', { name: 'twin' });
  assert.equal(dup.status, 409, dup.text);
  assert.equal(dup.body.success, false);
  assert.equal(dup.body.data?.field, 'name');
  const twins = ((await t.admin('GET', '/admin/v1/instances')).body.data?.items as { name: string }[]).filter((i) => i.name === 'twin');
  assert.equal(twins.length, 1);
});

test('list and get: live status, settings; the key never appears', async () => {
  const { instance, apiKey, phone } = await t.createInstance('listed', { settings: { quietHours: null } });
  const list = await t.admin('GET', '/admin/v1/instances');
  assert.equal(list.status, 200, list.text);
  const items = list.body.data?.items as Record<string, unknown>[];
  const mine = items.find((i) => i.id === instance.id);
  assert.ok(mine, 'the new instance is listed');
  assert.equal(mine.name, 'listed');
  assert.equal(mine.status, 'connected');
  assert.equal(mine.connected, true);
  assert.equal(mine.phoneNumber, phone);
  assert.ok(!list.text.includes(secretPart(apiKey)), 'the list never shows a key');
  assert.ok(!list.text.includes('wapi_'), 'nor any key at all');

  const one = await t.admin('GET', `/admin/v1/instances/${instance.id}`);
  assert.equal(one.status, 200, one.text);
  assert.equal(one.body.data?.id, instance.id);
  assert.equal(one.body.data?.status, 'connected');
  assert.equal(one.body.data?.phoneNumber, phone);
  const browser = one.body.data?.browser as Record<string, unknown>;
  assert.equal(browser.alive, true);
  assert.equal(browser.failStreak, 0);
  assert.deepEqual(one.body.data?.settings, { ...NEW_DEFAULTS, quietHours: null });
  assert.ok(!one.text.includes(secretPart(apiKey)));
  assert.ok(!one.text.includes('wapi_'));

  // get follows the live state: a crash shows at once
  const fail = await t.admin('POST', `/sandbox/v1/instances/${instance.id}/fail`, { kind: 'session_crash', reason: 'test' });
  assert.equal(fail.status, 200, fail.text);
  const crashed = await t.admin('GET', `/admin/v1/instances/${instance.id}`);
  assert.equal(crashed.body.data?.status, 'error');
  assert.equal(crashed.body.data?.connected, false);
  await t.advanceUntil(async () => (await t.admin('GET', `/admin/v1/instances/${instance.id}`)).body.data?.status === 'connected', 'reconnected', { maxMs: 60_000 });

  assertError(await t.admin('GET', '/admin/v1/instances/00000000-0000-0000-0000-000000000000'), 404, 'INSTANCE_NOT_FOUND');
  assertError(await t.admin('GET', '/admin/v1/instances/not-an-id'), 404, 'INSTANCE_NOT_FOUND');
});

test('PATCH settings: validated against the merged result, persisted, and a limit change re-plans', async () => {
  const { instance, apiKey } = await t.createInstance('patched', {
    settings: { quietHours: null, maxPerHour: null, maxPer24h: null, minDelayMs: 60_000, maxDelayMs: 60_000 },
  });
  const id = instance.id;
  const hook = await t.admin('PUT', `/admin/v1/instances/${id}/webhook`, { url: 'http://127.0.0.1:9/hook', secret: 'a-webhook-secret-0123456789', allowPrivate: true, events: ['queue.replanned'] });
  assert.ok(hook.status < 300, hook.text);

  // invalid patches: 400 with data.field, nothing stored
  const bad: [unknown, string][] = [
    [{ settings: { minDelayMs: 5000, maxDelayMs: 1000 } }, 'settings.maxDelayMs'],
    // valid alone, invalid merged with the stored maxDelayMs (60000)
    [{ settings: { minDelayMs: 90_000 } }, 'settings.maxDelayMs'],
    [{ settings: { maxPerHour: 1.5 } }, 'settings.maxPerHour'],
    [{ settings: { defaultTtlSeconds: 10 } }, 'settings.defaultTtlSeconds'],
    [{ settings: { legacyQueueMode: 'sometimes' } }, 'settings.legacyQueueMode'],
    [{ settings: { quietHours: { start: '25:00', end: '07:00', tz: 'Europe/Berlin' } } }, 'settings.quietHours.start'],
    [{ settings: { unknownSetting: 1 } }, 'settings.unknownSetting'],
    [{}, 'settings'],
  ];
  for (const [body, field] of bad) {
    const r = await t.admin('PATCH', `/admin/v1/instances/${id}`, body);
    assertError(r, 400, 'VALIDATION_FAILED');
    assert.equal(r.body.data?.field, field, `${JSON.stringify(body)} → ${r.text}`);
  }
  const unchanged = await t.admin('GET', `/admin/v1/instances/${id}`);
  assert.equal((unchanged.body.data?.settings as Record<string, unknown>).minDelayMs, 60_000);

  // three jobs one minute apart
  const jobs: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112340002', message: `m${i}` });
    assert.equal(r.status, 202, r.text);
    jobs.push(String(r.body.data?.jobId));
  }
  const slots = async () => Promise.all(jobs.map(async (j) => Date.parse(String((await t.api(apiKey, 'GET', `/api/v2/messages/${j}`)).body.data?.scheduledAt))));
  const [, b0, c0] = await slots();
  assert.equal((c0 as number) - (b0 as number), 60_000);

  // a limit change: persisted, visible in the limits, and the waiting jobs move at once (no time passes)
  const r = await t.admin('PATCH', `/admin/v1/instances/${id}`, { settings: { minDelayMs: 600_000, maxDelayMs: 600_000, maxPerHour: 10 } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(
    { min: (r.body.data?.settings as Record<string, unknown>).minDelayMs, max: (r.body.data?.settings as Record<string, unknown>).maxDelayMs, hour: (r.body.data?.settings as Record<string, unknown>).maxPerHour },
    { min: 600_000, max: 600_000, hour: 10 },
  );
  const limits = (await t.api(apiKey, 'GET', '/api/v2/queue')).body.data?.limits as Record<string, unknown>;
  assert.equal(limits.minDelayMs, 600_000);
  assert.equal(limits.maxPerHour, 10);
  const [, b1, c1] = await slots();
  assert.equal((c1 as number) - (b1 as number), 600_000, 'the waiting jobs were re-planned with the new pause');
  const row = await t.gw.pool.query<{ min_delay_ms: number }>('SELECT min_delay_ms FROM instances WHERE id = $1', [id]);
  assert.equal(row.rows[0]?.min_delay_ms, 600_000, 'persisted');
  const deliveries = await t.admin('GET', `/admin/v1/instances/${id}/webhook/deliveries?limit=200`);
  const events = (deliveries.body.data?.items as { event: string }[]).map((d) => d.event);
  assert.equal(events.filter((e) => e === 'queue.replanned').length, 1, `one queue.replanned event: ${events.join(',')}`);

  // a change that does not touch the plan does not re-plan
  const ttl = await t.admin('PATCH', `/admin/v1/instances/${id}`, { settings: { defaultTtlSeconds: 3600 } });
  assert.equal(ttl.status, 200, ttl.text);
  const after = await t.admin('GET', `/admin/v1/instances/${id}/webhook/deliveries?limit=200`);
  assert.equal((after.body.data?.items as { event: string }[]).filter((d) => d.event === 'queue.replanned').length, 1);
  assertError(await t.admin('PATCH', '/admin/v1/instances/00000000-0000-0000-0000-000000000000', { settings: { maxPerHour: 1 } }), 404, 'INSTANCE_NOT_FOUND');
  for (const j of jobs) await t.api(apiKey, 'DELETE', `/api/v2/messages/${j}`);
});

test('DELETE: the key stops working, the actors stop, the instance is gone from list, health and debug', async () => {
  const { instance, apiKey } = await t.createInstance('doomed', { settings: { quietHours: null } });
  const id = instance.id;
  const healthBefore = (await (await fetch(`${t.url}/health`)).json()) as { instances: { total: number } };
  assert.equal((await t.api(apiKey, 'GET', '/api/status')).status, 200);
  const session = await t.admin('GET', `/sandbox/v1/instances/${id}`);
  assert.equal(session.body.data?.phase, 'ready');

  const r = await t.admin('DELETE', `/admin/v1/instances/${id}`);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.data, { id, deleted: true });

  const s = await t.api(apiKey, 'GET', '/api/status');
  assertError(s, 401, 'INVALID_API_KEY');
  assertError(await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112340003', message: 'x' }), 401, 'INVALID_API_KEY');
  assert.equal(t.gw.actors.instanceActor(id), undefined, 'the instance actor stopped');
  assert.equal(t.gw.actors.port(id), null, 'the instance has no port any more');
  const tree = (await t.admin('GET', '/debug/actors')).body.data?.actors as { id: string; parent: string | null }[];
  assert.ok(!tree.some((a) => a.id.endsWith(`:${id}`)), 'no actor of the instance is left (planner, dispatcher, webhook sender, session)');
  const phase = await t.admin('GET', `/sandbox/v1/instances/${id}`);
  assert.equal(phase.body.data?.phase, 'stopped', 'the session (driver) was destroyed');

  assertError(await t.admin('GET', `/admin/v1/instances/${id}`), 404, 'INSTANCE_NOT_FOUND');
  assertError(await t.admin('DELETE', `/admin/v1/instances/${id}`), 404, 'INSTANCE_NOT_FOUND');
  const items = (await t.admin('GET', '/admin/v1/instances')).body.data?.items as { id: string }[];
  assert.ok(!items.some((i) => i.id === id));
  const debug = await t.admin('GET', '/debug/actors');
  assert.ok(!debug.text.includes(id), 'no actor of the deleted instance is live');
  const healthAfter = (await (await fetch(`${t.url}/health`)).json()) as { instances: { total: number } };
  assert.equal(healthAfter.instances.total, healthBefore.instances.total - 1);

  // the name is free again
  const again = await t.admin('POST', '/admin/v1/instances', { name: 'doomed' });
  assert.equal(again.status, 201, again.text);
});

test('rotate: the new key is shown once; get and list never show it', async () => {
  const { instance } = await t.createInstance('rotating', { link: false });
  const r = await t.admin('POST', `/admin/v1/instances/${instance.id}/keys`);
  assert.equal(r.status, 201, r.text);
  const key = String(r.body.data?.apiKey);
  assert.match(key, /^wapi_rotating_/);
  const one = await t.admin('GET', `/admin/v1/instances/${instance.id}`);
  const list = await t.admin('GET', '/admin/v1/instances');
  assert.ok(!one.text.includes(secretPart(key)) && !list.text.includes(secretPart(key)));
  assertError(await t.admin('POST', '/admin/v1/instances/00000000-0000-0000-0000-000000000000/keys'), 404, 'INSTANCE_NOT_FOUND');
});

test('create: settings given at creation are checked merged with the defaults they land on', async () => {
  // minDelayMs 20000 alone is valid, but above the new-instance default maxDelayMs (12000)
  const r = await t.admin('POST', '/admin/v1/instances', { name: 'merged', settings: { minDelayMs: 20_000 } });
  assertError(r, 400, 'VALIDATION_FAILED');
  assert.equal(r.body.data?.field, 'settings.maxDelayMs');
  const names = ((await t.admin('GET', '/admin/v1/instances')).body.data?.items as { name: string }[]).map((i) => i.name);
  assert.ok(!names.includes('merged'), 'nothing was stored');
  const fine = await t.admin('POST', '/admin/v1/instances', { name: 'merged', settings: { minDelayMs: 20_000, maxDelayMs: 30_000 } });
  assert.equal(fine.status, 201, fine.text);
});

test('an id shaped like a uuid that is not one is 404 INSTANCE_NOT_FOUND on every route that names an instance, never a failed statement', async () => {
  // 36 characters of [0-9a-f-] in the wrong places: they passed a check of length and alphabet, and PostgreSQL's
  // uuid type refused them (500 INTERNAL_ERROR, found by the fuzzer on PATCH)
  const ids = ['9'.repeat(36), '-'.repeat(36), 'abcdef0123456789abcdef0123456789abcd', '00000000-0000-0000-0000-00000000000g'];
  const routes: Array<[string, string, unknown?]> = [
    ['GET', ''],
    ['PATCH', '', { settings: { storeIncomingMedia: false } }],
    ['DELETE', ''],
    ['POST', '/keys'],
    ['POST', '/restart'],
    ['POST', '/logout'],
    ['POST', '/pairing-code', { phoneNumber: '4915112345678' }],
    ['GET', '/qr'],
    ['POST', '/move', { nodeId: 'nobody' }],
    ['PUT', '/webhook', { url: 'https://example.com/hook', events: ['message.sent'] }],
    ['GET', '/webhook'],
    ['DELETE', '/webhook'],
    ['POST', '/webhook/test'],
    ['GET', '/webhook/deliveries'],
    ['POST', '/webhook/deliveries/ev_0123/redeliver'],
    ['GET', '/queue'],
    ['GET', '/queue/items'],
    ['DELETE', '/messages/wq_0123456789abcdef01234567'],
    ['POST', '/messages/wq_0123456789abcdef01234567/requeue'],
  ];
  for (const id of ids) {
    for (const [method, tail, body] of routes) {
      const r = await t.admin(method, `/admin/v1/instances/${id}${tail}`, body);
      assert.equal(r.status, 404, `${method} …/${id}${tail}: ${r.text}`);
      assert.equal(r.body.code, 'INSTANCE_NOT_FOUND', `${method} …/${id}${tail}: ${r.text}`);
    }
  }
  const health = await t.admin('GET', '/admin/v1/instances');
  assert.equal(health.status, 200, health.text);
});

test('DELETE while a v1 caller waits for its slot: the caller is told nothing was sent, not to poll a job that went with the instance', async () => {
  // found from the outside: 504 QUEUE_WAIT_TIMEOUT "still queued, poll the job, do not resend" for a job
  // deleted with its instance, whose key no longer worked
  const { instance, apiKey } = await t.createInstance('deletedwhilewaiting', {
    settings: { quietHours: null, maxPerHour: 1, maxPer24h: null, minDelayMs: 1000, maxDelayMs: 1000 },
  });
  const to = { phone: '4915112340009' };
  let first: ApiResponse | null = null;
  void t.api(apiKey, 'POST', '/api/send-message', { ...to, message: 'uses the hour' }).then((r) => (first = r));
  // a second of simulated time at most per step, the gateway's queries back before each: a jump straight to the
  // next timer went to the v1 wait's deadline while the send's claim and outcome were still on their way (a 504
  // in a full run on a loaded machine)
  await t.advanceUntil(() => first, 'the first v1 send answered', { stepMs: 1_000, storeIdle: true });
  assert.equal((first as ApiResponse | null)?.status, 200);

  let waiting: ApiResponse | null = null;
  void t.api(apiKey, 'POST', '/api/send-message', { ...to, message: 'waits an hour' }).then((r) => (waiting = r));
  await t.advanceUntil(async () => (await t.gw.pool.query("SELECT 1 FROM jobs WHERE payload::text LIKE '%waits an hour%'")).rowCount, 'the second accepted');
  const deleted = await t.admin('DELETE', `/admin/v1/instances/${instance.id}`);
  assert.equal(deleted.status, 200, deleted.text);
  const r = await t.advanceUntil(() => waiting, 'the waiting v1 send answered', { stepMs: 500, maxMs: 60_000 });
  assert.equal(r.status, 503, r.text);
  assert.deepEqual(Object.keys(r.body), ['success', 'error'], 'the v1 shape');
  assert.match(String(r.body.error), /deleted.*nothing was sent/);
});

test('webhook PUT: the URL is kept as deliveries use it, and credentials that could never be sent are refused', async () => {
  const created = await t.admin('POST', '/admin/v1/instances', { name: 'hook-url', driver: 'sandbox' });
  const id = String((created.body.data as { instance: { id: string } }).instance.id);
  const put = (url: string) => t.admin('PUT', `/admin/v1/instances/${id}/webhook`, { url, secret: 'a-webhook-secret-0123456789', allowPrivate: true });

  // spaces around it and a tab inside the host: what is shown is where deliveries go (example.com.evil.com)
  const spaced = await put(' http://example.com\t.evil.com/ho\u0007ok ');
  assert.equal(spaced.status, 200, spaced.text);
  assert.equal((spaced.body.data as { url: string }).url, 'http://example.com.evil.com/ho%07ok');
  const shown = await t.admin('GET', `/admin/v1/instances/${id}/webhook`);
  assert.equal((shown.body.data as { url: string }).url, 'http://example.com.evil.com/ho%07ok');

  // a `%` in the password that is not percent-encoding: the Basic header could never be made
  for (const url of ['http://user:p%ss@127.0.0.1:9/hook', 'http://user%E0%A4:pass@127.0.0.1:9/hook']) {
    const bad = await put(url);
    assertError(bad, 400, 'VALIDATION_FAILED');
    assert.deepEqual([bad.body.data?.field, bad.body.data?.reason], ['url', 'invalid_url'], bad.text);
    assert.ok(!bad.text.includes('p%ss') && !bad.text.includes('pass@'), 'the credentials are not echoed');
  }
  // written as the error says, it is taken, and the view masks the password
  const fixed = await put('http://user:p%25ss@127.0.0.1:9/hook');
  assert.equal(fixed.status, 200, fixed.text);
  assert.equal((fixed.body.data as { url: string }).url, 'http://user:***@127.0.0.1:9/hook');
});

/**
 * The instance actors over the whole gateway, on simulated time: the link flow, recovery with backoff,
 * quarantine, the ordered restart and its v2 pause, sends refused while offline, isolation between instances
 * and the operator's debug view (which never shows a secret). Real HTTP, real PostgreSQL, the sandbox network.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { settle, startTestGateway, type ApiResponse, type TestGateway } from '../helpers/gateway.js';
import { instanceActorId } from '../../machines/supervisor.machine.js';
import { instanceStatus, type InstanceSnapshot } from '../../machines/instance.machine.js';

const HARD_MS = 30_000; // ORDERED_RESTART_HARD_MS for this gateway, so the test sees the setting applied
const FAST = { minDelayMs: 1000, maxDelayMs: 1000, quietHours: null, maxPerHour: null, maxPer24h: null };
const RECIPIENT = '4915112340009';

let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'instance_lifecycle', simulated: true, env: { ORDERED_RESTART_HARD_MS: String(HARD_MS) } });
});
after(async () => {
  await t.stop();
});

type Health = { instances: Record<'total' | 'online' | 'offline' | 'starting' | 'degraded' | 'quarantined', number> };
const health = async (): Promise<Health> => (await (await fetch(`${t.url}/health`)).json()) as Health;
const status = async (key: string) => {
  const r = await t.api(key, 'GET', '/api/status');
  assert.equal(r.status, 200, r.text);
  return r.body.data as { status: string; connected: boolean; phoneNumber: string; browser: { alive: boolean; failStreak: number; lastOkAt: number } };
};
const send = (key: string, message = 'hello') => t.api(key, 'POST', '/api/v2/send-message', { phone: RECIPIENT, message });
const fail = async (id: string, kind: 'session_crash' | 'browser_death' | 'disconnect') => {
  const r = await t.admin('POST', `/sandbox/v1/instances/${id}/fail`, { kind, reason: `test ${kind}` });
  assert.equal(r.status, 200, r.text);
};
const untilStatus = (key: string, want: string, maxMs = 120_000) =>
  t.advanceUntil(async () => ((await status(key)).status === want ? true : null), `status ${want}`, { maxMs });

/**
 * Every SPEC.md status value the instance actor passes through, in order (from XState inspection), starting
 * with the status the create answer reported (`first`), when given.
 */
function recordStatuses(instanceId: string, first?: string): { seen: string[]; stop: () => void } {
  const ref = t.gw.actors.instanceActor(instanceId);
  assert.ok(ref, 'the instance actor runs');
  const now = instanceStatus(ref.getSnapshot() as InstanceSnapshot);
  const seen: string[] = first && first !== now ? [first, now] : [now];
  const stop = t.gw.actors.subscribe((ev) => {
    if (ev.type !== '@xstate.snapshot' || ev.actorRef !== ref) return;
    const s = instanceStatus(ev.snapshot as InstanceSnapshot);
    if (seen[seen.length - 1] !== s) seen.push(s);
  });
  return { seen, stop };
}

function assertOffline(r: ApiResponse, wantStatus: string): Record<string, unknown> {
  assert.equal(r.status, 503, r.text);
  assert.equal(r.body.success, false);
  assert.equal(r.body.code, 'INSTANCE_OFFLINE', r.text);
  const inst = r.body.data?.instance as Record<string, unknown>;
  assert.ok(inst && typeof inst === 'object', `data.instance carries details: ${r.text}`);
  assert.equal(inst.status, wantStatus, r.text);
  assert.equal(typeof inst.detail, 'string');
  return inst;
}

test('link flow: initializing → waiting_qr (QR data URL, rotating) → authenticated → connected', async () => {
  const created = await t.admin('POST', '/admin/v1/instances', { name: 'linker', settings: FAST });
  assert.equal(created.status, 201, created.text);
  const { instance, apiKey } = created.body.data as { instance: { id: string; status: string }; apiKey: string };
  const rec = recordStatuses(instance.id, instance.status);
  assert.equal(instance.status, 'initializing', 'a new instance starts initializing');

  await t.advanceUntil(async () => ((await status(apiKey)).status === 'waiting_qr' ? true : null), 'waiting_qr', { maxMs: 5_000 });
  const qr = await t.api(apiKey, 'GET', '/api/qr');
  assert.equal(qr.status, 200, qr.text);
  assert.deepEqual(Object.keys(qr.body.data ?? {}).sort(), ['qr', 'status']);
  assert.equal(qr.body.data?.status, 'waiting_qr');
  const png = String(qr.body.data?.qr);
  assert.match(png, /^data:image\/png;base64,[A-Za-z0-9+/=]+$/);
  assert.ok(Buffer.from(png.split(',')[1] ?? '', 'base64').subarray(1, 4).toString() === 'PNG', 'a real PNG');
  assertOffline(await send(apiKey), 'waiting_qr');
  assert.equal((await status(apiKey)).connected, false);

  // the network rotates the QR every 20 s; the endpoint follows, and a stale scan is refused
  const first = (await t.admin('GET', `/sandbox/v1/instances/${instance.id}/qr`)).body.data as { token: string };
  await t.advanceUntil(async () => {
    const now = await t.api(apiKey, 'GET', '/api/qr');
    return now.body.data?.qr !== png ? true : null;
  }, 'a new QR', { maxMs: 25_000 });
  const stale = await t.admin('POST', `/sandbox/v1/instances/${instance.id}/link`, { qr: first.token, phoneNumber: '4915112349001' });
  assert.equal(stale.status, 409, stale.text);
  assert.equal((await status(apiKey)).status, 'waiting_qr');

  const current = (await t.admin('GET', `/sandbox/v1/instances/${instance.id}/qr`)).body.data as { token: string };
  const linked = await t.admin('POST', `/sandbox/v1/instances/${instance.id}/link`, { qr: current.token, phoneNumber: '4915112349001' });
  assert.equal(linked.status, 200, linked.text);
  await untilStatus(apiKey, 'connected', 5_000);
  rec.stop();
  assert.deepEqual(rec.seen, ['initializing', 'waiting_qr', 'authenticated', 'connected']);

  const q = await t.api(apiKey, 'GET', '/api/qr');
  assert.deepEqual(q.body.data, { status: 'connected', phoneNumber: '4915112349001' });
  const s = await status(apiKey);
  assert.equal(s.status, 'connected');
  assert.equal(s.connected, true);
  assert.equal(s.phoneNumber, '4915112349001');
  assert.deepEqual(Object.keys(s.browser).sort(), ['alive', 'failStreak', 'lastOkAt']);
  assert.equal(s.browser.alive, true);
  assert.equal(s.browser.failStreak, 0);
  assert.ok(s.browser.lastOkAt > 0 && s.browser.lastOkAt <= t.clock.now(), 'lastOkAt is unix ms of the simulated clock');
  assert.equal((await send(apiKey)).status, 202);
});

test('a session crash: error → backoff → connected again, failStreak counted; browser death too; reset once stable', async () => {
  const { instance, apiKey } = await t.createInstance('crasher', { settings: FAST });
  const rec = recordStatuses(instance.id);
  await fail(instance.id, 'session_crash');
  const crashedAt = t.clock.now();
  const s = await status(apiKey);
  assert.equal(s.status, 'error');
  assert.equal(s.connected, false);
  assert.equal(s.browser.alive, false);
  assert.equal(s.browser.failStreak, 1);
  const q = await t.api(apiKey, 'GET', '/api/qr');
  assert.equal(q.body.data?.status, 'error');
  assert.equal(typeof q.body.data?.message, 'string');
  assert.ok(!('qr' in (q.body.data ?? {})));
  const offline = assertOffline(await send(apiKey), 'error');
  assert.match(String(offline.lastError), /SESSION_CRASHED/);
  assertOffline(await t.api(apiKey, 'GET', '/api/v2/chats'), 'error'); // reads are refused the same way

  await untilStatus(apiKey, 'connected');
  const waited = t.clock.now() - crashedAt;
  // first backoff: 1 s nominal, ±20 % jitter; the restart waited for it
  assert.ok(waited >= 800 && waited <= 1_200, `reconnected after ${waited} ms`);
  const back = await status(apiKey);
  assert.equal(back.browser.alive, true);
  assert.equal(back.browser.failStreak, 1, 'the streak stays counted while not yet stable');
  assert.deepEqual(rec.seen, ['connected', 'error', 'initializing', 'authenticated', 'connected']);

  // a second failure in a row (browser death) waits longer: 2 s nominal
  await fail(instance.id, 'browser_death');
  const diedAt = t.clock.now();
  assert.equal((await status(apiKey)).browser.failStreak, 2);
  assert.equal((await status(apiKey)).status, 'error');
  await untilStatus(apiKey, 'connected');
  const waited2 = t.clock.now() - diedAt;
  assert.ok(waited2 >= 1_600 && waited2 <= 2_400, `reconnected after ${waited2} ms`);
  rec.stop();

  // connected for a stable minute: the streak resets
  await t.advanceUntil(async () => ((await status(apiKey)).browser.failStreak === 0 ? true : null), 'streak reset', { maxMs: 61_000 });
  assert.equal((await send(apiKey)).status, 202);
});

test('quarantine after repeated failures: no automatic restart, counted by /health; the operator restart releases it', async () => {
  const { instance, apiKey } = await t.createInstance('fragile', { settings: FAST });
  const before = await health();
  const kinds = ['session_crash', 'browser_death', 'disconnect', 'session_crash'] as const;
  for (const kind of kinds) {
    await fail(instance.id, kind);
    await untilStatus(apiKey, 'connected');
  }
  assert.equal((await status(apiKey)).browser.failStreak, 4);
  await fail(instance.id, 'session_crash'); // the fifth within ten minutes
  const s = await status(apiKey);
  assert.equal(s.status, 'disconnected');
  assert.equal(s.connected, false);
  const h = await health();
  assert.equal(h.instances.quarantined, before.instances.quarantined + 1);
  assert.equal(h.instances.online, before.instances.online - 1);
  assert.equal(h.instances.total, before.instances.total);
  const inst = assertOffline(await send(apiKey), 'disconnected');
  assert.match(String(inst.detail), /quarantined/);
  const op = await t.admin('GET', `/admin/v1/instances/${instance.id}`);
  assert.equal(op.body.data?.quarantined, true);

  // nothing restarts it by itself, however long
  await t.advance(30 * 60_000, 60_000);
  assert.equal((await status(apiKey)).status, 'disconnected');
  assert.equal((await health()).instances.quarantined, before.instances.quarantined + 1);

  const r = await t.admin('POST', `/admin/v1/instances/${instance.id}/restart`);
  assert.equal(r.status, 202, r.text);
  await untilStatus(apiKey, 'connected', 10_000);
  const after = await status(apiKey);
  assert.equal(after.browser.failStreak, 0);
  assert.equal((await health()).instances.quarantined, before.instances.quarantined);
  assert.equal((await send(apiKey)).status, 202);
});

test('ordered restart: 503 QUEUE_PAUSED on v2 sends while in progress, instance_restarting emitted, then sends again', async () => {
  const { instance, apiKey } = await t.createInstance('restarter', { settings: FAST });
  const hook = await t.admin('PUT', `/admin/v1/instances/${instance.id}/webhook`, { url: 'http://127.0.0.1:9/hook', secret: 'restart-hook-secret-0123', allowPrivate: true, events: ['instance_restarting'] });
  assert.ok(hook.status < 300, hook.text);
  const rec = recordStatuses(instance.id);

  const r = await t.admin('POST', `/admin/v1/instances/${instance.id}/restart`);
  assert.equal(r.status, 202, r.text);
  const paused = await send(apiKey);
  assert.equal(paused.status, 503, paused.text);
  assert.equal(paused.body.code, 'QUEUE_PAUSED');
  assert.equal(paused.body.success, false);
  // every /api/v2/* route, not only sends; v1 routes are not paused (they wait)
  for (const route of ['/api/v2/queue', '/api/v2/chats', '/api/v2/queue/items']) {
    const other = await t.api(apiKey, 'GET', route);
    assert.equal(other.status, 503, `${route}: ${other.text}`);
    assert.equal(other.body.code, 'QUEUE_PAUSED', route);
  }
  assert.equal((await status(apiKey)).status, 'initializing');
  assert.equal((await t.admin('GET', `/admin/v1/instances/${instance.id}`)).body.data?.paused, true);
  // the v1 number lookup is a v1 route: not refused QUEUE_PAUSED, it waits for the restart and answers then
  let lookedUp: ApiResponse | null = null;
  const lookup = t.api(apiKey, 'GET', '/api/check-number/4915112345678').then((x) => (lookedUp = x));
  await settle();
  assert.equal(lookedUp, null, 'the lookup waits while the restart lasts');

  await untilStatus(apiKey, 'connected', 10_000);
  const looked = await t.advanceUntil(() => lookedUp, 'the v1 lookup after the restart', { maxMs: 5_000 });
  await lookup;
  assert.equal(looked.status, 200, looked.text);
  assert.deepEqual(Object.keys(looked.body.data ?? {}).sort(), ['phone', 'registered', 'whatsappId']);
  rec.stop();
  assert.deepEqual(rec.seen, ['connected', 'initializing', 'authenticated', 'connected']);
  assert.equal((await send(apiKey)).status, 202);
  const deliveries = await t.admin('GET', `/admin/v1/instances/${instance.id}/webhook/deliveries`);
  const events = (deliveries.body.data?.items as { event: string }[]).map((d) => d.event);
  assert.deepEqual(events, ['instance_restarting']);
});

test('ordered restart that does not come back: paused until ORDERED_RESTART_HARD_MS, then INSTANCE_OFFLINE', async () => {
  const { instance, apiKey } = await t.createInstance('unlinked', { settings: FAST });
  // the phone removes the linked device: logged out, a new QR is needed
  assert.equal((await t.admin('POST', `/sandbox/v1/instances/${instance.id}/unlink`)).status, 200);
  assert.equal((await status(apiKey)).status, 'disconnected');
  assertOffline(await send(apiKey), 'disconnected');

  assert.equal((await t.admin('POST', `/admin/v1/instances/${instance.id}/restart`)).status, 202);
  const startedAt = t.clock.now();
  assert.equal((await send(apiKey)).body.code, 'QUEUE_PAUSED');
  await t.advanceUntil(async () => ((await status(apiKey)).status === 'waiting_qr' ? true : null), 'waiting_qr', { maxMs: 5_000 });
  assert.equal((await send(apiKey)).body.code, 'QUEUE_PAUSED', 'still paused while waiting for a scan');
  await t.advanceUntil(async () => ((await send(apiKey)).body.code !== 'QUEUE_PAUSED' ? true : null), 'pause end', { maxMs: 200_000 });
  assert.equal(t.clock.now() - startedAt, HARD_MS, 'the pause ends at the configured ceiling');
  assertOffline(await send(apiKey), 'waiting_qr');

  const qr = (await t.admin('GET', `/sandbox/v1/instances/${instance.id}/qr`)).body.data as { token: string };
  assert.equal((await t.admin('POST', `/sandbox/v1/instances/${instance.id}/link`, { qr: qr.token, phoneNumber: '4915112349002' })).status, 200);
  await untilStatus(apiKey, 'connected', 5_000);
  assert.equal((await send(apiKey)).status, 202);
});

test('two instances fail independently: one crashes and is quarantined, the other keeps sending', async () => {
  const a = await t.createInstance('indep-a', { settings: FAST });
  const b = await t.createInstance('indep-b', { settings: FAST });
  const jobOf = (r: ApiResponse) => String(r.body.data?.jobId);
  const ledger = async (id: string) =>
    ((await t.admin('GET', `/sandbox/v1/instances/${id}/ledger`)).body.data as { items: { body: string | null }[] }).items.map((e) => e.body);

  for (let i = 0; i < 5; i++) {
    await fail(a.instance.id, 'session_crash');
    assert.equal((await status(a.apiKey)).status, i < 4 ? 'error' : 'disconnected'); // the fifth quarantines
    // B, meanwhile: connected, untouched, and its messages go out
    const sb = await status(b.apiKey);
    assert.equal(sb.status, 'connected');
    assert.equal(sb.browser.failStreak, 0);
    const r = await send(b.apiKey, `b${i}`);
    assert.equal(r.status, 202, r.text);
    const id = jobOf(r);
    await t.advanceUntil(async () => (await t.api(b.apiKey, 'GET', `/api/v2/messages/${id}`)).body.data?.state === 'sent' || null, `b${i} sent`, { maxMs: 60_000 });
    if (i < 4) await untilStatus(a.apiKey, 'connected');
  }
  assert.equal((await status(a.apiKey)).status, 'disconnected', 'A is quarantined');
  assert.equal((await t.admin('GET', `/admin/v1/instances/${a.instance.id}`)).body.data?.quarantined, true);
  assert.equal((await status(b.apiKey)).status, 'connected');
  assert.deepEqual(await ledger(b.instance.id), ['b0', 'b1', 'b2', 'b3', 'b4']);
  assert.deepEqual(await ledger(a.instance.id), []);
  assert.equal((await t.admin('GET', `/sandbox/v1/instances/${b.instance.id}`)).body.data?.phase, 'ready');
});

test('GET /debug/actors: operators only, every live actor, and never a secret', async () => {
  const { instance, apiKey } = await t.createInstance('secretive', { link: false });
  await t.advanceUntil(async () => ((await status(apiKey)).status === 'waiting_qr' ? true : null), 'waiting_qr', { maxMs: 5_000 });
  const qrShown = String((await t.api(apiKey, 'GET', '/api/qr')).body.data?.qr);
  const qrToken = ((await t.admin('GET', `/sandbox/v1/instances/${instance.id}/qr`)).body.data as { token: string }).token;
  await t.gw.actors.port(instance.id)?.ask({ type: 'pairingCode', phoneNumber: '4915112349003' }, 10_000);
  const code = await t.advanceUntil(() => {
    const ref = t.gw.actors.instanceActor(instance.id);
    return (ref?.getSnapshot() as InstanceSnapshot | undefined)?.context.pairingCode?.code ?? null;
  }, 'a pairing code', { maxMs: 5_000 });
  const webhookSecret = 'debug-hook-secret-0123456789';
  assert.ok((await t.admin('PUT', `/admin/v1/instances/${instance.id}/webhook`, { url: 'http://127.0.0.1:9/hook', secret: webhookSecret, allowPrivate: true })).status < 300);
  const secrets: [string, string][] = [
    ['QR data URL', qrShown],
    ['QR payload', qrToken],
    ['pairing code', code],
    ['API key', apiKey],
    ['API key (random part)', apiKey.split('_').slice(2).join('_')],
    ['admin token', t.adminToken],
    ['webhook secret', webhookSecret],
  ];
  assert.ok(qrShown.startsWith('data:image/png;base64,') && qrToken.length > 20 && code.length >= 8);

  const refusedKey = await t.api(apiKey, 'GET', '/debug/actors');
  assert.equal(refusedKey.status, 403, refusedKey.text);
  assert.equal(refusedKey.body.code, 'FORBIDDEN');
  assert.equal((await fetch(`${t.url}/debug/actors`)).status, 401);
  const refusedStream = await t.api(apiKey, 'GET', '/debug/actors/stream');
  assert.equal(refusedStream.status, 403);

  const r = await t.admin('GET', '/debug/actors');
  assert.equal(r.status, 200, r.text);
  for (const [what, value] of secrets) assert.ok(!r.text.includes(value), `no ${what} in /debug/actors`);
  const actors = r.body.data?.actors as { id: string; machine: string; state: unknown; status: string; context: Record<string, unknown> }[];
  assert.ok(actors.some((x) => x.id === 'supervisor'));
  const mine = actors.find((x) => x.id === instanceActorId(instance.id));
  assert.ok(mine, 'the instance actor is listed');
  assert.equal(mine.machine, 'instance');
  assert.equal(mine.status, 'active');
  assert.equal(mine.context.status, 'waiting_qr');
  assert.deepEqual((mine.context.qr as { present: boolean }).present, false, 'the pairing code replaced the QR');
  assert.deepEqual((mine.context.pairingCode as { present: boolean }).present, true);
  // the instance actor owns its children: session, planner, dispatcher, webhook sender
  const children = actors.filter((x) => (x as { parent?: string }).parent === instanceActorId(instance.id)).map((x) => x.machine).sort();
  assert.deepEqual(children, ['dispatcher', 'planner', 'session', 'webhooks']);

  // HEAD: the stream's headers, and the server ends the connection as asked (it held it open, subscribed)
  const head = await new Promise<string>((resolve, reject) => {
    const u = new URL(t.url);
    const socket = net.connect(Number(u.port), u.hostname, () => {
      // written, not ended: a client that keeps its side open, as a browser does
      socket.write(`HEAD /debug/actors/stream HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${t.adminToken}\r\nConnection: close\r\n\r\n`);
    });
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => (text += c));
    socket.setTimeout(5_000, () => {
      socket.destroy();
      reject(new Error(`HEAD /debug/actors/stream: the connection was held open after\n${text}`));
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
  });
  assert.match(head, /^HTTP\/1\.1 200 /);
  assert.match(head, /content-type: text\/event-stream/i);
  assert.ok(!head.includes('event: actors'), 'no body on HEAD');

  // the live stream: the first snapshot and the one after a change carry no secret either
  const ac = new AbortController();
  const res = await fetch(`${t.url}/debug/actors/stream`, { headers: { authorization: `Bearer ${t.adminToken}` }, signal: ac.signal });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  let text = '';
  const frames = () => text.split('\n\n').filter((f) => f.startsWith('event: actors')).length;
  while (frames() < 1) text += new TextDecoder().decode((await reader.read()).value);
  await fail(instance.id, 'disconnect'); // a change: the stream sends the next snapshot
  while (frames() < 2) text += new TextDecoder().decode((await reader.read()).value);
  ac.abort();
  await reader.cancel().catch(() => undefined);
  assert.ok(text.includes(instanceActorId(instance.id)));
  for (const [what, value] of secrets) assert.ok(!text.includes(value), `no ${what} in /debug/actors/stream`);
});

test('an idempotent retry of an accepted send is its 200 replay while the instance is offline or in an ordered restart; a send no job has the key of is refused 503 as before', async () => {
  // found from the outside: the retry of a send whose answer was lost was told 503 INSTANCE_OFFLINE ("nothing was
  // accepted") while its job waited to go out; a client that then sent it another way sent it twice
  const { instance, apiKey } = await t.createInstance('replayer', { settings: FAST });
  const notBefore = new Date(t.clock.now() + 3_600_000).toISOString();
  const body = { phone: RECIPIENT, message: 'kept for later', idempotencyKey: 'replay-while-offline-1', notBefore };
  const first = await t.api(apiKey, 'POST', '/api/v2/send-message', body);
  assert.equal(first.status, 202, first.text);
  const jobId = first.body.data?.jobId;
  const replayed = async (what: string) => {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-message', body);
    assert.equal(r.status, 200, `${what}: ${r.text}`);
    assert.equal(r.body.data?.idempotentReplay, true, what);
    assert.equal(r.body.data?.jobId, jobId, what);
    assert.equal(r.body.data?.status, first.body.data?.status, what);
    assert.equal(r.body.data?.scheduledAt, first.body.data?.scheduledAt, what);
    const other = await t.api(apiKey, 'POST', '/api/v2/send-message', { ...body, message: 'another text' });
    assert.equal(other.status, 409, `${what}: ${other.text}`);
    assert.deepEqual([other.body.code, other.body.data?.jobId], ['IDEMPOTENCY_PAYLOAD_MISMATCH', jobId], what);
  };

  assert.equal((await t.admin('POST', `/sandbox/v1/instances/${instance.id}/unlink`)).status, 200);
  assert.equal((await status(apiKey)).status, 'disconnected');
  await replayed('offline');
  assertOffline(await t.api(apiKey, 'POST', '/api/v2/send-message', { ...body, idempotencyKey: 'replay-while-offline-2' }), 'disconnected');
  assertOffline(await send(apiKey), 'disconnected');

  assert.equal((await t.admin('POST', `/admin/v1/instances/${instance.id}/restart`)).status, 202);
  await t.advanceUntil(async () => ((await status(apiKey)).status === 'waiting_qr' ? true : null), 'waiting_qr', { maxMs: 5_000 });
  await replayed('paused');
  for (const r of [
    await t.api(apiKey, 'POST', '/api/v2/send-message', { ...body, idempotencyKey: 'replay-while-offline-3' }),
    await send(apiKey),
    // refused by the route before its gate: answered after the pause, as any /api/v2/* route
    await t.api(apiKey, 'POST', '/api/v2/messages/wq_00000000000000000000000000/forward', { phone: RECIPIENT }),
  ]) {
    assert.equal(r.status, 503, r.text);
    assert.equal(r.body.code, 'QUEUE_PAUSED', r.text);
  }
  const jobs = await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs WHERE instance_id = $1', [instance.id]);
  assert.equal(jobs.rows[0]?.n, 1, 'one job, whatever was retried');
});

/**
 * Operator webhook routes over real HTTP: the project's Koa app (error boundary, JSON body) with the webhook
 * router, real PostgreSQL, and a real sender delivering `test` events to a loopback receiver.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { createApp } from '../../src/http/app.js';
import { silentLogger } from '../../src/log.js';
import { simulatedClock } from '../../src/clock.js';
import type { Resolver } from '../../src/media/ssrf.js';
import { createWebhookAdminRouter } from '../../src/http/routes/webhooks.js';
import { enqueueEvent } from '../../src/webhooks/outbox.js';
import { createWebhookSenders, type WebhookSenders } from '../../src/actors/webhook-sender.js';
import { createActor, type AnyActorRef } from 'xstate';

const SECRET = 'whsec_routes_0123456789abc';
// Names resolve through this table only: no real DNS in tests.
const resolver: Resolver = async (host) => {
  const table: Record<string, string> = { 'hooks.example.com': '93.184.216.34', 'internal.example.com': '10.1.2.3' };
  const address = table[host];
  if (!address) throw new Error('ENOTFOUND');
  return [{ address, family: 4 }];
};

let db: TestDb;
let base = '';
let server: http.Server;
let receiver: http.Server;
let receiverUrl = '';
const received: Array<{ headers: http.IncomingHttpHeaders; body: string; url: string }> = [];
const clock = simulatedClock();
let senders: WebhookSenders;
const actors: AnyActorRef[] = [];
const woken: string[] = [];

before(async () => {
  db = await createTestDb('webhook_routes');
  senders = createWebhookSenders({ db: db.pool, clock, resolver });
  const router = createWebhookAdminRouter({
    db: db.pool,
    clock,
    resolver,
    wake: (id) => {
      woken.push(id);
      senders.notify(id);
    },
    receiverChanged: (id) => senders.receiverChanged(id),
  });
  server = createApp({ log: silentLogger(), routers: [router] }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body, url: req.url ?? '' });
      res.writeHead(204).end();
    });
  });
  receiver.listen(0, '127.0.0.1');
  await new Promise((resolve) => receiver.once('listening', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});

after(async () => {
  for (const a of actors) a.stop();
  await senders.close();
  server.closeAllConnections();
  receiver.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await new Promise((resolve) => receiver.close(resolve));
  await db.close();
});

async function instance(): Promise<string> {
  const id = randomUUID();
  await db.pool.query(`INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')`, [id, `rt-${id.slice(0, 8)}`]);
  const actor = createActor(senders.logic, { input: { instanceId: id } });
  actor.start();
  actors.push(actor);
  return id;
}

interface Envelope {
  success: boolean;
  data: Record<string, unknown> & { items?: Array<Record<string, unknown>>; nextCursor?: string | null };
  code?: string;
  error?: string;
}
async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: Envelope; text: string }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text) as Envelope, text };
}
const hook = (id: string, rest = '') => `/admin/v1/instances/${id}/webhook${rest}`;

test('every route answers 404 INSTANCE_NOT_FOUND for an unknown instance', async () => {
  for (const id of [randomUUID(), 'not-a-uuid']) {
    for (const [method, path, body] of [
      ['PUT', hook(id), { url: 'https://hooks.example.com/x', secret: SECRET }],
      ['GET', hook(id)],
      ['DELETE', hook(id)],
      ['POST', hook(id, '/test'), {}],
      ['GET', hook(id, '/deliveries')],
    ] as const) {
      const r = await call(method, path, body);
      assert.equal(r.status, 404, `${method} ${path}`);
      assert.equal(r.json.code, 'INSTANCE_NOT_FOUND');
      assert.equal(r.json.success, false);
    }
  }
});

test('PUT validates the input and the SSRF rules, and never echoes the secret', async () => {
  const id = await instance();
  const bad = [
    [{ url: 'https://hooks.example.com/x' }, 'secret'],
    [{ url: 'https://hooks.example.com/x', secret: 'short' }, 'secret'],
    [{ url: 'ftp://hooks.example.com/x', secret: SECRET }, 'url'],
    [{ url: 'https://hooks.example.com/x', secret: SECRET, events: ['message', 'nope'] }, 'events.1'],
    [{ url: 'http://127.0.0.1:9/x', secret: SECRET }, 'url'],
    [{ url: 'https://internal.example.com/x', secret: SECRET }, 'url'],
  ] as const;
  for (const [body, field] of bad) {
    const r = await call('PUT', hook(id), body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.json.code, 'VALIDATION_FAILED');
    assert.equal(r.json.data.field, field);
    assert.equal(r.text.includes(SECRET), false);
  }

  const put = await call('PUT', hook(id), { url: 'https://hooks.example.com/x', secret: SECRET });
  assert.equal(put.status, 200);
  assert.deepEqual(put.json, {
    success: true,
    data: { url: 'https://hooks.example.com/x', events: ['message', 'ready', 'disconnected', 'instance_restarting', 'test'], allowPrivate: false, enabled: true },
  });
  const got = await call('GET', hook(id));
  assert.deepEqual(got.json.data, put.json.data);
  assert.equal(got.text.includes(SECRET), false);

  const priv = await call('PUT', hook(id), { url: 'http://10.0.0.7/x', secret: SECRET, events: ['*'], allowPrivate: true });
  assert.equal(priv.status, 200, 'private targets when the operator allows them');
  assert.deepEqual(priv.json.data.events, ['*']);

  assert.deepEqual((await call('DELETE', hook(id))).json.data, { deleted: true });
  assert.equal((await call('GET', hook(id))).json.code, 'NOT_FOUND');
  assert.deepEqual((await call('DELETE', hook(id))).json.data, { deleted: false });
});

test('POST test enqueues `test`, wakes the sender, and the delivery shows in the listing', async () => {
  const id = await instance();
  assert.equal((await call('POST', hook(id, '/test'), {})).json.code, 'NOT_FOUND', 'no webhook yet');
  await call('PUT', hook(id), { url: receiverUrl, secret: SECRET, events: ['message'], allowPrivate: true });
  const refused = await call('POST', hook(id, '/test'), {});
  assert.equal(refused.status, 409);
  assert.equal(refused.json.code, 'CONFLICT');

  await call('PUT', hook(id), { url: receiverUrl, secret: SECRET, allowPrivate: true });
  woken.length = 0;
  const r = await call('POST', hook(id, '/test'), { message: 'hello from the operator' });
  assert.equal(r.status, 202);
  const eventId = String(r.json.data.eventId);
  assert.match(eventId, /^ev_t[0-9a-f]{23}$/);
  assert.deepEqual(woken, [id]);
  await senders.get(id)!.idle();

  const got = received.find((x) => x.headers['x-event-id'] === eventId);
  assert.ok(got, 'the receiver got the test event');
  assert.equal(got.headers['x-event-type'], 'test');
  assert.deepEqual((JSON.parse(got.body) as { data: unknown }).data, { message: 'hello from the operator' });

  const list = await call('GET', hook(id, '/deliveries'));
  assert.equal(list.status, 200);
  const [item] = list.json.data.items ?? [];
  assert.ok(item);
  assert.equal(item.eventId, eventId);
  assert.equal(item.event, 'test');
  assert.equal(item.state, 'delivered');
  assert.equal(item.attempts, 1);
  assert.equal(item.maxAttempts, 3);
  assert.equal(item.lastStatus, 204);
  assert.equal((item.attemptLog as unknown[]).length, 1);
  assert.equal(list.text.includes(SECRET), false);
});

test('the URL is shown with its credentials masked (password, a user name alone, query values); stored and delivered to as given', async () => {
  const id = await instance();
  const shown = async (url: string) => {
    const put = await call('PUT', hook(id), { url, secret: SECRET });
    assert.equal(put.status, 200, put.text);
    const got = await call('GET', hook(id));
    assert.equal(got.json.data.url, put.json.data.url, 'PUT and GET show the same');
    const { rows } = await db.pool.query<{ url: string }>('SELECT url FROM webhooks WHERE instance_id = $1', [id]);
    assert.equal(rows[0]?.url, url, 'the stored URL is the one given');
    return { url: String(got.json.data.url), text: put.text + got.text };
  };
  const cases = [
    ['https://sk_live_SECRET1@hooks.example.com/ok', 'https://***@hooks.example.com/ok', ['sk_live_SECRET1']],
    ['https://ops:pw-SECRET2@hooks.example.com/ok', 'https://ops:***@hooks.example.com/ok', ['pw-SECRET2']],
    ['https://hooks.example.com/hook?token=abc-SECRET3', 'https://hooks.example.com/hook?token=***', ['abc-SECRET3']],
    ['https://hooks.example.com:8443/a/b?token=SECRET4&v=2&sig=SECRET5', 'https://hooks.example.com:8443/a/b?token=***&v=***&sig=***', ['SECRET4', 'SECRET5']],
    ['https://hooks.example.com/hook?SECRET6&v=', 'https://hooks.example.com/hook?***&v=***', ['SECRET6']],
    ['https://tok-SECRET7@hooks.example.com/hook?key=SECRET8#SECRET9', 'https://***@hooks.example.com/hook?key=***#***', ['SECRET7', 'SECRET8', 'SECRET9']],
    ['https://hooks.example.com/plain', 'https://hooks.example.com/plain', []],
  ] as const;
  for (const [url, masked, secrets] of cases) {
    const r = await shown(url);
    assert.equal(r.url, masked, url);
    for (const secret of secrets) assert.equal(r.text.includes(secret), false, `${secret} shown for ${url}`);
  }

  // a delivery goes to the URL as given, credentials and query included
  const target = new URL(receiverUrl);
  target.username = 'sk_live_DELIVERED';
  target.search = '?token=tok-DELIVERED&v=2';
  const put = await call('PUT', hook(id), { url: target.href, secret: SECRET, allowPrivate: true });
  assert.equal(put.json.data.url, `http://***@${target.host}${target.pathname}?token=***&v=***`);
  // a read, edit, write round trip that sends the URL back as shown is refused: stored, it would deliver `***`
  const shownUrl = String(put.json.data.url);
  const shownParsed = new URL(shownUrl);
  // and in the spellings found from the outside to slip past a comparison with the masked string
  for (const url of [
    shownUrl,
    shownUrl.replace(/^http:/, 'HTTP:'),
    shownUrl.replace(shownParsed.pathname, `${shownParsed.pathname}2`),
    shownUrl.replaceAll('***', '%2A%2A%2A'),
    'http://***@127.0.0.1:80/ok',
    'https://hooks.example.com/hook?token=***',
    'https://user:***@hooks.example.com/hook',
    'https://hooks.example.com/hook#***',
  ]) {
    const roundTrip = await call('PUT', hook(id), { url, secret: SECRET, allowPrivate: true, events: ['*'] });
    assert.equal(roundTrip.status, 400, `${url}: ${roundTrip.text}`);
    assert.equal(roundTrip.json.code, 'VALIDATION_FAILED');
    assert.equal(roundTrip.json.data.field, 'url');
  }
  const { rows: kept } = await db.pool.query<{ url: string }>('SELECT url FROM webhooks WHERE instance_id = $1', [id]);
  assert.equal(kept[0]?.url, target.href, 'the stored URL is untouched by the refused ones');
  const eventId = String((await call('POST', hook(id, '/test'), {})).json.data.eventId);
  await senders.get(id)!.idle();
  const got = received.find((x) => x.headers['x-event-id'] === eventId);
  assert.ok(got, 'the receiver got the test event');
  assert.equal(got.url, '/hook?token=tok-DELIVERED&v=2');
  assert.equal(got.headers.authorization, `Basic ${Buffer.from('sk_live_DELIVERED:').toString('base64')}`);
});

test('a token in the URL path (Slack, Discord, Zapier, a random one) is shown masked; the URL sent back as shown is refused; deliveries go to the real path', async () => {
  const id = await instance();
  const cases = [
    ['https://hooks.slack.com/services/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', 'https://hooks.slack.com/services/T0123ABCD/B0123ABCD/***', 'Ab3dEf6hIj9lMn2pQr5tUv8x'],
    ['https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX', 'https://hooks.slack.com/services/T00000000/B00000000/***', 'XXXXXXXXXXXXXXXXXXXXXXXX'],
    ['https://discord.com/api/webhooks/123456789012345678/aBcD-eFgH_1234567890abcdefghijklmnopq', 'https://discord.com/api/webhooks/123456789012345678/***', 'aBcD-eFgH_1234567890abcdefghijklmnopq'],
    ['https://hooks.zapier.com/hooks/catch/1234567/o0h5dcd/', 'https://hooks.zapier.com/hooks/catch/1234567/***/', 'o0h5dcd'],
    ['https://hooks.example.com/webhook/3f2504e0-4f89-11d3-9a0c-0305e82c3301?v=2', 'https://hooks.example.com/webhook/***?v=***', '3f2504e0-4f89-11d3-9a0c-0305e82c3301'],
  ] as const;
  for (const [url, masked, token] of cases) {
    const put = await call('PUT', hook(id), { url, secret: SECRET, allowPrivate: true });
    assert.equal(put.status, 200, put.text);
    const got = await call('GET', hook(id));
    assert.equal(put.json.data.url, masked, url);
    assert.equal(got.json.data.url, masked, url);
    assert.equal((put.text + got.text).includes(token), false, `${token} shown`);
    // sent back as shown: refused, the stored URL kept, nothing of it echoed
    const back = await call('PUT', hook(id), { url: masked, secret: SECRET, allowPrivate: true });
    assert.equal(back.status, 400, `${masked}: ${back.text}`);
    assert.equal(back.json.code, 'VALIDATION_FAILED');
    assert.equal(back.json.data.field, 'url');
    assert.equal(back.text.includes('hooks.'), false, back.text);
    const { rows } = await db.pool.query<{ url: string }>('SELECT url FROM webhooks WHERE instance_id = $1', [id]);
    assert.equal(rows[0]?.url, url, 'the stored URL is the one given, untouched by the refused one');
  }

  // the full URL given again is taken (as for a query credential), and a delivery goes to the real path
  const token = 'Pz7kQ2mX9vL4nR8sT1wY';
  const target = `${receiverUrl}/${token}`;
  const put = await call('PUT', hook(id), { url: target, secret: SECRET, allowPrivate: true, events: ['test'] });
  assert.equal(put.status, 200, put.text);
  assert.equal(put.json.data.url, `${new URL(receiverUrl).origin}/hook/***`);
  const eventId = String((await call('POST', hook(id, '/test'), {})).json.data.eventId);
  await senders.get(id)!.idle();
  const got = received.find((x) => x.headers['x-event-id'] === eventId);
  assert.ok(got, 'the receiver got the test event');
  assert.equal(got.url, `/hook/${token}`);
});

test('deliveries: newest first, cursor pages, state filter, query validation', async () => {
  const id = await instance();
  await call('PUT', hook(id), { url: 'https://hooks.example.com/x', secret: SECRET, events: ['*'] });
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    ids.push((await enqueueEvent(db.pool, { instanceId: id, now: clock.now(), event: 'test', data: { message: String(i) } }))!.eventId);
  }
  await db.pool.query(`UPDATE outbox SET state = 'failed' WHERE event_id = $1`, [ids[1]]);

  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const q: string = cursor ? `?limit=2&cursor=${cursor}` : '?limit=2';
    const page = await call('GET', hook(id, `/deliveries${q}`));
    assert.equal(page.status, 200);
    assert.ok((page.json.data.items ?? []).length <= 2);
    seen.push(...(page.json.data.items ?? []).map((x) => String(x.eventId)));
    cursor = page.json.data.nextCursor ?? null;
  } while (cursor);
  assert.deepEqual(seen, [...ids].reverse());

  const failed = await call('GET', hook(id, '/deliveries?state=failed'));
  assert.deepEqual((failed.json.data.items ?? []).map((x) => x.eventId), [ids[1]]);
  for (const q of ['?limit=0', '?limit=201', '?limit=x', '?state=lost', '?cursor=zzz']) {
    const r = await call('GET', hook(id, `/deliveries${q}`));
    assert.equal(r.status, 400, q);
    assert.equal(r.json.code, 'VALIDATION_FAILED');
  }
});

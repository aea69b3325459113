/**
 * Every route of the network families (reads, groups, interactions, message media) reaches its instance only
 * through the instance's port (src/actors/port.ts), with plain data: each route of the route table is called
 * once with a valid request over the real Koa app, and the harness's port records what it was asked. Each
 * request must have asked at least once, under its family's gateway deadline, and every ask must survive a
 * structured clone and a JSON round trip unchanged (no functions, no class instances, nothing undefined), so a
 * port to another node can carry it as it is.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type Router from '@koa/router';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { simulatedClock } from '../../src/clock.js';
import { InteractionLimiter } from '../../src/http/rate-limit.js';
import { PresenceManager } from '../../src/actors/presence.js';
import { routeTable } from '../../src/http/router.js';
import { readsRouter } from '../../src/http/routes/reads.js';
import { legacyReadsRouter } from '../../src/http/routes/legacy-reads.js';
import { groupsRouter } from '../../src/http/routes/groups.js';
import { interactionsRouter } from '../../src/http/routes/interactions.js';
import { messageMediaRouter } from '../../src/http/routes/message-media.js';
import { createMediaStore, type MediaStore } from '../../src/media/store.js';
import { createInstance, type Instance } from '../../src/store/instances.js';
import { DEADLINES, NETWORK_OPS, type InstanceAsk } from '../../src/actors/port.js';
import { MiniNetwork, TestPort, serve, request, keys, type Served } from './routes-harness.js';

const ALICE = '4915111111111@c.us';
const BOB = '4915122222222@c.us';
const CAROL = '4915133333333@c.us';
const GROUP = '120363000000000001@g.us';
const enc = encodeURIComponent;

type Family = 'reads' | 'v1-reads' | 'groups' | 'interactions' | 'message-media';
/** the gateway deadline each family asks under (SPEC.md "Limits") */
const DEADLINE_OF: Record<Family, number> = {
  reads: DEADLINES.read,
  'v1-reads': DEADLINES.read,
  groups: DEADLINES.interaction,
  interactions: DEADLINES.interaction,
  'message-media': DEADLINES.read,
};

const isPlainData = (ask: InstanceAsk): void => {
  const label = JSON.stringify(ask);
  assert.deepStrictEqual(structuredClone(ask), ask, `structuredClone keeps ${label}`);
  assert.deepStrictEqual(JSON.parse(JSON.stringify(ask)), ask, `a JSON round trip keeps ${label}`);
};

describe('the network route families reach an instance only through its port, with plain data', () => {
  const clock = simulatedClock();
  const net = new MiniNetwork(clock);
  const limiter = new InteractionLimiter(clock, { points: 10_000 });
  const presence = new PresenceManager(clock);
  let db: TestDb;
  let dataDir: string;
  let store: MediaStore;
  let instance: Instance;
  let port: TestPort;
  let srv: Served;
  let families: Record<Family, Router>;
  const ids = { incoming: '', mine: '', doomed: '', withMedia: '' };

  before(async () => {
    db = await createTestDb('port_asks');
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-port-asks-'));
    store = createMediaStore({ pool: db.pool, dataDir, clock, freeDiskBytes: async () => 1e12 });
    instance = (await createInstance(db.pool, { name: 'port-asks', driver: 'sandbox' })).instance;
    port = new TestPort(instance.id, net, clock);

    net.addChat({ id: ALICE, unreadCount: 2 });
    for (const c of [ALICE, BOB, CAROL]) net.addContact(c, null);
    net.pictures.set(ALICE, 'https://pps.example/alice.jpg');
    net.addGroup(GROUP, [ALICE, BOB]);
    ids.incoming = net.addMessage(ALICE, { fromMe: false, body: 'hi' }).id._serialized;
    ids.mine = net.addMessage(ALICE, { fromMe: true, body: 'hello' }).id._serialized;
    ids.doomed = net.addMessage(ALICE, { fromMe: true, body: 'oops' }).id._serialized;
    ids.withMedia = net.addMessage(ALICE, {
      fromMe: false,
      body: '',
      media: { mimetype: 'image/png', data: Buffer.from('not really a png').toString('base64'), filename: 'pic.png' },
    }).id._serialized;

    const deps = { portOf: () => port, clock, limiter, presence, fetchMessagesMax: 200 };
    // mounted in the gateway's order (src/gateway.ts)
    families = {
      'message-media': messageMediaRouter({ portOf: () => port, store }),
      groups: groupsRouter(deps),
      interactions: interactionsRouter(deps),
      reads: readsRouter(deps),
      'v1-reads': legacyReadsRouter({ portOf: () => port, clock, waitMs: 20_000 }),
    };
    srv = await serve(Object.values(families), { instance });
  });

  after(async () => {
    presence.stopAll();
    await srv?.close();
    await db?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** One valid request per route, keyed by the route table's `METHOD path`. */
  const requests = (): Record<string, { path: string; body?: unknown }> => ({
    // reads
    'GET /api/v2/chats': { path: '/api/v2/chats' },
    'GET /api/v2/chats/:chatId': { path: `/api/v2/chats/${enc(ALICE)}` },
    'GET /api/v2/chats/:chatId/messages': { path: `/api/v2/chats/${enc(ALICE)}/messages?fromMe=1&limit=10` },
    'GET /api/v2/messages/:msgId': { path: `/api/v2/messages/${enc(ids.incoming)}` },
    'GET /api/v2/contacts/:contactId': { path: `/api/v2/contacts/${enc(ALICE)}` },
    'GET /api/v2/contacts/:contactId/picture': { path: `/api/v2/contacts/${enc(ALICE)}/picture` },
    'GET /api/v2/contacts/:phone/exists': { path: '/api/v2/contacts/4915111111111/exists' },
    'GET /api/check-number/:phone': { path: '/api/check-number/015111111111' },
    // groups
    'POST /api/v2/groups/:groupId/participants': { path: `/api/v2/groups/${enc(GROUP)}/participants`, body: { participants: [CAROL] } },
    'DELETE /api/v2/groups/:groupId/participants': { path: `/api/v2/groups/${enc(GROUP)}/participants`, body: { participants: [BOB] } },
    'POST /api/v2/groups/:groupId/admins': { path: `/api/v2/groups/${enc(GROUP)}/admins`, body: { participants: [ALICE] } },
    'DELETE /api/v2/groups/:groupId/admins': { path: `/api/v2/groups/${enc(GROUP)}/admins`, body: { participants: [ALICE] } },
    'GET /api/v2/groups/:groupId/invite': { path: `/api/v2/groups/${enc(GROUP)}/invite` },
    'POST /api/v2/groups/:groupId/invite/revoke': { path: `/api/v2/groups/${enc(GROUP)}/invite/revoke` },
    'POST /api/v2/groups/:groupId/leave': { path: `/api/v2/groups/${enc(GROUP)}/leave` },
    'PATCH /api/v2/groups/:groupId': { path: `/api/v2/groups/${enc(GROUP)}`, body: { subject: 'Renamed', description: 'About us' } },
    // interactions
    'POST /api/v2/messages/:msgId/reaction': { path: `/api/v2/messages/${enc(ids.incoming)}/reaction`, body: { emoji: '👍' } },
    'DELETE /api/v2/messages/:msgId/reaction': { path: `/api/v2/messages/${enc(ids.incoming)}/reaction` },
    'POST /api/v2/chats/:chatId/seen': { path: `/api/v2/chats/${enc(ALICE)}/seen` },
    'POST /api/v2/chats/:chatId/typing': { path: `/api/v2/chats/${enc(ALICE)}/typing`, body: { durationMs: 60_000 } },
    'POST /api/v2/chats/:chatId/recording': { path: `/api/v2/chats/${enc(ALICE)}/recording`, body: {} },
    'DELETE /api/v2/chats/:chatId/state': { path: `/api/v2/chats/${enc(ALICE)}/state` },
    'PATCH /api/v2/messages/:msgId': { path: `/api/v2/messages/${enc(ids.mine)}`, body: { message: 'edited', options: { linkPreview: false, mentions: [BOB] } } },
    'DELETE /api/v2/messages/:msgId': { path: `/api/v2/messages/${enc(ids.doomed)}`, body: { everyone: true } },
    // message media: the bytes, so the attachment is asked for too
    'GET /api/v2/messages/:msgId/media': { path: `/api/v2/messages/${enc(ids.withMedia)}/media?download=1` },
  });

  test('every route asks the port at least once, under its deadline, with plain data only', async () => {
    const rows = routeTable(Object.entries(families).map(([name, router]) => ({ name, auth: 'instance' as const, guard: null, router })));
    const cases = requests();
    assert.deepEqual(rows.map((r) => `${r.method} ${r.path}`).sort(), keys(cases), 'a valid request for every mounted route, and no other');
    assert.equal(rows.length, 25);

    for (const row of rows) {
      const key = `${row.method} ${row.path}`;
      const c = cases[key];
      assert.ok(c, key);
      const first = port.asks.length;
      const r = await request(srv.url, row.method, c.path, c.body);
      assert.equal(r.status, 200, `${key}: ${JSON.stringify(r.body)}`);
      if (key.endsWith('/media')) assert.equal(r.body.raw, 'not really a png', 'the attachment\'s bytes');
      let asked = port.asks.slice(first);
      let deadlines = port.deadlines.slice(first);
      if (row.family === 'v1-reads') {
        // the v1 lookup looks at the instance's view first (an ordered restart holds it: src/http/routes/legacy-reads.ts)
        assert.equal(asked[0]?.type, 'view', key);
        asked = asked.slice(1);
        deadlines = deadlines.slice(1);
      }
      assert.ok(asked.length >= 1, `${key} asked the port`);
      for (const ask of asked) {
        isPlainData(ask);
        assert.equal(ask.type, 'network', `${key}: ${ask.type}`);
        if (ask.type === 'network') assert.ok(NETWORK_OPS.includes(ask.op), `${key}: ${ask.op}`);
      }
      const family = row.family as Family;
      assert.deepEqual(deadlines, asked.map(() => DEADLINE_OF[family]), `${key} asks under the ${family} deadline`);
    }
    assert.deepEqual(port.reported, [], 'no failure the session could not classify');
  });

  test('the asks carry the route’s own 404 as data (`notFound`), never a function', async () => {
    const first = port.asks.length;
    const unknown = `true_${ALICE}_FFFFFFFF`;
    let r = await request(srv.url, 'POST', `/api/v2/messages/${enc(unknown)}/reaction`, { emoji: '👍' });
    assert.equal(r.status, 404);
    assert.equal(r.body.code, 'MESSAGE_NOT_FOUND');
    r = await request(srv.url, 'GET', `/api/v2/groups/${enc('120363999999999999@g.us')}/invite`);
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'NOT_A_GROUP');
    const asked = port.asks.slice(first);
    assert.deepEqual(asked, [
      {
        type: 'network',
        op: 'react',
        args: [unknown, '👍'],
        label: 'message.react',
        notFound: { code: 'MESSAGE_NOT_FOUND', message: 'no such message', data: { msgId: unknown } },
      },
      {
        type: 'network',
        op: 'getGroup',
        args: ['120363999999999999@g.us'],
        label: 'group.invite',
        notFound: { code: 'NOT_A_GROUP', message: 'the target is not a group', data: { groupId: '120363999999999999@g.us' } },
      },
    ]);
    for (const ask of asked) isPlainData(ask);
  });

  test('message media reads the instance’s settings from the record the guard loaded', async () => {
    // storage on: the first request stores the attachment (message, then attachment), the second finds it stored
    const storing: Instance = { ...instance, settings: { ...instance.settings, storeIncomingMedia: true } };
    const s = await serve([messageMediaRouter({ portOf: () => port, store })], { instance: storing });
    try {
      const first = port.asks.length;
      let r = await request(s.url, 'GET', `/api/v2/messages/${enc(ids.withMedia)}/media`);
      assert.equal(r.status, 200);
      assert.equal(r.body.data?.stored, true);
      assert.deepEqual(port.ops.slice(-2), ['getMessageById', 'downloadMedia']);
      r = await request(s.url, 'GET', `/api/v2/messages/${enc(ids.withMedia)}/media`);
      assert.equal(r.status, 200);
      assert.equal(r.body.data?.stored, true);
      assert.deepEqual(port.asks.slice(first).map((a) => (a.type === 'network' ? a.op : a.type)), ['getMessageById', 'downloadMedia', 'getMessageById']);
    } finally {
      await s.close();
    }
  });

  test('offline: every route is refused by the port with 503 INSTANCE_OFFLINE, data.instance', async () => {
    port.connected = false;
    try {
      const cases = requests();
      for (const [key, c] of Object.entries(cases)) {
        const method = key.split(' ')[0] ?? 'GET';
        const first = port.asks.length;
        const r = await request(srv.url, method, c.path, c.body);
        assert.equal(r.status, 503, key);
        assert.ok(port.asks.length > first, `${key} asked the port`);
        if (key.startsWith('GET /api/check-number')) continue; // v1: frozen body without code or data
        assert.equal(r.body.code, 'INSTANCE_OFFLINE', key);
        assert.deepEqual(r.body.data, { instance: { status: 'disconnected', detail: 'disconnected', lastError: null } }, key);
      }
    } finally {
      port.connected = true;
    }
  });
});

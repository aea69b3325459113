/**
 * The network routes end to end over the sandbox network (in-process) and its real driver: two linked
 * accounts on one simulated network, one of them the gateway's instance, the other a person who writes to it.
 * The instance port is the harness's (the contract of src/actors/port.ts), the app the real Koa app.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as settle } from 'node:timers/promises';
import { simulatedClock } from '../../src/clock.js';
import { SandboxNetwork } from '../../src/sandbox/network.js';
import { inProcessSandboxApi } from '../../src/drivers/sandbox/in-process.js';
import { SandboxDriver } from '../../src/drivers/sandbox/driver.js';
import { InteractionLimiter } from '../../src/http/rate-limit.js';
import { PresenceManager } from '../../src/actors/presence.js';
import { interactionsRouter } from '../../src/http/routes/interactions.js';
import { readsRouter } from '../../src/http/routes/reads.js';
import { legacyReadsRouter } from '../../src/http/routes/legacy-reads.js';
import { groupsRouter } from '../../src/http/routes/groups.js';
import { TestPort, serve, request, keys, CHAT_FIELDS, MESSAGE_FIELDS, CONTACT_FIELDS, type Served } from './routes-harness.js';

const ME = '4915199999999';
const ALICE = '4915111111111';
const BOB = '4915122222222';
const CAROL = '4915133333333';
const NOBODY = '4915144440000'; // the sandbox's rule: numbers ending in 0000 have no account
const c = (p: string) => `${p}@c.us`;
const enc = encodeURIComponent;

describe('network routes over the sandbox network', () => {
  const clock = simulatedClock();
  const net = new SandboxNetwork({ clock });
  const api = inProcessSandboxApi(net);
  const me = new SandboxDriver({ instanceId: 'inst-me', api, clock, autoLink: { phoneNumber: ME, pushname: 'Me' } });
  const alice = new SandboxDriver({ instanceId: 'inst-alice', api, clock, autoLink: { phoneNumber: ALICE, pushname: 'Alice' } });
  const port = new TestPort('inst-me', me, clock);
  const limiter = new InteractionLimiter(clock, { points: 10_000 });
  const presence = new PresenceManager(clock);
  const typingCalls: number[] = [];
  let srv: Served;
  let fromAlice: string;
  let fromMe: string;

  const advance = async (ms: number) => {
    for (let t = 0; t < ms; t += 1000) {
      clock.increment(1000);
      await settle();
      await settle();
    }
  };

  before(async () => {
    const ready = (d: SandboxDriver) => new Promise<void>((resolve) => d.on('ready', () => resolve()));
    const linked = Promise.all([ready(me), ready(alice)]);
    await me.initialize();
    await alice.initialize();
    await advance(10_000);
    await linked;
    // count the typing calls that reach the network, on the simulated clock
    const typing = me.sendStateTyping.bind(me);
    me.sendStateTyping = (chatId: string) => {
      typingCalls.push(clock.now());
      return typing(chatId);
    };
    for (let i = 0; i < 5; i++) {
      await alice.sendMessage(c(ME), { kind: 'text', body: `hello ${i}` }, { waitUntilMsgSent: true });
      await advance(1000);
    }
    const mine = await me.sendMessage(c(ALICE), { kind: 'text', body: 'hi Alice' }, { waitUntilMsgSent: true });
    fromMe = mine.id ?? '';
    const msgs = await me.fetchMessages(c(ALICE), { limit: 10, fromMe: false });
    fromAlice = msgs[0]?.id._serialized ?? '';
    const deps = { portOf: () => port, clock, limiter, presence, fetchMessagesMax: 200 };
    srv = await serve([interactionsRouter(deps), readsRouter(deps), legacyReadsRouter({ ...deps, waitMs: 20_000 }), groupsRouter(deps)]);
  });

  after(async () => {
    presence.stopAll();
    await srv.close();
    await alice.destroy();
    await me.destroy();
    net.close();
  });

  test('reads: chats, chat, messages (ms timestamps), message, contact, picture, exists, check-number', async () => {
    let r = await request(srv.url, 'GET', '/api/v2/chats');
    assert.equal(r.status, 200);
    const chat = (r.body.data?.items as Record<string, unknown>[]).find((x) => x.id === c(ALICE));
    assert.ok(chat);
    assert.deepEqual(keys(chat), CHAT_FIELDS);
    assert.equal(chat.unreadCount, 5);
    assert.equal(r.body.data?.nextCursor, null);

    r = await request(srv.url, 'GET', `/api/v2/chats/${enc(c(ALICE))}`);
    assert.deepEqual(keys(r.body.data), CHAT_FIELDS);
    assert.equal(r.body.data?.name, 'Alice');

    r = await request(srv.url, 'GET', `/api/v2/chats/${enc(c(ALICE))}/messages?limit=500&fromMe=false`);
    assert.equal(r.body.data?.limit, 200);
    assert.equal(r.body.data?.capped, true);
    const items = r.body.data?.items as Record<string, unknown>[];
    assert.deepEqual(items.map((m) => m.body), ['hello 0', 'hello 1', 'hello 2', 'hello 3', 'hello 4']);
    for (const m of items) assert.deepEqual(keys(m), MESSAGE_FIELDS);
    const wire = await me.getMessageById(fromAlice);
    assert.equal(items[0]?.timestamp, (wire?.timestamp ?? 0) * 1000, 'seconds on the driver, milliseconds on the API');

    r = await request(srv.url, 'GET', `/api/v2/messages/${enc(fromAlice)}`);
    assert.equal(r.body.data?.id, fromAlice);
    assert.equal(r.body.data?.chatId, c(ALICE));
    r = await request(srv.url, 'GET', `/api/v2/messages/${enc(`false_${c(ALICE)}_00000000`)}`);
    assert.equal(r.body.code, 'MESSAGE_NOT_FOUND');
    r = await request(srv.url, 'GET', `/api/v2/chats/${enc(c(CAROL))}`);
    assert.equal(r.body.code, 'CHAT_NOT_FOUND');

    r = await request(srv.url, 'GET', `/api/v2/contacts/${enc(c(ALICE))}`);
    assert.deepEqual(keys(r.body.data), CONTACT_FIELDS);
    assert.equal(r.body.data?.pushname, 'Alice');
    r = await request(srv.url, 'GET', `/api/v2/contacts/${enc(c(ALICE))}/picture`);
    assert.equal(r.body.data?.contactId, c(ALICE));
    assert.equal(typeof r.body.data?.pictureUrl, 'string');
    r = await request(srv.url, 'GET', `/api/v2/contacts/${enc(c(NOBODY))}/picture`);
    assert.deepEqual(r.body.data, { contactId: c(NOBODY), pictureUrl: null });

    r = await request(srv.url, 'GET', `/api/v2/contacts/0${ALICE.slice(2)}/exists`);
    assert.deepEqual(r.body.data, { phone: ALICE, registered: true, whatsappId: c(ALICE) });
    r = await request(srv.url, 'GET', `/api/check-number/+${NOBODY}`);
    assert.deepEqual(r.body, { success: true, data: { phone: NOBODY, registered: false, whatsappId: null } });
  });

  test('interactions: reaction, seen, edit, delete for everyone reach the other side', async () => {
    let r = await request(srv.url, 'POST', `/api/v2/messages/${enc(fromAlice)}/reaction`, { emoji: '❤️' });
    assert.deepEqual(r.body.data, { msgId: fromAlice, emoji: '❤️' });
    assert.ok(net.ledger('inst-me').some((e) => e.action === 'react' && e.targetMessageId === fromAlice && e.body === '❤️'));

    r = await request(srv.url, 'POST', `/api/v2/chats/${enc(c(ALICE))}/seen`);
    assert.deepEqual(r.body.data, { chatId: c(ALICE), seen: true });
    assert.equal((await me.getChatById(c(ALICE)))?.unreadCount, 0);

    r = await request(srv.url, 'PATCH', `/api/v2/messages/${enc(fromMe)}`, { message: 'hi Alice (edited)' });
    assert.deepEqual(r.body.data, { messageId: fromMe });
    const seenByAlice = (await alice.fetchMessages(c(ME), { limit: 50 })).find((m) => m.body.startsWith('hi Alice'));
    assert.equal(seenByAlice?.body, 'hi Alice (edited)');

    r = await request(srv.url, 'PATCH', `/api/v2/messages/${enc(fromAlice)}`, { message: 'not mine' });
    assert.equal(r.status, 409);
    assert.equal(r.body.data?.reason, 'not_editable');

    r = await request(srv.url, 'DELETE', `/api/v2/messages/${enc(fromMe)}`, { everyone: true });
    assert.deepEqual(r.body.data, { msgId: fromMe, everyone: true });
    assert.ok(net.ledger('inst-me').some((e) => e.action === 'delete' && e.targetMessageId === fromMe && e.everyone === true));
  });

  test('typing for 100 s is re-fired on the clock and cancelled by DELETE state', async () => {
    typingCalls.length = 0;
    const session = net.session('inst-me');
    const t0 = clock.now();
    let r = await request(srv.url, 'POST', `/api/v2/chats/${enc(c(ALICE))}/typing`, { durationMs: 100_000 });
    assert.equal(r.body.data?.expiresAt, new Date(t0 + 100_000).toISOString());
    assert.equal(session.presence.get(c(ALICE)), 'typing');
    await advance(45_000);
    assert.deepEqual(typingCalls, [t0, t0 + 20_000, t0 + 40_000]);
    r = await request(srv.url, 'DELETE', `/api/v2/chats/${enc(c(ALICE))}/state`);
    assert.deepEqual(r.body.data, { chatId: c(ALICE), cancelled: true });
    assert.equal(session.presence.has(c(ALICE)), false);
    await advance(80_000);
    assert.equal(typingCalls.length, 3);
  });

  test('groups: every route on a real group, and NOT_A_GROUP for a person, an unknown group and a malformed id', async () => {
    const { gid } = await me.createGroup('Team', [c(ALICE), c(BOB)], {});
    let r = await request(srv.url, 'POST', `/api/v2/groups/${enc(gid)}/participants`, { participants: [c(CAROL), c(ALICE), c(NOBODY)] });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.data?.added, [c(CAROL)]);
    assert.deepEqual(Object.keys(r.body.data?.failed as object).sort(), [c(ALICE), c(NOBODY)].sort());
    assert.equal((r.body.data?.failed as Record<string, { code: number }>)[c(ALICE)]?.code, 409);

    r = await request(srv.url, 'POST', `/api/v2/groups/${enc(gid)}/admins`, { participants: [c(ALICE)] });
    assert.deepEqual(r.body.data, { groupId: gid, promoted: [c(ALICE)] });
    assert.equal((await me.getGroup(gid))?.participants.find((p) => p.id === c(ALICE))?.isAdmin, true);
    r = await request(srv.url, 'DELETE', `/api/v2/groups/${enc(gid)}/admins`, { participants: [c(ALICE)] });
    assert.deepEqual(r.body.data, { groupId: gid, demoted: [c(ALICE)] });
    r = await request(srv.url, 'DELETE', `/api/v2/groups/${enc(gid)}/participants`, { participants: [c(BOB)] });
    assert.deepEqual(r.body.data, { groupId: gid, removed: [c(BOB)] });
    assert.ok(!(await me.getGroup(gid))?.participants.some((p) => p.id === c(BOB)));

    r = await request(srv.url, 'GET', `/api/v2/groups/${enc(gid)}/invite`);
    const code = r.body.data?.code as string;
    assert.equal(r.body.data?.url, `https://chat.whatsapp.com/${code}`);
    r = await request(srv.url, 'POST', `/api/v2/groups/${enc(gid)}/invite/revoke`);
    assert.notEqual(r.body.data?.code, code);
    r = await request(srv.url, 'PATCH', `/api/v2/groups/${enc(gid)}`, { subject: 'Team 2', description: 'ours' });
    assert.deepEqual(r.body.data, { groupId: gid, subject: 'Team 2', description: 'ours' });
    assert.equal((await me.getGroup(gid))?.name, 'Team 2');

    for (const target of [c(ALICE), '120363999999999999@g.us', 'nonsense']) {
      for (const [method, path, body] of [
        ['POST', 'participants', { participants: [c(CAROL)] }],
        ['DELETE', 'participants', { participants: [c(CAROL)] }],
        ['POST', 'admins', { participants: [c(CAROL)] }],
        ['DELETE', 'admins', { participants: [c(CAROL)] }],
        ['GET', 'invite', undefined],
        ['POST', 'invite/revoke', undefined],
        ['POST', 'leave', undefined],
        ['PATCH', '', { subject: 'x' }],
      ] as const) {
        const path2 = `/api/v2/groups/${enc(target)}${path ? `/${path}` : ''}`;
        const res = await request(srv.url, method, path2, body);
        assert.equal(res.status, 400, `${method} ${path2}`);
        assert.equal(res.body.code, 'NOT_A_GROUP', `${method} ${path2}`);
      }
    }

    r = await request(srv.url, 'POST', `/api/v2/groups/${enc(gid)}/leave`);
    assert.deepEqual(r.body.data, { groupId: gid, left: true });
    const after = await alice.getGroup(gid);
    assert.ok(!after?.participants.some((p) => p.id === c(ME)));
  });

  test('a session that goes away ends the keep-alive; routes answer 503 while offline', async () => {
    typingCalls.length = 0;
    await request(srv.url, 'POST', `/api/v2/chats/${enc(c(ALICE))}/recording`, { durationMs: 300_000 });
    await advance(20_000);
    assert.ok(presence.active('inst-me', c(ALICE)));
    await me.destroy(); // the driver's calls now fail (not connected): the next re-fire ends the keep-alive
    await advance(20_000);
    assert.equal(presence.active('inst-me', c(ALICE)), null);
    port.connected = false;
    const r = await request(srv.url, 'POST', `/api/v2/chats/${enc(c(ALICE))}/seen`);
    assert.equal(r.status, 503);
    assert.equal(r.body.code, 'INSTANCE_OFFLINE');
  });
});

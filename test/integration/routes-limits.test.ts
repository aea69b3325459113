import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as settle } from 'node:timers/promises';
import type { Context } from 'koa';
import { simulatedClock } from '../../src/clock.js';
import { InteractionLimiter } from '../../src/http/rate-limit.js';
import { PresenceManager } from '../../src/actors/presence.js';
import { interactionsRouter } from '../../src/http/routes/interactions.js';
import { readsRouter } from '../../src/http/routes/reads.js';
import { groupsRouter } from '../../src/http/routes/groups.js';
import { MiniNetwork, TestPort, serve, type Served, type Reply } from './routes-harness.js';

const ALICE = '4915111111111@c.us';
const GROUP = '120363000000000001@g.us';
const enc = encodeURIComponent;

describe('the interaction limiter over HTTP (60 calls per 60 s per instance)', () => {
  const clock = simulatedClock();
  const netA = new MiniNetwork(clock);
  const netB = new MiniNetwork(clock);
  const ports = new Map([
    ['a', new TestPort('inst-a', netA, clock)],
    ['b', new TestPort('inst-b', netB, clock)],
  ]);
  // the default INTERACTION_RATE_POINTS, shared by the interaction and group routers as in the gateway
  const limiter = new InteractionLimiter(clock, { points: 60 });
  const presence = new PresenceManager(clock);
  let srv: Served;
  let msgId: string;

  // which instance a request is for; in the gateway the API key decides
  const portOf = (ctx: Context) => ports.get(ctx.get('x-instance')) ?? (ports.get('a') as TestPort);

  before(async () => {
    for (const net of [netA, netB]) {
      net.addChat({ id: ALICE });
      net.addContact(ALICE, 'Alice');
      net.addGroup(GROUP, [ALICE]);
      msgId = net.addMessage(ALICE, { fromMe: true, body: 'hi' }).id._serialized;
    }
    const deps = { portOf, clock, limiter, presence, fetchMessagesMax: 200 };
    srv = await serve([interactionsRouter(deps), readsRouter(deps), groupsRouter(deps)]);
  });
  after(async () => {
    presence.stopAll();
    await srv.close();
  });

  const call = async (instance: string, method: string, path: string, body?: unknown): Promise<Reply> => {
    const headers: Record<string, string> = { 'x-instance': instance };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(srv.url + path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Reply['body'] };
  };

  const LIMITED: [string, string, unknown?][] = [
    ['POST', `/api/v2/messages/${enc('x')}/reaction`, { emoji: '👍' }],
    ['DELETE', `/api/v2/messages/${enc('x')}/reaction`],
    ['POST', `/api/v2/chats/${enc(ALICE)}/seen`],
    ['POST', `/api/v2/chats/${enc(ALICE)}/typing`, {}],
    ['POST', `/api/v2/chats/${enc(ALICE)}/recording`, {}],
    ['DELETE', `/api/v2/chats/${enc(ALICE)}/state`],
    ['PATCH', `/api/v2/messages/${enc('x')}`, { message: 'edit' }],
    ['DELETE', `/api/v2/messages/${enc('x')}`, { everyone: true }],
    ['POST', `/api/v2/groups/${enc(GROUP)}/participants`, { participants: [ALICE] }],
    ['DELETE', `/api/v2/groups/${enc(GROUP)}/participants`, { participants: [ALICE] }],
    ['POST', `/api/v2/groups/${enc(GROUP)}/admins`, { participants: [ALICE] }],
    ['DELETE', `/api/v2/groups/${enc(GROUP)}/admins`, { participants: [ALICE] }],
    ['GET', `/api/v2/groups/${enc(GROUP)}/invite`],
    ['POST', `/api/v2/groups/${enc(GROUP)}/invite/revoke`],
    ['POST', `/api/v2/groups/${enc(GROUP)}/leave`],
    ['PATCH', `/api/v2/groups/${enc(GROUP)}`, { subject: 'x' }],
  ];
  const READS: [string, string][] = [
    ['GET', '/api/v2/chats'],
    ['GET', `/api/v2/chats/${enc(ALICE)}`],
    ['GET', `/api/v2/chats/${enc(ALICE)}/messages`],
    ['GET', `/api/v2/messages/${enc('MSG')}`],
    ['GET', `/api/v2/contacts/${enc(ALICE)}`],
    ['GET', `/api/v2/contacts/${enc(ALICE)}/picture`],
    ['GET', '/api/v2/contacts/4915111111111/exists'],
    ['GET', '/api/check-number/4915111111111'],
  ];

  test('interaction and group calls share one window; the 61st is 429 RATE_LIMITED with retryAfterMs', async () => {
    const t0 = clock.now();
    for (let i = 0; i < 60; i++) {
      // alternate an interaction and a group call, half a second apart
      const r = i % 2 === 0
        ? await call('a', 'POST', `/api/v2/chats/${enc(ALICE)}/seen`)
        : await call('a', 'GET', `/api/v2/groups/${enc(GROUP)}/invite`);
      assert.equal(r.status, 200, `call ${i + 1}`);
      clock.increment(500);
    }
    const r = await call('a', 'POST', `/api/v2/chats/${enc(ALICE)}/seen`);
    assert.equal(r.status, 429);
    assert.equal(r.body.success, false);
    assert.equal(r.body.code, 'RATE_LIMITED');
    assert.equal(r.body.data?.retryAfterMs, t0 + 60_000 - clock.now());
    assert.equal(r.headers.get('retry-after'), '30');
    assert.equal(netA.count('sendSeen'), 30, 'the refused call never reached the network');
  });

  test('while full, every interaction and group route answers 429; reads and other instances do not', async () => {
    for (const [method, path, body] of LIMITED) {
      const r = await call('a', method, path, body);
      assert.equal(r.status, 429, `${method} ${path}`);
      assert.equal(r.body.code, 'RATE_LIMITED', `${method} ${path}`);
    }
    for (const [method, path] of READS) {
      const r = await call('a', method, path);
      assert.notEqual(r.status, 429, `${method} ${path}`);
    }
    const reads = await call('a', 'GET', `/api/v2/messages/${enc(msgId)}`);
    assert.equal(reads.status, 200);
    const other = await call('b', 'POST', `/api/v2/chats/${enc(ALICE)}/seen`);
    assert.equal(other.status, 200, 'instance b has its own window');
  });

  test('the window slides: calls are let in again as the earliest ones age out', async () => {
    // the first call was at t0, now is t0+30 s: 30 s later the first two calls (t0, t0+0.5 s) have left
    clock.increment(30_000);
    assert.equal((await call('a', 'POST', `/api/v2/chats/${enc(ALICE)}/seen`)).status, 200);
    assert.equal((await call('a', 'POST', `/api/v2/chats/${enc(ALICE)}/seen`)).status, 429);
    clock.increment(500);
    assert.equal((await call('a', 'POST', `/api/v2/chats/${enc(ALICE)}/seen`)).status, 200);
  });

  test('typing re-fires are one call, not one per re-fire', async () => {
    limiter.reset();
    const before = netB.count('sendStateTyping');
    const r = await call('b', 'POST', `/api/v2/chats/${enc(ALICE)}/typing`, { durationMs: 300_000 });
    assert.equal(r.status, 200);
    const step = async (ms: number) => {
      for (let t = 0; t < ms; t += 1000) {
        clock.increment(1000);
        await settle();
      }
    };
    await step(50_000);
    assert.equal(netB.count('sendStateTyping') - before, 3, 'fired at 0, 20 and 40 s');
    assert.equal(limiter.used('inst-b'), 1, 'the request counted once; its re-fires did not');
    await step(250_000);
    assert.equal(netB.count('sendStateTyping') - before, 15);
    assert.equal(limiter.used('inst-b'), 0);
  });
});

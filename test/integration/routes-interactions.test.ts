import { test, describe, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as settle } from 'node:timers/promises';
import { simulatedClock } from '../../src/clock.js';
import { InteractionLimiter } from '../../src/http/rate-limit.js';
import { PresenceManager } from '../../src/actors/presence.js';
import { interactionsRouter } from '../../src/http/routes/interactions.js';
import { MiniNetwork, TestPort, serve, request, queueStub, keys, type Served } from './routes-harness.js';

const ALICE = '4915111111111@c.us';

describe('interaction routes over HTTP', () => {
  const clock = simulatedClock();
  const net = new MiniNetwork(clock);
  const port = new TestPort('inst-1', net, clock);
  // generous here: the 60-per-60-s limit has its own test file (routes-limits)
  const limiter = new InteractionLimiter(clock, { points: 10_000 });
  const presence = new PresenceManager(clock);
  let srv: Served;
  let incoming: string;
  let mine: string;

  /** advance simulated time in 1 s steps and let the fired calls run */
  const advance = async (ms: number) => {
    for (let t = 0; t < ms; t += 1000) {
      clock.increment(1000);
      await settle();
      await settle();
    }
  };

  before(async () => {
    net.addChat({ id: ALICE, unreadCount: 3 });
    incoming = net.addMessage(ALICE, { fromMe: false, body: 'hi' }).id._serialized;
    mine = net.addMessage(ALICE, { fromMe: true, body: 'hello' }).id._serialized;
    // mounted after ours, like any router behind it: wq_ ids must fall through to it
    srv = await serve([interactionsRouter({ portOf: () => port, limiter, presence }), queueStub()]);
  });
  after(async () => {
    presence.stopAll();
    await srv.close();
  });
  beforeEach(() => {
    port.connected = true;
    net.failing.clear();
  });

  const enc = encodeURIComponent;

  test('POST/DELETE reaction → {msgId, emoji} / {msgId, emoji:null}', async () => {
    let r = await request(srv.url, 'POST', `/api/v2/messages/${enc(incoming)}/reaction`, { emoji: '👍' });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { success: true, data: { msgId: incoming, emoji: '👍' } });
    assert.equal(net.reactions.get(incoming), '👍');

    r = await request(srv.url, 'DELETE', `/api/v2/messages/${enc(incoming)}/reaction`);
    assert.deepEqual(r.body, { success: true, data: { msgId: incoming, emoji: null } });
    assert.equal(net.reactions.has(incoming), false);
  });

  test('reaction: up to 32 characters, counted in code points (an emoji is two UTF-16 code units)', async () => {
    for (const emoji of ['😀'.repeat(32), '👨‍👩‍👧‍👦', '👍🏽']) {
      const r = await request(srv.url, 'POST', `/api/v2/messages/${enc(incoming)}/reaction`, { emoji });
      assert.equal(r.status, 200, `${emoji}: ${JSON.stringify(r.body)}`);
    }
    const r = await request(srv.url, 'POST', `/api/v2/messages/${enc(incoming)}/reaction`, { emoji: '😀'.repeat(33) });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.data, { field: 'emoji' });
  });

  test('reaction errors: missing emoji 400 field emoji, unknown message 404, a wq_ id 400 field msgId', async () => {
    let r = await request(srv.url, 'POST', `/api/v2/messages/${enc(incoming)}/reaction`, {});
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'VALIDATION_FAILED');
    assert.deepEqual(r.body.data, { field: 'emoji' });

    r = await request(srv.url, 'POST', `/api/v2/messages/${enc('false_' + ALICE + '_NOPE')}/reaction`, { emoji: '👍' });
    assert.equal(r.status, 404);
    assert.equal(r.body.code, 'MESSAGE_NOT_FOUND');

    r = await request(srv.url, 'POST', '/api/v2/messages/wq_abc123/reaction', { emoji: '👍' });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.data, { field: 'msgId' });
  });

  test('POST seen → {chatId, seen}; unknown chat 404 CHAT_NOT_FOUND; malformed id 400 field chatId', async () => {
    let r = await request(srv.url, 'POST', `/api/v2/chats/${enc(ALICE)}/seen`);
    assert.deepEqual(r.body, { success: true, data: { chatId: ALICE, seen: true } });
    assert.equal(net.chats.get(ALICE)?.unreadCount, 0);

    r = await request(srv.url, 'POST', `/api/v2/chats/${enc('4915122222222@c.us')}/seen`);
    assert.equal(r.status, 404);
    assert.equal(r.body.code, 'CHAT_NOT_FOUND');

    r = await request(srv.url, 'POST', '/api/v2/chats/not-an-id/seen');
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.data, { field: 'chatId' });
  });

  test('a phone number in place of the chat id is the @c.us chat', async () => {
    const r = await request(srv.url, 'POST', '/api/v2/chats/+4915111111111/seen');
    assert.deepEqual(r.body.data, { chatId: ALICE, seen: true });
  });

  test('typing without durationMs: 25 s, shown once, cleared at expiresAt', async () => {
    const before = net.count('sendStateTyping');
    const clears = net.count('clearState');
    const t0 = clock.now();
    const r = await request(srv.url, 'POST', `/api/v2/chats/${enc(ALICE)}/typing`);
    assert.equal(r.status, 200);
    assert.deepEqual(keys(r.body.data), ['chatId', 'durationMs', 'expiresAt']);
    assert.equal(r.body.data?.chatId, ALICE);
    assert.equal(r.body.data?.expiresAt, new Date(t0 + 25_000).toISOString());
    assert.equal(net.chatState.get(ALICE), 'typing');
    await advance(60_000);
    assert.equal(net.count('sendStateTyping') - before, 1);
    assert.equal(net.count('clearState') - clears, 1);
    assert.equal(net.chatState.has(ALICE), false);
  });

  test('typing for 70 s is re-fired every 20 s on the clock, then cleared', async () => {
    const base = net.count('sendStateTyping');
    const clears = net.count('clearState');
    const t0 = clock.now();
    const r = await request(srv.url, 'POST', `/api/v2/chats/${enc(ALICE)}/typing`, { durationMs: 70_000 });
    assert.equal(r.body.data?.expiresAt, new Date(t0 + 70_000).toISOString());
    const seen: number[] = [];
    for (let s = 0; s <= 90; s += 10) {
      seen.push(net.count('sendStateTyping') - base);
      await advance(10_000);
    }
    // t = 0,10 → 1; 20,30 → 2; 40,50 → 3; 60..90 → 4 (fired at 0, 20, 40, 60 s)
    assert.deepEqual(seen, [1, 1, 2, 2, 3, 3, 4, 4, 4, 4]);
    assert.equal(net.count('clearState') - clears, 1, 'cleared once, at 70 s');
  });

  test('recording: durationMs above 300000 is capped, and re-fired with sendStateRecording', async () => {
    const base = net.count('sendStateRecording');
    const t0 = clock.now();
    const r = await request(srv.url, 'POST', `/api/v2/chats/${enc(ALICE)}/recording`, { durationMs: 3_600_000 });
    assert.equal(r.status, 200);
    assert.equal(r.body.data?.expiresAt, new Date(t0 + 300_000).toISOString());
    assert.equal(r.body.data?.durationMs, 300_000);
    assert.equal(net.chatState.get(ALICE), 'recording');
    await advance(400_000);
    assert.equal(net.count('sendStateRecording') - base, 15);
    assert.equal(presence.active(port.instanceId, ALICE), null);
  });

  test('DELETE state cancels the keep-alive and clears the state', async () => {
    const base = net.count('sendStateTyping');
    const clears = net.count('clearState');
    await request(srv.url, 'POST', `/api/v2/chats/${enc(ALICE)}/typing`, { durationMs: 120_000 });
    await advance(30_000);
    assert.equal(net.count('sendStateTyping') - base, 2);
    const r = await request(srv.url, 'DELETE', `/api/v2/chats/${enc(ALICE)}/state`);
    assert.deepEqual(r.body, { success: true, data: { chatId: ALICE, cancelled: true } });
    assert.equal(net.count('clearState') - clears, 1);
    assert.equal(net.chatState.has(ALICE), false);
    await advance(120_000);
    assert.equal(net.count('sendStateTyping') - base, 2, 'no re-fire after the cancellation');
    assert.equal(net.count('clearState') - clears, 1, 'no second clear at the old expiry');

    const again = await request(srv.url, 'DELETE', `/api/v2/chats/${enc(ALICE)}/state`);
    assert.deepEqual(again.body.data, { chatId: ALICE, cancelled: false });
  });

  test('the keep-alive stops when the session disconnects', async () => {
    const base = net.count('sendStateTyping');
    await request(srv.url, 'POST', `/api/v2/chats/${enc(ALICE)}/typing`, { durationMs: 200_000 });
    await advance(20_000);
    assert.equal(net.count('sendStateTyping') - base, 2);
    port.connected = false;
    await advance(20_000); // this re-fire is refused with 503: the keep-alive ends
    assert.equal(presence.active(port.instanceId, ALICE), null);
    port.connected = true;
    await advance(200_000);
    assert.equal(net.count('sendStateTyping') - base, 2);
  });

  test('durationMs must be an integer ≥ 1', async () => {
    for (const durationMs of [0, -5, 1.5, '30000', null]) {
      const r = await request(srv.url, 'POST', `/api/v2/chats/${enc(ALICE)}/typing`, { durationMs });
      assert.equal(r.status, 400, JSON.stringify(durationMs));
      assert.deepEqual(r.body.data, { field: 'durationMs' });
    }
  });

  test('PATCH message edits our own message → {messageId}; others’ messages are refused', async () => {
    let r = await request(srv.url, 'PATCH', `/api/v2/messages/${enc(mine)}`, { message: 'hello, edited', options: { linkPreview: false, unknownKey: 1 } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { success: true, data: { messageId: mine } });
    assert.equal(net.messages.get(mine)?.body, 'hello, edited');

    r = await request(srv.url, 'PATCH', `/api/v2/messages/${enc(incoming)}`, { message: 'not mine' });
    assert.equal(r.status, 409);
    assert.equal(r.body.code, 'CONFLICT');
    assert.equal(r.body.data?.reason, 'not_editable');

    r = await request(srv.url, 'PATCH', `/api/v2/messages/${enc(mine)}`, { message: '' });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.data, { field: 'message' });

    // mentions are person ids as a send's are: blanks around dropped, a @lid taken, anything else ending in @c.us
    // refused naming its place, never quoting a pattern (found from the outside: "garbage@c.us" was taken)
    const edits = net.count('editMessage');
    for (const bad of ['garbage@c.us', '@c.us', '04915112345678@c.us']) {
      r = await request(srv.url, 'PATCH', `/api/v2/messages/${enc(mine)}`, { message: 'x', options: { mentions: [bad] } });
      assert.equal(r.status, 400, bad);
      assert.deepEqual(r.body.data, { field: 'options.mentions.0' }, bad);
      assert.doesNotMatch(String(r.body.error), /pattern|\\/, bad);
    }
    assert.equal(net.count('editMessage'), edits, 'nothing edited by a refusal');
    r = await request(srv.url, 'PATCH', `/api/v2/messages/${enc(mine)}`, { message: 'hello again', options: { mentions: [' 4915112345678@c.us ', '123456789012345@lid'] } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  });

  test('DELETE message → {msgId, everyone}; everyone defaults to false', async () => {
    const a = net.addMessage(ALICE, { fromMe: true, body: 'oops' }).id._serialized;
    const b = net.addMessage(ALICE, { fromMe: true, body: 'oops 2' }).id._serialized;
    let r = await request(srv.url, 'DELETE', `/api/v2/messages/${enc(a)}`, { everyone: true });
    assert.deepEqual(r.body, { success: true, data: { msgId: a, everyone: true } });
    assert.equal(net.messages.get(a)?.type, 'revoked');
    r = await request(srv.url, 'DELETE', `/api/v2/messages/${enc(b)}`);
    assert.deepEqual(r.body, { success: true, data: { msgId: b, everyone: false } });
    assert.equal(net.messages.has(b), false);
    r = await request(srv.url, 'DELETE', `/api/v2/messages/${enc(b)}`);
    assert.equal(r.status, 404);
    assert.equal(r.body.code, 'MESSAGE_NOT_FOUND');
  });

  test('wq_ ids on /api/v2/messages/:id are jobs: passed on to the queue router, or refused before the limiter, never counted', async () => {
    const used = limiter.used(port.instanceId);
    const edits = net.count('editMessage');
    let r = await request(srv.url, 'DELETE', '/api/v2/messages/wq_0123abcd');
    assert.deepEqual(r.body, { success: true, data: { jobId: 'wq_0123abcd', handledBy: 'queue' } });
    // no router edits a job: 400 naming the id to use (not a "no route" 404 for a method the path has)
    r = await request(srv.url, 'PATCH', '/api/v2/messages/wq_0123abcd', { message: 'x' });
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'VALIDATION_FAILED');
    assert.deepEqual(r.body.data, { field: 'msgId' });
    assert.equal(limiter.used(port.instanceId), used);
    assert.equal(net.count('editMessage'), edits);
  });

  test('offline → 503 INSTANCE_OFFLINE; a failing network call → 500 WA_CALL_FAILED', async () => {
    port.connected = false;
    let r = await request(srv.url, 'POST', `/api/v2/chats/${enc(ALICE)}/typing`, {});
    assert.equal(r.status, 503);
    assert.equal(r.body.code, 'INSTANCE_OFFLINE');
    assert.equal(presence.active(port.instanceId, ALICE), null, 'nothing kept alive for a call that failed');
    port.connected = true;
    net.failing.add('react');
    r = await request(srv.url, 'POST', `/api/v2/messages/${enc(incoming)}/reaction`, { emoji: '🔥' });
    assert.equal(r.status, 500);
    assert.equal(r.body.code, 'WA_CALL_FAILED');
  });
});

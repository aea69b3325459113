/**
 * Every event an instance reports reaches the webhook outbox through the one path (session or instance
 * machine → events actor → the table of src/webhooks/driver-events.ts → EventBus.publish), and no mapper of
 * that table is unreachable:
 *
 * - the sandbox driver inside a whole gateway: lifecycle events as the sandbox produces them (QR, pairing
 *   code, linking, an ordered restart, a logout from the phone, a failed restore), and every network event the contract
 *   lists as the sandbox network delivers it to the linked session;
 * - the whatsapp-web.js driver over its library stand-in (test/unit/webjs-standin.ts): every library event,
 *   through a real session and instance machine wired like the runtime, into the same outbox.
 *
 * Secrets: the QR and the pairing code are in the outbox, and in no log line.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createActor } from 'xstate';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import type { SandboxEvent } from '../../src/drivers/sandbox/api.js';
import type { DriverEventName, WireMessage } from '../../src/drivers/contract.js';
import { LIFECYCLE_EVENT_NAMES, NETWORK_EVENT_NAMES } from '../../src/webhooks/driver-events.js';
import { EVENT_NAMES, QUEUE_EVENTS } from '../../src/webhooks/events.js';
import { createIncomingEvents, lifecycleCommand, networkCommand } from '../../src/actors/network-events.js';
import { createEventBus } from '../../src/actors/events.js';
import { createSessionLogic } from '../../src/actors/session.js';
import { instanceMachine } from '../../machines/instance.machine.js';
import { createInstance } from '../../src/store/instances.js';
import { putWebhook } from '../../src/webhooks/config.js';
import { withTransaction } from '../../src/store/pool.js';
import { simulatedClock } from '../../src/clock.js';
import { createLogger } from '../../src/log.js';
import { WebjsDriver } from '../../src/drivers/webjs/driver.js';
import { LIB_EVENT_NAMES } from '../../src/drivers/webjs/events.js';
import { Call, GroupNotification, Message, PollVote, Reaction, StandInClient, msgKey, rawChat, rawMessage, wid } from '../unit/webjs-standin.js';

/** What the table can produce: every event name but the queue's and the admin's `test`. */
const MAPPED = EVENT_NAMES.filter((e) => !(QUEUE_EVENTS as readonly string[]).includes(e) && e !== 'test');
const webhookName = (n: DriverEventName) => (n === 'message_create' ? 'message_sent' : n);

const logLines: string[] = [];
let t: TestGateway;
before(async () => {
  t = await startTestGateway({ label: 'incoming_events', simulated: true, env: { WEBHOOK_ALLOW_PRIVATE: 'true' }, logLines });
});
after(() => t.stop());

async function outbox(db: TestDb, instanceId: string): Promise<{ event: string; data: Record<string, unknown> }[]> {
  const { rows } = await db.pool.query<{ event: string; body: string }>('SELECT event, body FROM outbox WHERE instance_id = $1 ORDER BY id', [instanceId]);
  return rows.map((r) => ({ event: r.event, data: (JSON.parse(r.body) as { data: Record<string, unknown> }).data }));
}

const wire = (over: Partial<WireMessage>, phone: string): WireMessage => ({
  id: { fromMe: false, remote: '4917600000042@c.us', id: 'IN1', _serialized: 'false_4917600000042@c.us_IN1' },
  from: '4917600000042@c.us', to: `${phone}@c.us`, author: null, body: 'hi', type: 'chat', timestamp: 1767607200, fromMe: false,
  hasMedia: false, hasQuotedMsg: false, ack: 1, isForwarded: false, deviceType: 'android', location: null, vCards: [], ...over,
});

/** One of every network event of the contract, as the sandbox network hands it to a linked session. */
function networkSamples(phone: string): SandboxEvent[] {
  const m = wire({}, phone);
  const own = wire({ fromMe: true, id: { fromMe: true, remote: '4917600000042@c.us', id: 'OUT1', _serialized: 'true_4917600000042@c.us_OUT1' } }, phone);
  const chat = { id: 'g1@g.us', name: 'Group', isGroup: true, isReadOnly: false, unreadCount: 2, timestamp: 1, archived: true, pinned: false, isMuted: false, muteExpiration: null };
  const note = { id: 'n1', chatId: 'g1@g.us', author: '4917600000042@c.us', recipientIds: [], body: 'x', type: 'add', timestamp: 5 };
  return [
    { name: 'message', args: [m] }, { name: 'message_create', args: [own] }, { name: 'message_ack', args: [own, 3] },
    { name: 'message_reaction', args: [{ id: 'r1', msgId: own.id._serialized, chatId: 'c@c.us', senderId: 's@c.us', reaction: '👍', timestamp: 9, orphan: 0 }] },
    { name: 'message_edit', args: [m, 'new', 'old'] }, { name: 'message_revoke_everyone', args: [m, null] }, { name: 'message_revoke_me', args: [m] },
    { name: 'message_ciphertext', args: [m] }, { name: 'message_ciphertext_failed', args: [m] }, { name: 'media_uploaded', args: [own] },
    { name: 'unread_count', args: [chat] }, { name: 'vote_update', args: [{ voter: 'v@c.us', selectedOptions: [], interractedAtTs: 1, parentMessageId: 'p' }] },
    { name: 'contact_changed', args: [m, 'a@c.us', 'b@c.us', true] }, { name: 'chat_removed', args: [chat] }, { name: 'chat_archived', args: [chat, true, false] },
    { name: 'group_join', args: [note] }, { name: 'group_leave', args: [note] }, { name: 'group_admin_changed', args: [note] },
    { name: 'group_membership_request', args: [note] }, { name: 'group_update', args: [note] },
    { name: 'call', args: [{ id: 'call1', from: 'c@c.us', timestamp: 7, isVideo: false, isGroup: false, fromMe: false }] },
    { name: 'change_battery', args: [{ battery: 50, plugged: false }] },
  ];
}

test('sandbox driver in a gateway: every lifecycle and network event reaches the outbox, secrets in no log line', async () => {
  const net = t.gw.sandbox?.network;
  assert.ok(net, 'in-process sandbox');
  const hook = { url: 'http://127.0.0.1:9/events', secret: 'incoming-events-secret-0123456789', events: ['*'] };
  const a = await t.createInstance('a', { link: false });
  assert.equal((await t.admin('PUT', `/admin/v1/instances/${a.instance.id}/webhook`, hook)).status, 200);
  const has = (id: string, event: string, n = 1) => async () => (await outbox(t.db, id)).filter((e) => e.event === event).length >= n || null;

  await t.advanceUntil(has(a.instance.id, 'qr'), 'qr');
  assert.equal((await t.admin('POST', `/admin/v1/instances/${a.instance.id}/pairing-code`, { phoneNumber: '4915100000077' })).status, 200);
  await t.advanceUntil(has(a.instance.id, 'code'), 'code');
  assert.equal((await t.admin('POST', `/sandbox/v1/instances/${a.instance.id}/link`, { phoneNumber: '4915100000077' })).status < 300, true);
  await t.advanceUntil(has(a.instance.id, 'ready'), 'ready');
  assert.equal((await t.admin('POST', `/admin/v1/instances/${a.instance.id}/restart`)).status, 202);
  await t.advanceUntil(has(a.instance.id, 'ready', 2), 'ready after the restart');

  const samples = networkSamples('4915100000077');
  assert.deepEqual(samples.map((s) => s.name).sort(), [...NETWORK_EVENT_NAMES].sort(), 'a sample of every network event');
  for (const s of samples) net.emitTo('4915100000077', () => s);
  for (const s of samples) if (s.name !== 'info') await t.advanceUntil(has(a.instance.id, webhookName(s.name)), s.name);

  net.session(a.instance.id).remoteLogout(); // the phone removed the linked device
  await t.advanceUntil(has(a.instance.id, 'disconnected'), 'disconnected');

  // a restore that fails: the sandbox network never says so by itself
  const b = await t.createInstance('b', { link: false });
  assert.equal((await t.admin('PUT', `/admin/v1/instances/${b.instance.id}/webhook`, hook)).status, 200);
  await t.advanceUntil(has(b.instance.id, 'qr'), 'qr of b');
  net.session(b.instance.id).emit({ name: 'auth_failure', args: ['restore failed'] });
  await t.advanceUntil(has(b.instance.id, 'auth_failure'), 'auth_failure');

  const rows = [...(await outbox(t.db, a.instance.id)), ...(await outbox(t.db, b.instance.id))];
  assert.deepEqual([...new Set(rows.map((r) => r.event))].sort(), [...MAPPED].sort(), 'every mapper ran, nothing else was written');
  const ready = rows.find((r) => r.event === 'ready');
  assert.deepEqual(ready?.data, { phoneNumber: '4915100000077' });
  assert.deepEqual(rows.find((r) => r.event === 'message_sent')?.data, { id: 'true_4917600000042@c.us_OUT1', to: '4915100000077@c.us', body: 'hi', timestamp: 1767607200000 });
  assert.equal(rows.filter((r) => r.event === 'message').length, 1, 'written once');
  const { rows: stored } = await t.db.pool.query<{ phone_number: string }>('SELECT phone_number FROM instances WHERE id = $1', [a.instance.id]);
  assert.equal(stored[0]?.phone_number, '4915100000077', 'the events actor saved the number of `ready`');

  const secrets = rows.flatMap((r) => (r.event === 'qr' ? [String(r.data.qr)] : r.event === 'code' ? [String(r.data.code)] : []));
  assert.ok(secrets.length >= 2);
  for (const s of secrets) assert.ok(!logLines.some((l) => l.includes(s)), 'a login secret in a log line');
});

test('whatsapp-web.js driver: every library event reaches the outbox through the session, the machine and the events actor', async () => {
  const db = await createTestDb('incoming_events_webjs');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'incoming-events-'));
  const clock = simulatedClock();
  const log = createLogger({ level: 'info', stream: new Writable({ write: (c: Buffer, _e, cb) => (logLines.push(c.toString()), cb()) }) });
  try {
    const { instance } = await withTransaction(db.pool, (c) => createInstance(c, { name: 'w', driver: 'webjs', settings: {} }));
    await putWebhook(db.pool, instance.id, { url: 'http://127.0.0.1:9/e', secret: 'incoming-events-secret-0123456789', events: ['*'], enabled: true });
    const incoming = createIncomingEvents({
      pool: db.pool, clock, log, events: createEventBus({ pool: db.pool, clock, wake: () => {} }), downloadTimeoutMs: 1000,
      media: { describe: () => Promise.resolve(null) },
    });
    const events = createActor(incoming.logic).start();
    let client: StandInClient | null = null;
    const sessions = createSessionLogic({
      clock,
      driverFactory: (opts) => new WebjsDriver({ ...opts, clock, clientFactory: (o) => (client = new StandInClient(o)) }),
      driverOptions: { dataDir, callTimeoutMs: 1000 },
      onNetworkEvent: (_id, name, args, download) => events.send(networkCommand(instance, name, args, download)),
    });
    // wired as src/actors/runtime.ts wires it: `notify` only sends a command
    const machine = createActor(
      instanceMachine.provide({ actors: { session: sessions.logic }, actions: { notify: (_, p) => events.send(lifecycleCommand(instance, p)), trace: () => {} } }),
      { input: { instanceId: instance.id }, clock },
    ).start();
    const settle = async () => {
      for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
      await incoming.settled();
    };
    await settle();
    assert.ok(client, 'the session built its driver');
    const c: StandInClient = client;
    const msg = (fromMe = false) => new Message(c, rawMessage({ id: msgKey(fromMe, '491511234567@c.us', fromMe ? '3EB0OUT' : '3EB0IN') }));
    const chat = c.chat(rawChat({ unreadCount: 1 }));
    const note = (subtype: string) => new GroupNotification(c, { id: msgKey(false, '1203@g.us', `G${subtype}`), subtype, t: 1767607400, author: wid('491511234567@c.us'), recipients: [], body: '' });
    const poll = rawMessage({ id: msgKey(true, '491511234567@c.us', '3EB0POLL'), type: 'poll_creation', pollName: 'P?', pollOptions: [{ name: 'A', localId: 0 }] });
    const lib: [string, ...unknown[]][] = [
      ['qr', '2@abc'], ['code', 'K7Q2ZP4M'], ['authenticated'], ['loading_screen', 100, 'WhatsApp'], ['change_state', 'CONNECTED'], ['ready'],
      ['message', msg()], ['message_create', msg(true)], ['message_ack', msg(true), 3],
      ['message_reaction', new Reaction(c, { msgKey: msgKey(false, '491511234567@c.us', 'R'), parentMsgKey: msgKey(true, '491511234567@c.us', '3EB0OUT'), reactionText: '👍', senderUserJid: '491511234567@c.us', timestamp: 1767607260, orphan: 0, read: false })],
      ['message_edit', msg(), 'new', 'old'], ['message_revoke_everyone', msg(), undefined], ['message_revoke_me', msg()], ['message_ciphertext', msg()],
      ['message_ciphertext_failed', msg()], ['media_uploaded', msg(true)], ['unread_count', chat],
      ['vote_update', new PollVote(c, { sender: wid('491511234567@c.us'), selectedOptionLocalIds: [0], senderTimestampMs: 1767607300000, parentMessage: poll, parentMsgKey: poll.id })],
      ['contact_changed', msg(), '491511234567@c.us', '491700000000@c.us', true], ['chat_removed', chat], ['chat_archived', chat, true, false],
      ['group_join', note('add')], ['group_leave', note('remove')], ['group_admin_changed', note('promote')],
      ['group_membership_request', note('membership_approval_request')], ['group_update', note('subject')],
      ['call', new Call(c, { id: 'CALL01', peerJid: '491511234567@c.us', offerTime: 1767607500, isVideo: false, isGroup: false, outgoing: false })],
      ['change_battery', { battery: 81, plugged: true }], ['disconnected', 'NAVIGATION'],
    ];
    assert.deepEqual(lib.map(([n]) => n).sort(), [...LIB_EVENT_NAMES].filter((n) => n !== 'auth_failure').sort(), 'every library event but a failed restore (the sandbox test has it)');
    for (const [name, ...args] of lib) {
      c.emit(name, ...args);
      await settle();
    }
    machine.stop();
    await sessions.settledAll();
    events.stop();
    await incoming.settled();
    const got = new Set((await outbox(db, instance.id)).map((r) => r.event));
    const expected = [...LIB_EVENT_NAMES.filter((n) => n !== 'auth_failure').map(webhookName)];
    assert.deepEqual([...got].sort(), [...new Set(expected)].sort());
    assert.deepEqual(LIFECYCLE_EVENT_NAMES.filter((n) => !got.has(n)).sort(), ['auth_failure', 'instance_restarting'], 'lifecycle through the machine');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await db.close();
  }
});

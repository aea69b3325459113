/**
 * Sends through the webjs driver against the stand-in Client: what reaches the library (content classes,
 * options) and what each answer means (SPEC.md "Job transitions"): an id → confirmed; no message back →
 * assumed; timeout or failure after the call started → unknown (provablyNotSent false); a provable refusal
 * (not registered, bad input) → failed (provablyNotSent true). One call, never a retry.
 */
import { after, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import wweb from 'whatsapp-web.js';
import { simulatedClock } from '../../src/clock.js';
import { DriverError, type SendContent } from '../../src/drivers/contract.js';
import { WebjsDriver } from '../../src/drivers/webjs/driver.js';
import { performCall } from '../../src/actors/call.js';
import { isLibraryContact } from '../../src/drivers/webjs/library.js';
import { StandInClient, msgKey, never, rawContact, rawMessage, wid } from './webjs-standin.js';

const { MessageMedia, Location, Poll } = wweb;
const dataDir = mkdtempSync(path.join(tmpdir(), 'webjs-send-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

const CALL_TIMEOUT = 5_000;
let clock: ReturnType<typeof simulatedClock>;
let client: StandInClient;
let driver: WebjsDriver;

const flush = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

async function readyDriver(): Promise<void> {
  clock = simulatedClock();
  driver = new WebjsDriver({
    instanceId: 'send-1',
    dataDir,
    callTimeoutMs: CALL_TIMEOUT,
    clock,
    clientFactory: (options) => (client = new StandInClient(options)),
  });
  await driver.initialize();
  client.info = { wid: wid('491609876543@c.us'), pushname: 'Shop', platform: 'android' };
  client.emit('ready');
}

/** The DriverError a promise rejects with. */
async function failure(p: Promise<unknown>): Promise<DriverError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof DriverError, `expected a DriverError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a rejection');
}

const text: SendContent = { kind: 'text', body: 'Hallo' };

/** Arguments of the i-th recorded call of `method`. */
const sent = (i = 0, method = 'sendMessage'): unknown[] => client.callsOf(method)[i] ?? [];

beforeEach(readyDriver);

describe('outcomes', () => {
  test('an id: the network took it (confirmed); the number is looked up first', async () => {
    const result = await driver.sendMessage('491511234567@c.us', text, {});
    assert.deepEqual(result, { id: 'true_491511234567@c.us_3EB0SENT0001', timestamp: 1767607200 });
    assert.deepEqual(
      client.calls.map((c) => c.method),
      ['initialize', 'getNumberId', 'sendMessage'],
    );
    assert.deepEqual(client.callsOf('getNumberId'), [['491511234567']]);
    const [chatId, content, options] = sent();
    assert.equal(chatId, '491511234567@c.us');
    assert.equal(content, 'Hallo');
    assert.deepEqual(options, { waitUntilMsgSent: true, sendSeen: false });
  });

  test('the registered id the network gives is the one addressed', async () => {
    client.numberIdWith = async () => wid('5511987654321@c.us');
    await driver.sendMessage('551187654321@c.us', text, {});
    assert.equal(client.callsOf('sendMessage')[0]?.[0], '5511987654321@c.us');
  });

  test('resolved without a message: sent, no id (assumed)', async () => {
    client.sendWith = async () => undefined;
    assert.deepEqual(await driver.sendMessage('491511234567@c.us', text, {}), {});
  });

  test('not registered: provably not sent, the send is never called', async () => {
    const err = await failure(driver.sendMessage('491700000000@c.us', text, {}));
    assert.equal(err.code, 'NOT_REGISTERED');
    assert.equal(err.provablyNotSent, true);
    assert.equal(client.callsOf('sendMessage').length, 0);
  });

  test('@lid and @g.us ids are addressed as given, without a lookup', async () => {
    await driver.sendMessage('123456789012345@lid', text, {});
    await driver.sendMessage('120363000000000001@g.us', text, {});
    assert.equal(client.callsOf('getNumberId').length, 0);
    assert.deepEqual(
      client.callsOf('sendMessage').map((a) => a[0]),
      ['123456789012345@lid', '120363000000000001@g.us'],
    );
  });

  test('timeout after the send started: unknown, counted against the browser, not retried', async () => {
    client.sendWith = () => never();
    const pending = failure(driver.sendMessage('491511234567@c.us', text, {}));
    await flush();
    clock.increment(CALL_TIMEOUT - 1);
    await flush();
    assert.equal(client.callsOf('sendMessage').length, 1);
    clock.increment(1);
    const err = await pending;
    assert.equal(err.code, 'TIMEOUT');
    assert.equal(err.provablyNotSent, false);
    assert.equal(client.callsOf('sendMessage').length, 1);
    assert.equal(driver.browserHealth().failStreak, 1);
  });

  test('the lookup timing out: nothing was sent', async () => {
    client.numberIdWith = () => never();
    const pending = failure(driver.sendMessage('491511234567@c.us', text, {}));
    await flush();
    clock.increment(CALL_TIMEOUT);
    const err = await pending;
    assert.equal(err.code, 'TIMEOUT');
    assert.equal(err.provablyNotSent, true);
    assert.equal(client.callsOf('sendMessage').length, 0);
  });

  test('an evaluation failure after the send started: unknown', async () => {
    client.sendWith = async () => {
      throw new Error('Evaluation failed: TypeError: Cannot read properties of undefined');
    };
    const err = await failure(driver.sendMessage('491511234567@c.us', text, {}));
    assert.equal(err.code, 'CALL_FAILED');
    assert.equal(err.provablyNotSent, false);
    assert.match(err.message, /Evaluation failed/);
  });

  test('the library rejecting with a bare string is still a DriverError', async () => {
    client.sendWith = () => Promise.reject('ready timeout');
    const err = await failure(driver.sendMessage('491511234567@c.us', text, {}));
    assert.equal(err.provablyNotSent, false);
    assert.match(err.message, /ready timeout/);
  });

  test('a message marked ACK_ERROR: unknown, not confirmed', async () => {
    client.sendWith = async (chatId) => client.message(rawMessage({ id: msgKey(true, chatId, '3EB0FAIL'), ack: -1 }));
    const err = await failure(driver.sendMessage('491511234567@c.us', text, {}));
    assert.equal(err.code, 'CALL_FAILED');
    assert.equal(err.provablyNotSent, false);
  });

  test('not connected yet, or closed: refused before the network', async () => {
    client.emit('disconnected', 'NAVIGATION');
    const notReady = await failure(driver.sendMessage('491511234567@c.us', text, {}));
    assert.equal(notReady.code, 'NOT_CONNECTED');
    assert.equal(notReady.provablyNotSent, true);
    await driver.destroy();
    const closed = await failure(driver.sendMessage('491511234567@c.us', text, {}));
    assert.equal(closed.code, 'SESSION_CLOSED');
    assert.equal(closed.provablyNotSent, true);
    assert.equal(client.callsOf('sendMessage').length, 0);
  });

  test('bad input is refused before the network', async () => {
    const cases: [string, SendContent][] = [
      ['491511234567@c.us', { kind: 'text', body: '   ' }],
      ['not-an-id', text],
      ['491511234567@s.whatsapp.net', text],
      ['491511234567@c.us', { kind: 'poll', poll: { pollName: 'Q', pollOptions: ['only one'], options: { allowMultipleAnswers: false } } }],
      ['491511234567@c.us', { kind: 'location', location: { latitude: 91, longitude: 0 } }],
      ['491511234567@c.us', { kind: 'media', media: { mimetype: 'image/png', data: 'not base64!' } }],
      ['491511234567@c.us', { kind: 'contacts', contactIds: [] }],
    ];
    for (const [chatId, content] of cases) {
      const err = await failure(driver.sendMessage(chatId, content, {}));
      assert.equal(err.code, 'INVALID_INPUT', JSON.stringify(content));
      assert.equal(err.provablyNotSent, true);
    }
    const sticker = await failure(
      driver.sendMessage('491511234567@c.us', { kind: 'media', media: { mimetype: 'video/mp4', data: 'AAAA' } }, { sendMediaAsSticker: true }),
    );
    assert.equal(sticker.code, 'INVALID_INPUT');
    assert.equal(client.calls.filter((c) => c.method !== 'initialize').length, 0);
  });
});

describe('content and options reach the library as its own classes', () => {
  test('media with caption and every media option', async () => {
    await driver.sendMessage(
      '491511234567@c.us',
      { kind: 'media', media: { mimetype: 'audio/ogg; codecs=opus', data: 'T2dnUw==', filename: 'v.ogg', filesize: 4 }, caption: 'listen' },
      {
        sendAudioAsVoice: true,
        sendMediaAsDocument: false,
        sendVideoAsGif: false,
        sendMediaAsHd: true,
        isViewOnce: true,
        quotedMessageId: 'false_491511234567@c.us_3EB0QUOTED',
        mentions: ['491511234567@c.us', '123456789012345@lid'],
        groupMentions: [{ subject: 'Team', id: '120363000000000001@g.us' }],
        linkPreview: false,
        waitUntilMsgSent: false,
      },
    );
    const [, content, options] = sent();
    assert.ok(content instanceof MessageMedia);
    assert.deepEqual({ ...content }, { mimetype: 'audio/ogg; codecs=opus', data: 'T2dnUw==', filename: 'v.ogg', filesize: 4 });
    assert.deepEqual(options, {
      waitUntilMsgSent: true,
      sendSeen: false,
      linkPreview: false,
      sendAudioAsVoice: true,
      sendVideoAsGif: false,
      sendMediaAsDocument: false,
      sendMediaAsHd: true,
      isViewOnce: true,
      quotedMessageId: 'false_491511234567@c.us_3EB0QUOTED',
      mentions: ['491511234567@c.us', '123456789012345@lid'],
      groupMentions: [{ subject: 'Team', id: '120363000000000001@g.us' }],
      caption: 'listen',
    });
  });

  test('sticker metadata and video as GIF pass through', async () => {
    await driver.sendMessage(
      '491511234567@c.us',
      { kind: 'media', media: { mimetype: 'image/png', data: 'iVBORw0KGgo=' } },
      { sendMediaAsSticker: true, stickerName: 'Pack', stickerAuthor: 'Shop', stickerCategories: ['😀'] },
    );
    await driver.sendMessage('491511234567@c.us', { kind: 'media', media: { mimetype: 'video/mp4', data: 'AAAA' } }, { sendVideoAsGif: true });
    await driver.sendMessage('491511234567@c.us', { kind: 'media', media: { mimetype: 'application/pdf', data: 'JVBERi0=', filename: 'a.pdf' } }, { sendMediaAsDocument: true });
    const [sticker, gif, doc] = client.callsOf('sendMessage').map((a) => a[2]);
    assert.deepEqual(sticker, { waitUntilMsgSent: true, sendSeen: false, sendMediaAsSticker: true, stickerName: 'Pack', stickerAuthor: 'Shop', stickerCategories: ['😀'] });
    assert.deepEqual(gif, { waitUntilMsgSent: true, sendSeen: false, sendVideoAsGif: true });
    assert.deepEqual(doc, { waitUntilMsgSent: true, sendSeen: false, sendMediaAsDocument: true });
  });

  test('location and poll', async () => {
    await driver.sendMessage('491511234567@c.us', { kind: 'location', location: { latitude: 52.52, longitude: 13.405, name: 'Alex', address: 'Berlin', url: 'https://x.example' } }, {});
    await driver.sendMessage(
      '120363000000000001@g.us',
      { kind: 'poll', poll: { pollName: 'Lunch?', pollOptions: ['Pizza', 'Soup'], options: { allowMultipleAnswers: true } } },
      {},
    );
    const [, location] = sent(0);
    const [, poll] = sent(1);
    assert.ok(location instanceof Location);
    assert.equal(location.latitude, 52.52);
    assert.equal(location.description, 'Alex\nBerlin');
    assert.equal(location.url, 'https://x.example');
    assert.ok(poll instanceof Poll);
    assert.deepEqual(poll.pollOptions, [{ name: 'Pizza', localId: 0 }, { name: 'Soup', localId: 1 }]);
    assert.deepEqual(poll.options, { allowMultipleAnswers: true, messageSecret: undefined });
  });

  test('contact cards: one Contact, or a list of them, as getContactById gave them', async () => {
    client.contacts.set('491511234567@c.us', client.contact(rawContact()));
    await driver.sendMessage('491511234567@c.us', { kind: 'contacts', contactIds: ['491511234567@c.us'] }, { parseVCards: true });
    await driver.sendMessage('491511234567@c.us', { kind: 'contacts', contactIds: ['491511234567@c.us', '123456789012345@lid'] }, {});
    const [, one, oneOptions] = sent(0);
    const [, list] = sent(1);
    assert.ok(isLibraryContact(one));
    assert.equal(oneOptions && typeof oneOptions === 'object' && 'parseVCards' in oneOptions ? oneOptions.parseVCards : null, true);
    assert.ok(Array.isArray(list) && list.length === 2 && list.every((c) => isLibraryContact(c)));
    assert.deepEqual(client.callsOf('getContactById').map((a) => a[0]), ['491511234567@c.us', '491511234567@c.us', '123456789012345@lid']);
  });
});

describe('forward', () => {
  test('through the library Message, to the registered id', async () => {
    const id = 'false_491511234567@c.us_3EB0FWD';
    client.messages.set(id, client.message(rawMessage({ id: msgKey(false, '491511234567@c.us', '3EB0FWD') })));
    await driver.forwardMessage(id, '491511234567@c.us');
    assert.deepEqual(client.callsOf('message.forward'), [[id, '491511234567@c.us']]);
  });

  test('an unknown message: not found, nothing forwarded', async () => {
    const err = await failure(driver.forwardMessage('false_491511234567@c.us_NOPE', '491511234567@c.us'));
    assert.equal(err.code, 'NOT_FOUND');
    assert.equal(err.provablyNotSent, true);
    assert.equal(client.callsOf('message.forward').length, 0);
  });

  test('to an unregistered number: not registered', async () => {
    const err = await failure(driver.forwardMessage('false_491511234567@c.us_3EB0FWD', '491700000000@c.us'));
    assert.equal(err.code, 'NOT_REGISTERED');
  });
});

describe('a call to the number the session is linked to now (a waiting job, the instance linked again meanwhile)', () => {
  const OWN = '491609876543@c.us';
  const now = () => clock.now();
  // the network knows its own account's number as registered: the driver's look-up alone does not refuse it
  beforeEach(() => client.registered.add('491609876543'));

  test('a send: failed as provably not sent, the library never called (the real network takes the session down)', async () => {
    const o = await performCall(driver, { call: 'send', chatId: OWN, content: text, options: {} }, now);
    assert.equal(o.kind, 'driver_error');
    assert.ok(o.kind === 'driver_error' && o.provablyNotSent && o.code === 'INVALID_INPUT', JSON.stringify(o));
    assert.match(o.message, /linked to now/);
    assert.equal(client.callsOf('sendMessage').length, 0);
    assert.equal(client.callsOf('getNumberId').length, 0);
  });

  test('a forward to it alike; to any other number both go out', async () => {
    const id = 'false_491511234567@c.us_3EB0FWD';
    client.messages.set(id, client.message(rawMessage({ id: msgKey(false, '491511234567@c.us', '3EB0FWD') })));
    const refused = await performCall(driver, { call: 'forward', msgId: id, toChatId: OWN }, now);
    assert.ok(refused.kind === 'driver_error' && refused.provablyNotSent, JSON.stringify(refused));
    assert.equal(client.callsOf('message.forward').length, 0);
    assert.equal((await performCall(driver, { call: 'forward', msgId: id, toChatId: '491511234567@c.us' }, now)).kind, 'assumed');
    assert.equal((await performCall(driver, { call: 'send', chatId: '491511234567@c.us', content: text, options: {} }, now)).kind, 'confirmed');
    assert.equal(client.callsOf('sendMessage').length, 1);
  });

  test('a group listing it among its participants: not created, the library never called', async () => {
    const o = await performCall(driver, { call: 'group_create', title: 'G', participants: ['491511234567@c.us', OWN], options: {} }, now);
    assert.ok(o.kind === 'driver_error' && o.provablyNotSent && o.code === 'INVALID_INPUT', JSON.stringify(o));
    assert.match(o.message, /^not created/);
    assert.equal(client.callsOf('createGroup').length, 0);
  });

  test('the number written with leading zeros (an id accepted before they were refused): refused alike in each call', async () => {
    // found from the outside: `0491…@c.us`, the own number behind a 0, waited from before the rule and went out to it
    const spelled = `00${OWN}`;
    const id = 'false_491511234567@c.us_3EB0FWZ';
    client.messages.set(id, client.message(rawMessage({ id: msgKey(false, '491511234567@c.us', '3EB0FWZ') })));
    for (const prepared of [
      { call: 'send' as const, chatId: spelled, content: text, options: {} },
      { call: 'forward' as const, msgId: id, toChatId: spelled },
      { call: 'group_create' as const, title: 'G', participants: ['491511234567@c.us', spelled], options: {} },
    ]) {
      const o = await performCall(driver, prepared, now);
      assert.ok(o.kind === 'driver_error' && o.provablyNotSent && o.code === 'INVALID_INPUT', `${prepared.call}: ${JSON.stringify(o)}`);
    }
    assert.deepEqual([client.callsOf('sendMessage').length, client.callsOf('message.forward').length, client.callsOf('createGroup').length], [0, 0, 0]);
  });
});

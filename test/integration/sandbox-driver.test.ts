/**
 * The sandbox driver over the in-process network: what a send through the contract puts into the
 * recipient's chat, what an incoming message raises, acks on the clock, interactions, groups and reads.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { simulatedClock } from '../../src/clock.js';
import type { MessageAck, WireMessage } from '../../src/drivers/contract.js';
import { DriverError } from '../../src/drivers/contract.js';
import { SandboxDriver } from '../../src/drivers/sandbox/driver.js';
import { inProcessSandboxApi } from '../../src/drivers/sandbox/in-process.js';
import { SandboxNetwork } from '../../src/sandbox/network.js';
import * as people from '../../src/sandbox/people.js';
import { wireMessage } from '../../src/sandbox/wire.js';
import { next } from '../helpers/driver-events.js';

const ME = '4915100000001';
const ALICE = '4917600000042';
const BOB = '4917600000043';
const NOBODY = '4917612340000'; // ends in 0000: no account
const INSTANCE = 'inst-driver';


/** The last message of a chat as the given account sees it. */
function lastSeenBy(net: SandboxNetwork, phone: string, chatId: string): WireMessage {
  const msgs = net.messages.inChat(phone, chatId);
  const m = msgs[msgs.length - 1];
  assert.ok(m, `no message in ${chatId} for ${phone}`);
  return wireMessage(m, phone);
}

describe('sandbox driver (in-process network)', () => {
  const clock = simulatedClock();
  const net = new SandboxNetwork({ clock });
  let d: SandboxDriver;

  before(async () => {
    net.setAccount(ALICE, { pushname: 'Alice' });
    d = new SandboxDriver({ instanceId: INSTANCE, api: inProcessSandboxApi(net), autoLink: { phoneNumber: ME, pushname: 'Shop' }, clock });
    const ready = next(d, 'ready');
    await d.initialize();
    await ready;
  });

  after(async () => {
    await d.destroy();
    net.close();
  });

  test('autoLink links the demo number: info carries the wid, state is CONNECTED', async () => {
    assert.deepEqual(d.info, { wid: `${ME}@c.us`, pushname: 'Shop', platform: 'sandbox' });
    assert.equal(await d.getState(), 'CONNECTED');
    assert.equal(d.browserHealth().alive, true);
  });

  test('text reaches the recipient’s chat as type chat, with the id the sender got', async () => {
    const r = await d.sendMessage(`${ALICE}@c.us`, { kind: 'text', body: 'Hello Alice' }, { linkPreview: false, waitUntilMsgSent: true });
    assert.match(r.id ?? '', new RegExp(`^true_${ALICE}@c\\.us_3EB0[0-9A-F]{16}$`));
    assert.equal(r.timestamp, Math.floor(clock.now() / 1000));
    const seen = lastSeenBy(net, ALICE, `${ME}@c.us`);
    assert.equal(seen.type, 'chat');
    assert.equal(seen.body, 'Hello Alice');
    assert.equal(seen.fromMe, false);
    assert.equal(seen.from, `${ME}@c.us`);
    assert.equal(seen.to, `${ALICE}@c.us`);
    assert.equal(seen.id._serialized, `false_${ME}@c.us_${r.id?.split('_')[2]}`);
    const entry = net.ledger(INSTANCE).at(-1);
    assert.equal(entry?.messageId, r.id);
    assert.equal(entry?.type, 'chat');
    assert.equal(entry?.body, 'Hello Alice');
    assert.deepEqual(entry?.options, { linkPreview: false, waitUntilMsgSent: true });
  });

  test('media arrives with the same bytes (sha256 checked) and typed by mimetype and options', async () => {
    const bytes = randomBytes(4096);
    const sha = createHash('sha256').update(bytes).digest('hex');
    const r = await d.sendMessage(
      `${ALICE}@c.us`,
      { kind: 'media', media: { mimetype: 'image/jpeg', data: bytes.toString('base64'), filename: 'cat.jpg' }, caption: 'a cat' },
      { sendMediaAsHd: true },
    );
    const seen = lastSeenBy(net, ALICE, `${ME}@c.us`);
    assert.equal(seen.type, 'image');
    assert.equal(seen.body, 'a cat');
    assert.equal(seen.hasMedia, true);
    assert.deepEqual(seen.mediaInfo, { mimetype: 'image/jpeg', filename: 'cat.jpg', size: 4096 });
    const entry = net.ledger(INSTANCE).at(-1);
    assert.equal(entry?.media?.sha256, sha);
    const stored = net.store.getMedia(sha);
    assert.ok(stored && stored.equals(bytes));
    const back = await d.downloadMedia(r.id ?? '');
    assert.equal(createHash('sha256').update(Buffer.from(back?.data ?? '', 'base64')).digest('hex'), sha);

    await d.sendMessage(`${ALICE}@c.us`, { kind: 'media', media: { mimetype: 'audio/ogg', data: Buffer.from('OggS').toString('base64') } }, { sendAudioAsVoice: true });
    assert.equal(lastSeenBy(net, ALICE, `${ME}@c.us`).type, 'ptt');
    await d.sendMessage(`${ALICE}@c.us`, { kind: 'media', media: { mimetype: 'application/pdf', data: Buffer.from('%PDF').toString('base64'), filename: 'bill.pdf' } }, { sendMediaAsDocument: true });
    const doc = lastSeenBy(net, ALICE, `${ME}@c.us`);
    assert.equal(doc.type, 'document');
    assert.equal(doc.mediaInfo?.filename, 'bill.pdf');
  });

  test('location arrives with its coordinates and labels', async () => {
    const location = { latitude: 52.52, longitude: 13.405, name: 'Berlin', address: 'Alexanderplatz' };
    await d.sendMessage(`${ALICE}@c.us`, { kind: 'location', location }, {});
    const seen = lastSeenBy(net, ALICE, `${ME}@c.us`);
    assert.equal(seen.type, 'location');
    assert.deepEqual(seen.location, location);
  });

  test('contact cards: one is a vcard, two a multi_vcard, an unregistered one is refused before sending', async () => {
    await d.sendMessage(`${ALICE}@c.us`, { kind: 'contacts', contactIds: [`${BOB}@c.us`] }, {});
    const one = lastSeenBy(net, ALICE, `${ME}@c.us`);
    assert.equal(one.type, 'vcard');
    assert.match(one.body, new RegExp(`waid=${BOB}:\\+${BOB}`));
    assert.deepEqual(one.vCards, [one.body]);
    await d.sendMessage(`${ALICE}@c.us`, { kind: 'contacts', contactIds: [`${BOB}@c.us`, `${ALICE}@c.us`] }, {});
    const two = lastSeenBy(net, ALICE, `${ME}@c.us`);
    assert.equal(two.type, 'multi_vcard');
    assert.equal(two.vCards.length, 2);
    assert.match(two.vCards[1] ?? '', /FN:Alice/);
    const before = net.ledger(INSTANCE).length;
    await assert.rejects(d.sendMessage(`${ALICE}@c.us`, { kind: 'contacts', contactIds: [`${NOBODY}@c.us`] }, {}), (e: unknown) => e instanceof DriverError && e.code === 'INVALID_INPUT' && e.provablyNotSent);
    assert.equal(net.ledger(INSTANCE).length, before);
  });

  test('a poll arrives with numbered options and a vote raises vote_update', async () => {
    const r = await d.sendMessage(`${ALICE}@c.us`, { kind: 'poll', poll: { pollName: 'Lunch?', pollOptions: ['Pizza', 'Sushi', 'Salad'], options: { allowMultipleAnswers: true } } }, {});
    const seen = lastSeenBy(net, ALICE, `${ME}@c.us`);
    assert.equal(seen.type, 'poll_creation');
    assert.equal(seen.pollName, 'Lunch?');
    assert.deepEqual(seen.pollOptions, [{ name: 'Pizza', localId: 0 }, { name: 'Sushi', localId: 1 }, { name: 'Salad', localId: 2 }]);
    const vote = next(d, 'vote_update');
    clock.increment(1000);
    people.vote(net, INSTANCE, r.id ?? '', ALICE, ['Sushi', 'Salad']);
    const [v] = await vote;
    assert.deepEqual(v, {
      voter: `${ALICE}@c.us`,
      selectedOptions: [{ name: 'Sushi', localId: 1 }, { name: 'Salad', localId: 2 }],
      interractedAtTs: clock.now(),
      parentMessageId: r.id,
    });
  });

  test('acks progress server → device → read on the clock, each raising message_ack', async () => {
    const acks: MessageAck[] = [];
    const r = await d.sendMessage(`${ALICE}@c.us`, { kind: 'text', body: 'ack me' }, {});
    const onAck = (m: WireMessage, ack: MessageAck) => {
      if (m.id._serialized === r.id) acks.push(ack);
    };
    d.on('message_ack', onAck);
    assert.equal((await d.getMessageById(r.id ?? ''))?.ack, 1);
    clock.increment(999);
    assert.deepEqual(acks, []);
    clock.increment(1);
    assert.deepEqual(acks, [2]);
    clock.increment(4000);
    assert.deepEqual(acks, [2, 3]);
    assert.equal((await d.getMessageById(r.id ?? ''))?.ack, 3);
    d.off('message_ack', onAck);
  });

  test('an incoming message from a contact raises message with the Message fields', async () => {
    const got = next(d, 'message');
    const unread = next(d, 'unread_count');
    people.receiveMessage(net, INSTANCE, { from: BOB, type: 'text', body: 'Hi shop, are you open?' });
    const [m] = await got;
    assert.equal(m.id.fromMe, false);
    assert.equal(m.id.remote, `${BOB}@c.us`);
    assert.match(m.id.id, /^[0-9A-F]{32}$/);
    assert.equal(m.id._serialized, `false_${BOB}@c.us_${m.id.id}`);
    assert.deepEqual(
      { ...m, id: undefined },
      {
        id: undefined,
        from: `${BOB}@c.us`,
        to: `${ME}@c.us`,
        author: null,
        body: 'Hi shop, are you open?',
        type: 'chat',
        timestamp: Math.floor(clock.now() / 1000),
        fromMe: false,
        hasMedia: false,
        hasQuotedMsg: false,
        ack: 1,
        isForwarded: false,
        deviceType: 'android',
        location: null,
        vCards: [],
        mediaInfo: null,
      },
    );
    const [chat] = await unread;
    assert.equal(chat.id, `${BOB}@c.us`);
    assert.equal(chat.unreadCount, 1);

    // the instance reads the chat: unread goes to zero and Bob's message is read
    assert.equal(await d.sendSeen(`${BOB}@c.us`), true);
    assert.equal((await d.getChatById(`${BOB}@c.us`))?.unreadCount, 0);
    assert.equal(net.messages.find(BOB, m.id._serialized.replace('false_', 'true_'))?.ack, 3);
  });

  test('incoming media, location and vcard carry their fields; media downloads with its bytes', async () => {
    const bytes = randomBytes(1000);
    const got = next(d, 'message');
    people.receiveMessage(net, INSTANCE, { from: BOB, type: 'media', media: { mimetype: 'image/png', data: bytes.toString('base64'), filename: 'x.png' }, caption: 'look' });
    const [m] = await got;
    assert.equal(m.type, 'image');
    assert.equal(m.hasMedia, true);
    assert.deepEqual(m.mediaInfo, { mimetype: 'image/png', filename: 'x.png', size: 1000 });
    const media = await d.downloadMedia(m.id._serialized);
    assert.ok(Buffer.from(media?.data ?? '', 'base64').equals(bytes));

    const loc = next(d, 'message');
    people.receiveMessage(net, INSTANCE, { from: BOB, type: 'location', location: { latitude: 48.1, longitude: 11.6, name: 'Munich' } });
    assert.deepEqual((await loc)[0].location, { latitude: 48.1, longitude: 11.6, name: 'Munich' });

    const card = next(d, 'message');
    people.receiveMessage(net, INSTANCE, { from: BOB, type: 'vcard', contacts: [ALICE] });
    const [c] = await card;
    assert.equal(c.type, 'vcard');
    assert.match(c.vCards[0] ?? '', /FN:Alice/);
  });

  test('react, edit and delete for everyone reach the other side and the ledger', async () => {
    const r = await d.sendMessage(`${ALICE}@c.us`, { kind: 'text', body: 'typo heer' }, {});
    const id = r.id ?? '';
    await d.react(id, '👍');
    const key = id.split('_')[2] ?? '';
    assert.equal(net.messages.get(key)?.reactions[ME]?.emoji, '👍');
    const edited = await d.editMessage(id, 'typo here', {});
    assert.equal(edited?.body, 'typo here');
    assert.equal(lastSeenBy(net, ALICE, `${ME}@c.us`).body, 'typo here');
    const revoked = next(d, 'message_revoke_everyone');
    await d.deleteMessage(id, true);
    const [after, before] = await revoked;
    assert.equal(after.type, 'revoked');
    assert.equal(before?.body, 'typo here');
    assert.equal(lastSeenBy(net, ALICE, `${ME}@c.us`).type, 'revoked');
    const actions = net.ledger(INSTANCE).slice(-4).map((e) => [e.action, e.targetMessageId ?? e.messageId]);
    assert.deepEqual(actions, [['send', id], ['react', id], ['edit', id], ['delete', id]]);

    // someone else's message cannot be edited; it comes back null, as whatsapp-web.js does
    const incoming = people.receiveMessage(net, INSTANCE, { from: ALICE, type: 'text', body: 'mine' });
    assert.equal(await d.editMessage(incoming.message.id._serialized, 'changed', {}), null);
    await assert.rejects(d.deleteMessage(incoming.message.id._serialized, true), (e: unknown) => e instanceof DriverError && e.code === 'INVALID_INPUT');
  });

  test('a contact reacting, editing and revoking raises the matching events', async () => {
    const r = await d.sendMessage(`${ALICE}@c.us`, { kind: 'text', body: 'how is it?' }, {});
    const reaction = next(d, 'message_reaction');
    people.react(net, INSTANCE, r.id ?? '', ALICE, '❤️');
    const [rx] = await reaction;
    assert.equal(rx.msgId, r.id);
    assert.equal(rx.senderId, `${ALICE}@c.us`);
    assert.equal(rx.reaction, '❤️');
    assert.equal(rx.chatId, `${ALICE}@c.us`);

    const incoming = people.receiveMessage(net, INSTANCE, { from: ALICE, type: 'text', body: 'grate' });
    const edit = next(d, 'message_edit');
    people.edit(net, INSTANCE, incoming.message.id._serialized, 'great');
    const [em, newBody, prevBody] = await edit;
    assert.equal(em.id._serialized, incoming.message.id._serialized);
    assert.deepEqual([newBody, prevBody], ['great', 'grate']);
    const revoke = next(d, 'message_revoke_everyone');
    people.revoke(net, INSTANCE, incoming.message.id._serialized, true);
    assert.equal((await revoke)[0].type, 'revoked');
  });

  test('forward copies the message to another chat, marked forwarded', async () => {
    const incoming = people.receiveMessage(net, INSTANCE, { from: ALICE, type: 'text', body: 'pass this on' });
    await d.forwardMessage(incoming.message.id._serialized, `${BOB}@c.us`);
    const seen = lastSeenBy(net, BOB, `${ME}@c.us`);
    assert.equal(seen.body, 'pass this on');
    assert.equal(seen.isForwarded, true);
    const entry = net.ledger(INSTANCE).at(-1);
    assert.equal(entry?.action, 'forward');
    assert.equal(entry?.targetMessageId, incoming.message.id._serialized);
  });

  test('groups: create (unregistered numbers reported missing), send, admins, invite, subject, leave', async () => {
    const created = await d.createGroup('Team', [`${ALICE}@c.us`, `${BOB}@c.us`, `${NOBODY}@c.us`], {});
    assert.match(created.gid, /^120363\d{12}@g\.us$/);
    assert.deepEqual(Object.keys(created.missingParticipants), [`${NOBODY}@c.us`]);
    const g = await d.getGroup(created.gid);
    assert.equal(g?.isGroup, true);
    assert.deepEqual(g?.participants.map((p) => [p.id, p.isAdmin]), [[`${ME}@c.us`, true], [`${ALICE}@c.us`, false], [`${BOB}@c.us`, false]]);

    const r = await d.sendMessage(created.gid, { kind: 'text', body: 'Welcome' }, { mentions: [`${ALICE}@c.us`] });
    assert.match(r.id ?? '', new RegExp(`^true_${created.gid}_3EB0`));
    const seen = lastSeenBy(net, BOB, created.gid);
    assert.equal(seen.from, created.gid);
    assert.equal(seen.author, `${ME}@c.us`);
    assert.equal(seen.id._serialized, `false_${created.gid}_${seen.id.id}_${ME}@c.us`);

    await d.promoteParticipants(created.gid, [`${ALICE}@c.us`]);
    assert.equal((await d.getGroup(created.gid))?.participants.find((p) => p.id === `${ALICE}@c.us`)?.isAdmin, true);
    const code = await d.getInviteCode(created.gid);
    const revoked = await d.revokeInvite(created.gid);
    assert.notEqual(code, revoked);
    assert.equal(await d.getInviteCode(created.gid), revoked);
    const update = next(d, 'group_update');
    await d.setSubject(created.gid, 'Team 2');
    assert.equal((await update)[0].body, 'Team 2');
    await d.setDescription(created.gid, 'All of us');
    assert.equal((await d.getGroup(created.gid))?.description, 'All of us');
    assert.deepEqual(await d.addParticipants(created.gid, [`${BOB}@c.us`, `${NOBODY}@c.us`]), {
      [`${BOB}@c.us`]: { code: 409, message: 'The participant is already a group member' },
      [`${NOBODY}@c.us`]: { code: 404, message: 'The participant is not registered' },
    });
    await d.removeParticipants(created.gid, [`${BOB}@c.us`]);
    assert.equal((await d.getGroup(created.gid))?.participants.length, 2);

    await assert.rejects(d.getInviteCode(`${ALICE}@c.us`), (e: unknown) => e instanceof DriverError && e.code === 'NOT_A_GROUP');
    const left = next(d, 'group_leave');
    await d.leaveGroup(created.gid);
    assert.equal((await left)[0].type, 'leave');
    assert.equal((await d.getChatById(created.gid))?.isReadOnly, true);
    await assert.rejects(d.sendMessage(created.gid, { kind: 'text', body: 'still here?' }, {}), (e: unknown) => e instanceof DriverError && e.provablyNotSent);
  });

  test('reads: chats with the Chat fields, messages newest last with limit and fromMe, contacts, number lookup', async () => {
    const chats = await d.getChats();
    const alice = chats.find((c) => c.id === `${ALICE}@c.us`);
    assert.ok(alice);
    assert.deepEqual(Object.keys(alice).sort(), ['archived', 'id', 'isGroup', 'isMuted', 'isReadOnly', 'muteExpiration', 'name', 'pinned', 'timestamp', 'unreadCount']);
    assert.equal(alice.name, 'Alice');
    const all = await d.fetchMessages(`${ALICE}@c.us`, { limit: 1000 });
    const last2 = await d.fetchMessages(`${ALICE}@c.us`, { limit: 2 });
    assert.deepEqual(last2.map((m) => m.id._serialized), all.slice(-2).map((m) => m.id._serialized));
    const mine = await d.fetchMessages(`${ALICE}@c.us`, { limit: 1000, fromMe: true });
    assert.ok(mine.length > 0 && mine.every((m) => m.fromMe));
    assert.equal(await d.getNumberId(`+${ALICE}`), `${ALICE}@c.us`);
    assert.equal(await d.getNumberId(NOBODY), null);
    const contact = await d.getContactById(`${ALICE}@c.us`);
    assert.equal(contact?.pushname, 'Alice');
    assert.equal(contact?.isMyContact, true);
    assert.equal((await d.getContactById(`${NOBODY}@c.us`))?.isWAContact, false);
    assert.match((await d.getProfilePicUrl(`${ALICE}@c.us`)) ?? '', /^https:\/\//);
    assert.equal(await d.getMessageById(`true_${ALICE}@c.us_3EB0FFFFFFFFFFFFFFFF`), null);
  });

  test('typing and recording states are shown per chat and cleared', async () => {
    const s = net.session(INSTANCE);
    await d.sendStateTyping(`${ALICE}@c.us`);
    await d.sendStateRecording(`${BOB}@c.us`);
    assert.deepEqual(Object.fromEntries(s.presence), { [`${ALICE}@c.us`]: 'typing', [`${BOB}@c.us`]: 'recording' });
    await d.clearState(`${ALICE}@c.us`);
    assert.deepEqual(Object.fromEntries(s.presence), { [`${BOB}@c.us`]: 'recording' });
  });

  test('calls, battery and number changes reach the instance as events', async () => {
    const call = next(d, 'call');
    people.call(net, INSTANCE, ALICE, true);
    const [c] = await call;
    assert.equal(c.from, `${ALICE}@c.us`);
    assert.equal(c.isVideo, true);
    assert.equal(c.fromMe, false);
    const battery = next(d, 'change_battery');
    people.battery(net, INSTANCE, 42, false);
    assert.deepEqual((await battery)[0], { battery: 42, plugged: false });
    const changed = next(d, 'contact_changed');
    people.changeNumber(net, INSTANCE, ALICE, '4917699999999');
    const [, oldId, newId, isContact] = await changed;
    assert.deepEqual([oldId, newId, isContact], [`${ALICE}@c.us`, '4917699999999@c.us', true]);
  });
});

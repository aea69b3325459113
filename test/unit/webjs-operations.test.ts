/**
 * Interactions, reads and groups through the webjs driver against the stand-in Client: which library method
 * each contract operation uses, what comes back as plain data, and how the library's "soft" refusals
 * (null, false, an error string) become DriverErrors.
 */
import { after, afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { simulatedClock } from '../../src/clock.js';
import { DriverError } from '../../src/drivers/contract.js';
import { WebjsDriver } from '../../src/drivers/webjs/driver.js';
import { StandInClient, msgKey, rawChat, rawContact, rawMessage, wid } from './webjs-standin.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'webjs-ops-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

const ALICE = '491511234567@c.us';
const GROUP = '120363000000000001@g.us';
const MINE = 'true_491511234567@c.us_3EB0MINE';
const THEIRS = 'false_491511234567@c.us_3EB0THEIRS';
const PHOTO = 'false_491511234567@c.us_3EB0PHOTO';

let client: StandInClient;
let driver: WebjsDriver;

async function rejection(p: Promise<unknown>): Promise<DriverError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof DriverError, `expected a DriverError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a rejection');
}

afterEach(() => driver.destroy());

beforeEach(async () => {
  driver = new WebjsDriver({
    instanceId: 'ops-1',
    dataDir,
    callTimeoutMs: 1000,
    clock: simulatedClock(),
    clientFactory: (options) => (client = new StandInClient(options)),
  });
  await driver.initialize();
  client.emit('ready');
  const mine = client.message(rawMessage({ id: msgKey(true, ALICE, '3EB0MINE'), from: '491609876543@c.us', to: ALICE, body: 'typo' }));
  const theirs = client.message(rawMessage({ id: msgKey(false, ALICE, '3EB0THEIRS') }));
  const photo = client.message(
    rawMessage({ id: msgKey(false, ALICE, '3EB0PHOTO'), type: 'image', directPath: '/v/x', mimetype: 'image/png', size: 8, caption: '' }),
  );
  for (const m of [mine, theirs, photo]) client.messages.set(m.id._serialized, m);
  client.chats.set(ALICE, client.chat(rawChat(), [theirs, mine]));
  client.chats.set(
    GROUP,
    client.chat(
      rawChat({
        id: wid(GROUP),
        formattedTitle: 'Team',
        isGroup: true,
        groupMetadata: {
          owner: wid('491609876543@c.us'),
          desc: 'Our team',
          participants: [
            { id: wid('491609876543@c.us'), isAdmin: true, isSuperAdmin: true },
            { id: wid('123456789012345@lid'), isAdmin: false, isSuperAdmin: false },
          ],
        },
      }),
    ),
  );
  client.chats.set('1234567890@newsletter', client.chat(rawChat({ id: wid('1234567890@newsletter'), formattedTitle: 'Channel' })));
});

describe('interactions', () => {
  test('react, edit, delete go through the library Message', async () => {
    await driver.react(THEIRS, '👍');
    await driver.react(THEIRS, '');
    assert.deepEqual(client.callsOf('message.react'), [[THEIRS, '👍'], [THEIRS, '']]);

    const edited = await driver.editMessage(MINE, 'fixed', { linkPreview: false, mentions: [ALICE] });
    assert.equal(edited?.body, 'fixed');
    assert.deepEqual(client.callsOf('message.edit'), [[MINE, 'fixed', { linkPreview: false, mentions: [ALICE] }]]);
    assert.equal(await driver.editMessage(THEIRS, 'nope', {}), null, 'not ours: the library answers null');

    await driver.deleteMessage(MINE, true);
    await driver.deleteMessage(THEIRS, false);
    assert.deepEqual(client.callsOf('message.delete'), [[MINE, true], [THEIRS, false]]);
    // a contact's message cannot be revoked: the library would delete it for us alone, silently; refused first
    const refused = await rejection(driver.deleteMessage(THEIRS, true));
    assert.deepEqual([refused.code, refused.provablyNotSent], ['INVALID_INPUT', true]);
    assert.deepEqual(client.callsOf('message.delete'), [[MINE, true], [THEIRS, false]], 'nothing deleted');
  });

  test('an unknown message is NOT_FOUND', async () => {
    for (const p of [driver.react('false_491511234567@c.us_NOPE', '👍'), driver.deleteMessage('false_491511234567@c.us_NOPE', true)]) {
      assert.equal((await rejection(p)).code, 'NOT_FOUND');
    }
    assert.equal((await rejection(driver.react('garbage', '👍'))).code, 'INVALID_INPUT');
  });

  test('seen through the client; typing, recording and clear through the chat', async () => {
    assert.equal(await driver.sendSeen(ALICE), true);
    await driver.sendStateTyping(ALICE);
    await driver.sendStateRecording(GROUP);
    await driver.clearState(ALICE);
    assert.deepEqual(client.callsOf('sendSeen'), [[ALICE]]);
    assert.deepEqual(client.callsOf('chat.sendStateTyping'), [[ALICE]]);
    assert.deepEqual(client.callsOf('chat.sendStateRecording'), [[GROUP]]);
    assert.deepEqual(client.callsOf('chat.clearState'), [[ALICE]]);
    assert.equal((await rejection(driver.sendStateTyping('491700000000@c.us'))).code, 'NOT_FOUND');
  });
});

describe('reads', () => {
  test('getChats: person and group chats as plain data, channels left out', async () => {
    const chats = await driver.getChats();
    assert.deepEqual(
      chats.map((c) => [c.id, c.name, c.isGroup]),
      [
        [ALICE, 'Alice', false],
        [GROUP, 'Team', true],
      ],
    );
  });

  test('getChatById: a chat or null', async () => {
    assert.equal((await driver.getChatById(ALICE))?.unreadCount, 2);
    assert.equal(await driver.getChatById('491700000000@c.us'), null);
  });

  test('fetchMessages passes limit and fromMe to the library chat', async () => {
    const messages = await driver.fetchMessages(ALICE, { limit: 50, fromMe: true });
    assert.deepEqual(messages.map((m) => m.id._serialized), [THEIRS, MINE]);
    await driver.fetchMessages(ALICE, { limit: 10 });
    assert.deepEqual(client.callsOf('chat.fetchMessages'), [[ALICE, { limit: 50, fromMe: true }], [ALICE, { limit: 10 }]]);
    assert.equal((await rejection(driver.fetchMessages('491700000000@c.us', { limit: 5 }))).code, 'NOT_FOUND');
  });

  test('getMessageById, downloadMedia', async () => {
    assert.equal((await driver.getMessageById(MINE))?.fromMe, true);
    assert.equal(await driver.getMessageById('false_491511234567@c.us_NOPE'), null);
    assert.deepEqual(await driver.downloadMedia(PHOTO), { mimetype: 'image/png', data: 'iVBORw0KGgo=', filename: 'a.png', filesize: 8 });
    assert.equal(await driver.downloadMedia(THEIRS), null, 'no media');
    assert.deepEqual(client.callsOf('message.downloadMedia'), [[PHOTO]]);
  });

  test('getContactById: the Contact fields DESIGN.md chose', async () => {
    client.contacts.set(ALICE, client.contact(rawContact({ isBusiness: true })));
    assert.deepEqual(await driver.getContactById(ALICE), {
      id: ALICE,
      number: '491511234567',
      name: 'Alice A.',
      pushname: 'Alice',
      shortName: 'Alice',
      isBusiness: true,
      isEnterprise: false,
      isMyContact: true,
      isBlocked: false,
      isGroup: false,
      isUser: true,
      isWAContact: true,
    });
  });

  test('getProfilePicUrl: the URL, or null when hidden', async () => {
    assert.equal(await driver.getProfilePicUrl(ALICE), null);
    client.profilePic = 'https://pps.whatsapp.net/v/t61/abc.jpg';
    assert.equal(await driver.getProfilePicUrl(ALICE), 'https://pps.whatsapp.net/v/t61/abc.jpg');
  });

  test('getNumberId: the registered id or null', async () => {
    assert.equal(await driver.getNumberId('491511234567'), ALICE);
    assert.equal(await driver.getNumberId('491700000000'), null);
    assert.equal((await rejection(driver.getNumberId('+49 (151)'))).code, 'INVALID_INPUT');
  });
});

describe('groups', () => {
  test('createGroup: gid and the participants the network did not add', async () => {
    const result = await driver.createGroup('Team', [ALICE, '491700000000@c.us'], { messageTimer: 86400, isAnnounce: true, bogus: 1 });
    assert.deepEqual(result, {
      gid: '120363000000000001@g.us',
      title: 'Team',
      missingParticipants: { '491700000000@c.us': { code: 403, message: 'invite only' } },
    });
    assert.deepEqual(client.callsOf('createGroup'), [['Team', [ALICE, '491700000000@c.us'], { messageTimer: 86400, isAnnounce: true }]]);
  });

  test('createGroup answered with the library error string: unknown outcome', async () => {
    client.createGroupWith = async () => 'CreateGroupError: An unknown error occupied while creating a group';
    const err = await rejection(driver.createGroup('Team', [ALICE], {}));
    assert.equal(err.code, 'CALL_FAILED');
    assert.equal(err.provablyNotSent, false);
  });

  test('getGroup: owner, description, participants (ids as given)', async () => {
    const group = await driver.getGroup(GROUP);
    assert.equal(group?.owner, '491609876543@c.us');
    assert.equal(group?.description, 'Our team');
    assert.deepEqual(group?.participants, [
      { id: '491609876543@c.us', isAdmin: true, isSuperAdmin: true },
      { id: '123456789012345@lid', isAdmin: false, isSuperAdmin: false },
    ]);
    assert.equal(await driver.getGroup('120363999999999999@g.us'), null);
  });

  test('a person chat is NOT_A_GROUP', async () => {
    assert.equal((await rejection(driver.getGroup(ALICE))).code, 'NOT_A_GROUP');
    assert.equal((await rejection(driver.leaveGroup(ALICE))).code, 'NOT_A_GROUP');
  });

  test('participants: add (per-id result), remove, promote, demote', async () => {
    assert.deepEqual(await driver.addParticipants(GROUP, [ALICE, '491700000000@c.us']), {
      [ALICE]: { code: 200, message: 'The participant was added successfully' },
      '491700000000@c.us': { code: 403, message: 'The participant can be added by sending private invitation only' },
    });
    await driver.removeParticipants(GROUP, [ALICE]);
    await driver.promoteParticipants(GROUP, ['123456789012345@lid']);
    await driver.demoteParticipants(GROUP, ['123456789012345@lid']);
    assert.deepEqual(client.callsOf('chat.removeParticipants'), [[GROUP, [ALICE]]]);
    assert.deepEqual(client.callsOf('chat.promoteParticipants'), [[GROUP, ['123456789012345@lid']]]);
    assert.deepEqual(client.callsOf('chat.demoteParticipants'), [[GROUP, ['123456789012345@lid']]]);
  });

  test('addParticipants answered with the library error string: refused', async () => {
    client.addParticipantsResult = 'AddParticipantsError: You have no admin rights to add a participant to a group';
    const err = await rejection(driver.addParticipants(GROUP, [ALICE]));
    assert.match(err.message, /no admin rights/);
  });

  test('invite code, revoke, leave, subject, description', async () => {
    assert.equal(await driver.getInviteCode(GROUP), 'InViTeCoDe1');
    assert.equal(await driver.revokeInvite(GROUP), 'NeWcOdE2');
    await driver.setSubject(GROUP, 'New name');
    await driver.setDescription(GROUP, 'New text');
    await driver.leaveGroup(GROUP);
    assert.deepEqual(client.callsOf('group.setSubject'), [[GROUP, 'New name']]);
    assert.deepEqual(client.callsOf('group.setDescription'), [[GROUP, 'New text']]);
    assert.deepEqual(client.callsOf('group.leave'), [[GROUP]]);
    client.groupInfoAccepted = false;
    assert.equal((await rejection(driver.setSubject(GROUP, 'x'))).code, 'CALL_FAILED');
  });
});

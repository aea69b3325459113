import { test, describe, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { create, StructError } from 'superstruct';
import { simulatedClock } from '../../src/clock.js';
import { InteractionLimiter } from '../../src/http/rate-limit.js';
import { groupsRouter, GroupCreateSchema } from '../../src/http/routes/groups.js';
import { MiniNetwork, TestPort, serve, request, ME, type Served } from './routes-harness.js';

const GROUP = '120363000000000001@g.us';
const ALICE = '4915111111111@c.us';
const BOB = '4915122222222@c.us';
const CAROL = '4915133333333@c.us';
const UNREGISTERED = '4915144444444@c.us';
const enc = encodeURIComponent;

/** Every group route but creation, each with a valid body. */
const ROUTES: { method: string; path: (g: string) => string; body?: unknown }[] = [
  { method: 'POST', path: (g) => `/api/v2/groups/${enc(g)}/participants`, body: { participants: [CAROL] } },
  { method: 'DELETE', path: (g) => `/api/v2/groups/${enc(g)}/participants`, body: { participants: [CAROL] } },
  { method: 'POST', path: (g) => `/api/v2/groups/${enc(g)}/admins`, body: { participants: [ALICE] } },
  { method: 'DELETE', path: (g) => `/api/v2/groups/${enc(g)}/admins`, body: { participants: [ALICE] } },
  { method: 'GET', path: (g) => `/api/v2/groups/${enc(g)}/invite` },
  { method: 'POST', path: (g) => `/api/v2/groups/${enc(g)}/invite/revoke` },
  { method: 'POST', path: (g) => `/api/v2/groups/${enc(g)}/leave` },
  { method: 'PATCH', path: (g) => `/api/v2/groups/${enc(g)}`, body: { subject: 'New name' } },
];
const MUTATIONS = ['addParticipants', 'removeParticipants', 'promoteParticipants', 'demoteParticipants', 'getInviteCode', 'revokeInvite', 'leaveGroup', 'setSubject', 'setDescription'];

describe('group routes over HTTP', () => {
  const clock = simulatedClock();
  const net = new MiniNetwork(clock);
  const port = new TestPort('inst-g', net, clock);
  const limiter = new InteractionLimiter(clock, { points: 10_000 });
  let srv: Served;

  before(async () => {
    net.addChat({ id: ALICE });
    for (const c of [ALICE, BOB, CAROL]) net.addContact(c, null);
    srv = await serve([groupsRouter({ portOf: () => port, limiter })]);
  });
  after(() => srv.close());
  beforeEach(() => {
    net.groups.clear();
    net.addGroup(GROUP, [ALICE, BOB]);
    port.connected = true;
  });

  const members = () => net.groups.get(GROUP)?.participants.map((p) => p.id) ?? [];

  test('POST participants → {groupId, added, failed:{id:{code,message}}}', async () => {
    const r = await request(srv.url, 'POST', `/api/v2/groups/${enc(GROUP)}/participants`, {
      participants: [CAROL, BOB, UNREGISTERED, CAROL],
      options: { autoSendInviteV4: false },
    });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, {
      success: true,
      data: {
        groupId: GROUP,
        added: [CAROL],
        failed: {
          [BOB]: { code: 409, message: 'already a participant' },
          [UNREGISTERED]: { code: 404, message: 'not on the network' },
        },
      },
    });
    assert.ok(members().includes(CAROL));
  });

  test('DELETE participants → {groupId, removed}', async () => {
    const r = await request(srv.url, 'DELETE', `/api/v2/groups/${enc(GROUP)}/participants`, { participants: [BOB] });
    assert.deepEqual(r.body, { success: true, data: { groupId: GROUP, removed: [BOB] } });
    assert.deepEqual(members(), [ME, ALICE]);
  });

  test('POST/DELETE admins → {groupId, promoted} / {groupId, demoted}', async () => {
    let r = await request(srv.url, 'POST', `/api/v2/groups/${enc(GROUP)}/admins`, { participants: [ALICE] });
    assert.deepEqual(r.body, { success: true, data: { groupId: GROUP, promoted: [ALICE] } });
    assert.equal(net.groups.get(GROUP)?.participants.find((p) => p.id === ALICE)?.isAdmin, true);
    r = await request(srv.url, 'DELETE', `/api/v2/groups/${enc(GROUP)}/admins`, { participants: [ALICE] });
    assert.deepEqual(r.body, { success: true, data: { groupId: GROUP, demoted: [ALICE] } });
    assert.equal(net.groups.get(GROUP)?.participants.find((p) => p.id === ALICE)?.isAdmin, false);
  });

  test('GET invite → {code, url}; POST invite/revoke → {code} of the new code', async () => {
    let r = await request(srv.url, 'GET', `/api/v2/groups/${enc(GROUP)}/invite`);
    const code = net.invites.get(GROUP);
    assert.deepEqual(r.body, { success: true, data: { code, url: `https://chat.whatsapp.com/${code}` } });
    r = await request(srv.url, 'POST', `/api/v2/groups/${enc(GROUP)}/invite/revoke`);
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body.data ?? {}), ['code']);
    assert.notEqual(r.body.data?.code, code);
    assert.equal(r.body.data?.code, net.invites.get(GROUP));
  });

  test('POST leave → {groupId, left:true}', async () => {
    const r = await request(srv.url, 'POST', `/api/v2/groups/${enc(GROUP)}/leave`);
    assert.deepEqual(r.body, { success: true, data: { groupId: GROUP, left: true } });
    assert.ok(!members().includes(ME));
  });

  test('PATCH subject and/or description → {groupId, subject?, description?}; neither → 400', async () => {
    let r = await request(srv.url, 'PATCH', `/api/v2/groups/${enc(GROUP)}`, { subject: 'Renamed' });
    assert.deepEqual(r.body, { success: true, data: { groupId: GROUP, subject: 'Renamed' } });
    assert.equal(net.groups.get(GROUP)?.name, 'Renamed');
    r = await request(srv.url, 'PATCH', `/api/v2/groups/${enc(GROUP)}`, { description: 'About us' });
    assert.deepEqual(r.body, { success: true, data: { groupId: GROUP, description: 'About us' } });
    r = await request(srv.url, 'PATCH', `/api/v2/groups/${enc(GROUP)}`, { subject: 'Both', description: '' });
    assert.deepEqual(r.body, { success: true, data: { groupId: GROUP, subject: 'Both', description: '' } });
    assert.equal(net.groups.get(GROUP)?.description, '');
    r = await request(srv.url, 'PATCH', `/api/v2/groups/${enc(GROUP)}`, {});
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.data, { field: 'subject' });
    r = await request(srv.url, 'PATCH', `/api/v2/groups/${enc(GROUP)}`, { subject: '   ' });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.data, { field: 'subject' });
  });

  test('participant ids must be @c.us or @lid ids; the list must not be empty', async () => {
    for (const [participants, field] of [
      [[], 'participants'],
      [['4915111111111'], 'participants.0'],
      [[ALICE, GROUP], 'participants.1'],
      ['4915111111111@c.us', 'participants'],
    ] as const) {
      const r = await request(srv.url, 'POST', `/api/v2/groups/${enc(GROUP)}/admins`, { participants });
      assert.equal(r.status, 400, JSON.stringify(participants));
      assert.deepEqual(r.body.data, { field }, JSON.stringify(participants));
    }
    const r = await request(srv.url, 'POST', `/api/v2/groups/${enc(GROUP)}/admins`, { participants: ['123456789012345@lid'] });
    assert.equal(r.status, 200);
  });

  test('NOT_A_GROUP on every group route: a person id, an unknown @g.us id, and a non-group chat', async () => {
    net.addChat({ id: '4915155555555@g.us', isGroup: false }); // a chat the network does not know as a group
    for (const target of [ALICE, '120363999999999999@g.us', '4915155555555@g.us']) {
      const before = MUTATIONS.map((m) => net.count(m));
      for (const route of ROUTES) {
        const r = await request(srv.url, route.method, route.path(target), route.body);
        assert.equal(r.status, 400, `${route.method} ${route.path(target)}`);
        assert.equal(r.body.code, 'NOT_A_GROUP', `${route.method} ${route.path(target)}`);
        assert.deepEqual(r.body.data, { groupId: target });
      }
      assert.deepEqual(MUTATIONS.map((m) => net.count(m)), before, 'nothing reached the network for a non-group');
    }
    // an id that cannot be a group is refused without asking the network at all
    const lookups = net.count('getGroup');
    for (const route of ROUTES) await request(srv.url, route.method, route.path(ALICE), route.body);
    assert.equal(net.count('getGroup'), lookups);
    // and the same routes succeed on the real group
    for (const route of ROUTES) {
      const r = await request(srv.url, route.method, route.path(GROUP), route.body);
      assert.equal(r.status, 200, `${route.method} ${route.path(GROUP)}`);
    }
  });

  test('offline → 503 INSTANCE_OFFLINE; a failing call → 500 WA_CALL_FAILED', async () => {
    port.connected = false;
    let r = await request(srv.url, 'GET', `/api/v2/groups/${enc(GROUP)}/invite`);
    assert.equal(r.status, 503);
    assert.equal(r.body.code, 'INSTANCE_OFFLINE');
    port.connected = true;
    net.failing.add('leaveGroup');
    r = await request(srv.url, 'POST', `/api/v2/groups/${enc(GROUP)}/leave`);
    assert.equal(r.status, 500);
    assert.equal(r.body.code, 'WA_CALL_FAILED');
    net.failing.clear();
  });
});

describe('GroupCreateSchema (the body of POST /api/v2/groups, for the queue route)', () => {
  const fieldOf = (value: unknown): string | null => {
    try {
      create(value, GroupCreateSchema);
      return null;
    } catch (err) {
      assert.ok(err instanceof StructError);
      return err.path.join('.');
    }
  };

  test('accepts title, participants and options', () => {
    const v = create({ title: 'Team', participants: [ALICE, '123456789012345@lid'], options: { memberAddMode: true } }, GroupCreateSchema);
    assert.equal(v.title, 'Team');
    assert.equal(fieldOf({ title: 'x'.repeat(100), participants: [ALICE] }), null);
  });

  test('refuses a blank or long title, empty or malformed participants, a non-object options, unknown keys', () => {
    assert.equal(fieldOf({ participants: [ALICE] }), 'title');
    assert.equal(fieldOf({ title: '  ', participants: [ALICE] }), 'title');
    assert.equal(fieldOf({ title: 'x'.repeat(101), participants: [ALICE] }), 'title');
    assert.equal(fieldOf({ title: 'T', participants: [] }), 'participants');
    assert.equal(fieldOf({ title: 'T', participants: [GROUP] }), 'participants.0');
    assert.equal(fieldOf({ title: 'T', participants: [ALICE], options: 'x' }), 'options');
    assert.equal(fieldOf({ title: 'T', participants: [ALICE], extra: 1 }), 'extra');
  });
});

/**
 * The sandbox as its own process: the remote driver over HTTP RPC + server-sent events, the control API as
 * the other people, and the ledger surviving a gateway-side process that is SIGKILLed mid-send.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { simulatedClock } from '../../src/clock.js';
import { DriverError, networkUnreachable } from '../../src/drivers/contract.js';
import { SandboxDriver } from '../../src/drivers/sandbox/driver.js';
import { RemoteSandboxApi } from '../../src/drivers/sandbox/remote.js';
import type { SandboxEvent } from '../../src/drivers/sandbox/api.js';
import { startSandboxServer, type SandboxServer } from '../../src/http/sandbox-server.js';
import type { LedgerEntry } from '../../src/sandbox/types.js';
import { next } from '../helpers/driver-events.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ME = '4915100000001';
const ALICE = '4917600000042';
const BOB = '4917600000043';


async function http(server: SandboxServer, method: string, p: string, body?: unknown): Promise<{ status: number; data: Record<string, unknown>; json: Record<string, unknown> }> {
  const res = await fetch(`${server.url}/sandbox/v1${p}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  return { status: res.status, json, data: (json.data ?? {}) as Record<string, unknown> };
}

async function ledgerOf(server: SandboxServer, instanceId: string): Promise<LedgerEntry[]> {
  const r = await http(server, 'GET', `/instances/${instanceId}/ledger`);
  assert.equal(r.status, 200);
  return r.data.items as LedgerEntry[];
}

describe('remote sandbox driver and control API over HTTP', () => {
  const clock = simulatedClock();
  let server: SandboxServer;
  let api: RemoteSandboxApi;
  let d: SandboxDriver;

  before(async () => {
    server = await startSandboxServer({ port: 0, clock });
    api = new RemoteSandboxApi(server.url);
    await http(server, 'PUT', `/accounts/${ALICE}`, { pushname: 'Alice' });
    await http(server, 'POST', '/instances/inst-remote/link', { phoneNumber: ME });
    d = new SandboxDriver({ instanceId: 'inst-remote', api, clock });
    const ready = next(d, 'ready');
    await d.initialize();
    await ready;
  });

  after(async () => {
    await d.destroy();
    api.close();
    await server.close();
  });

  test('text and media sent over RPC reach the recipient’s chat (read through the control API, sha256 checked)', async () => {
    const r = await d.sendMessage(`${ALICE}@c.us`, { kind: 'text', body: 'over the wire' }, {});
    assert.match(r.id ?? '', /^true_4917600000042@c\.us_3EB0/);
    const bytes = randomBytes(3000);
    const sha = createHash('sha256').update(bytes).digest('hex');
    await d.sendMessage(`${ALICE}@c.us`, { kind: 'media', media: { mimetype: 'video/mp4', data: bytes.toString('base64'), filename: 'clip.mp4' }, caption: 'clip' }, { sendVideoAsGif: true });
    const chat = await http(server, 'GET', `/accounts/${ALICE}/chats/${ME}@c.us/messages`);
    const items = chat.data.items as { type: string; body: string; fromMe: boolean; mediaSha256: string | null; mediaInfo: unknown }[];
    assert.deepEqual(items.map((m) => [m.type, m.body, m.fromMe]), [['chat', 'over the wire', false], ['video', 'clip', false]]);
    assert.equal(items[1]?.mediaSha256, sha);
    assert.deepEqual(items[1]?.mediaInfo, { mimetype: 'video/mp4', filename: 'clip.mp4', size: 3000 });
    const ledger = await ledgerOf(server, 'inst-remote');
    assert.equal(ledger[0]?.messageId, r.id);
    assert.equal(ledger[1]?.media?.sha256, sha);
    assert.equal(ledger[1]?.media?.isGif, true);
  });

  test('an incoming message posted to the control API raises message on the remote driver', async () => {
    const got = next(d, 'message');
    const posted = await http(server, 'POST', '/instances/inst-remote/messages', { from: `+${BOB}`, body: 'Do you deliver?' });
    assert.equal(posted.status, 201);
    const [m] = await got;
    assert.equal(m.id._serialized, posted.data.messageId);
    assert.equal(m.from, `${BOB}@c.us`);
    assert.equal(m.to, `${ME}@c.us`);
    assert.equal(m.body, 'Do you deliver?');
    assert.equal(m.type, 'chat');
    assert.equal(m.fromMe, false);
    assert.equal(m.deviceType, 'android');
    // the instance replies quoting it
    const reply = await d.sendMessage(`${BOB}@c.us`, { kind: 'text', body: 'Yes!' }, { quotedMessageId: m.id._serialized });
    assert.equal((await d.getMessageById(reply.id ?? ''))?.hasQuotedMsg, true);
  });

  test('votes, reactions, edits, revokes, calls and groups from the control API arrive as events', async () => {
    const poll = await d.sendMessage(`${ALICE}@c.us`, { kind: 'poll', poll: { pollName: 'When?', pollOptions: ['Mon', 'Tue'], options: { allowMultipleAnswers: false } } }, {});
    const vote = next(d, 'vote_update');
    assert.equal((await http(server, 'POST', `/instances/inst-remote/messages/${poll.id}/vote`, { from: ALICE, selectedOptions: ['Tue'] })).status, 200);
    assert.deepEqual((await vote)[0].selectedOptions, [{ name: 'Tue', localId: 1 }]);
    const tooMany = await http(server, 'POST', `/instances/inst-remote/messages/${poll.id}/vote`, { from: ALICE, selectedOptions: ['Mon', 'Tue'] });
    assert.equal(tooMany.status, 400);

    const reaction = next(d, 'message_reaction');
    await http(server, 'POST', `/instances/inst-remote/messages/${poll.id}/reaction`, { from: ALICE, emoji: '🎉' });
    assert.equal((await reaction)[0].reaction, '🎉');

    const inbound = await http(server, 'POST', '/instances/inst-remote/messages', { from: ALICE, body: 'helo' });
    const edit = next(d, 'message_edit');
    await http(server, 'POST', `/instances/inst-remote/messages/${String(inbound.data.messageId)}/edit`, { body: 'hello' });
    assert.deepEqual((await edit).slice(1), ['hello', 'helo']);
    const revoke = next(d, 'message_revoke_everyone');
    await http(server, 'POST', `/instances/inst-remote/messages/${String(inbound.data.messageId)}/revoke`, {});
    assert.equal((await revoke)[0].type, 'revoked');

    const call = next(d, 'call');
    const started = await http(server, 'POST', '/instances/inst-remote/calls', { from: BOB });
    assert.equal((await call)[0].id, started.data.callId);

    const join = next(d, 'group_join');
    const group = await http(server, 'POST', '/instances/inst-remote/groups', { from: ALICE, title: 'Neighbours', participants: [BOB] });
    assert.equal(group.status, 201);
    const [n] = await join;
    assert.equal(n.chatId, group.data.groupId);
    assert.deepEqual(n.recipientIds.sort(), [`${ALICE}@c.us`, `${BOB}@c.us`, `${ME}@c.us`].sort());
    const inGroup = next(d, 'message');
    await http(server, 'POST', '/instances/inst-remote/messages', { from: BOB, groupId: group.data.groupId, body: 'hi all' });
    const [gm] = await inGroup;
    assert.equal(gm.from, group.data.groupId);
    assert.equal(gm.author, `${BOB}@c.us`);
    const admin = next(d, 'group_admin_changed');
    await http(server, 'POST', `/groups/${String(group.data.groupId)}/participants`, { by: ALICE, promote: [ME] });
    assert.equal((await admin)[0].type, 'promote');
    assert.equal((await d.getGroup(String(group.data.groupId)))?.participants.find((p) => p.id === `${ME}@c.us`)?.isAdmin, true);
  });

  test('faults set through the control API: no_id, registration, hang released on destroy, crash', async () => {
    await http(server, 'POST', '/instances/inst-remote/faults', { kind: 'no_id' });
    const noId = await d.sendMessage(`${ALICE}@c.us`, { kind: 'text', body: 'no id' }, {});
    assert.equal(noId.id, undefined);
    assert.equal(typeof noId.timestamp, 'number');

    await http(server, 'PUT', `/accounts/${BOB}`, { registered: false });
    await assert.rejects(d.sendMessage(`${BOB}@c.us`, { kind: 'text', body: 'x' }, {}), (e: unknown) => e instanceof DriverError && e.code === 'NOT_REGISTERED' && e.provablyNotSent);
    await http(server, 'PUT', `/accounts/${BOB}`, { registered: true });

    await http(server, 'PUT', `/accounts/${ALICE}/fault`, { kind: 'call_error' });
    await assert.rejects(d.sendMessage(`${ALICE}@c.us`, { kind: 'text', body: 'x' }, {}), (e: unknown) => e instanceof DriverError && e.code === 'CALL_FAILED' && !e.provablyNotSent);
    await http(server, 'DELETE', `/accounts/${ALICE}/fault`);

    const pending = await http(server, 'POST', '/instances/inst-remote/faults', { kind: 'hang' });
    assert.deepEqual(pending.data.pendingFaults, [{ kind: 'hang' }]);
    const hung = d.sendMessage(`${ALICE}@c.us`, { kind: 'text', body: 'hang' }, {});
    const outcome = hung.then(() => 'resolved', (e: unknown) => (e instanceof DriverError ? `${e.code}/${e.provablyNotSent}` : 'other'));
    const created = new Promise<void>((resolve) => {
      const off = server.network.session('inst-remote').clients.subscribe((e: SandboxEvent) => {
        if (e.name === 'message_create' && e.args[0].body === 'hang') {
          off();
          resolve();
        }
      });
    });
    await created; // the network took it; the call hangs
    await d.destroy();
    assert.equal(await outcome, 'SESSION_CLOSED/false');

    const ready = next(d, 'ready');
    await d.initialize();
    await ready;
    const fatal = next(d, 'fatal');
    assert.equal((await http(server, 'POST', '/instances/inst-remote/fail', { kind: 'session_crash', reason: 'boom' })).status, 200);
    assert.deepEqual(await fatal, ['boom']);
    const ready2 = next(d, 'ready');
    await d.initialize();
    await ready2;
  });

  test('the rest of the control API: receipts, number change, battery, archive, fault queue, groups, accounts', async () => {
    const sent = await d.sendMessage(`${BOB}@c.us`, { kind: 'text', body: 'receipt please' }, {});
    const ack = next(d, 'message_ack');
    assert.equal((await http(server, 'POST', `/instances/inst-remote/messages/${sent.id}/ack`, { ack: 3 })).status, 200);
    assert.deepEqual((await ack)[1], 3);
    const notMine = await http(server, 'POST', '/instances/inst-remote/messages', { from: BOB, body: 'x' });
    assert.equal((await http(server, 'POST', `/instances/inst-remote/messages/${String(notMine.data.messageId)}/ack`, { ack: 3 })).status, 400);

    const changed = next(d, 'contact_changed');
    await http(server, 'POST', '/instances/inst-remote/contact-changed', { oldPhone: BOB, newPhone: '4917600000099' });
    assert.deepEqual((await changed).slice(1), [`${BOB}@c.us`, '4917600000099@c.us', true]);

    const battery = next(d, 'change_battery');
    await http(server, 'POST', '/instances/inst-remote/battery', { battery: 15, plugged: true });
    assert.deepEqual((await battery)[0], { battery: 15, plugged: true });
    assert.equal((await http(server, 'POST', '/instances/inst-remote/battery', { battery: 150, plugged: true })).status, 400);

    const archived = next(d, 'chat_archived');
    await http(server, 'POST', `/instances/inst-remote/chats/${BOB}@c.us/archive`, { archived: true });
    const [chat, curr, prev] = await archived;
    assert.deepEqual([chat.id, chat.archived, curr, prev], [`${BOB}@c.us`, true, true, false]);
    assert.equal((await d.getChatById(`${BOB}@c.us`))?.archived, true);

    await http(server, 'POST', '/instances/inst-remote/faults', { kind: 'call_error', on: 'any', count: 2 });
    assert.equal(((await http(server, 'GET', '/instances/inst-remote/faults')).data.pendingFaults as unknown[]).length, 2);
    await http(server, 'DELETE', '/instances/inst-remote/faults');
    assert.deepEqual((await http(server, 'GET', '/instances/inst-remote/faults')).data.pendingFaults, []);
    assert.equal((await d.getChats()).length > 0, true);

    const group = await http(server, 'POST', '/instances/inst-remote/groups', { from: ALICE, title: 'Book club', instanceAdmin: true });
    const gid = String(group.data.groupId);
    const update = next(d, 'group_update');
    await http(server, 'PATCH', `/groups/${gid}`, { by: ALICE, subject: 'Book club 2' });
    assert.equal((await update)[0].body, 'Book club 2');
    const leave = next(d, 'group_leave');
    await http(server, 'POST', `/groups/${gid}/leave`, { phone: ALICE });
    assert.equal((await leave)[0].author, `${ALICE}@c.us`);
    const info = await http(server, 'GET', `/groups/${gid}`);
    assert.equal(info.data.subject, 'Book club 2');
    assert.equal((await http(server, 'GET', '/groups/120363999999999999@g.us')).status, 404);

    const acct = await http(server, 'GET', '/accounts/4917612340000');
    assert.equal(acct.data.registered, false);
    assert.match(String(acct.data.lid), /^\d{15}@lid$/);
    const inst = await http(server, 'GET', '/instances/inst-remote');
    assert.equal(inst.data.phase, 'ready');
    assert.equal(inst.data.linkedPhone, ME);
  });

  test('malformed RPC calls are refused as INVALID_INPUT, never half-run', async () => {
    const res = await fetch(`${server.url}/rpc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ instanceId: 'inst-remote', clientId: 'test-client', method: 'sendMessage', args: [`${ALICE}@c.us`, { kind: 'text' }, {}] }) });
    const body = (await res.json()) as { ok: boolean; error: { code: string; message: string; provablyNotSent: boolean } };
    assert.equal(body.ok, false);
    assert.equal(body.error.code, 'INVALID_INPUT');
    assert.match(body.error.message, /^invalid arguments for sendMessage/);
    assert.equal(body.error.provablyNotSent, true);
    const unknown = await fetch(`${server.url}/rpc`, { method: 'POST', body: JSON.stringify({ instanceId: 'x', clientId: 'test-client', method: 'rm -rf', args: [] }) });
    assert.equal(((await unknown.json()) as { error: { code: string } }).error.code, 'INVALID_INPUT');
  });
});

describe('the ledger survives a SIGKILLed gateway process', () => {
  const clock = simulatedClock();
  const dir = mkdtempSync(path.join(tmpdir(), 'sandbox-crash-'));
  const statePath = path.join(dir, 'sandbox.json');
  let server: SandboxServer;

  before(async () => {
    server = await startSandboxServer({ port: 0, clock, statePath });
  });

  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a child process sends through the remote driver, is killed mid-send, and the network still has every message', async () => {
    await http(server, 'POST', '/instances/inst-crash/link', { phoneNumber: ME });
    await http(server, 'PUT', `/accounts/${BOB}/fault`, { kind: 'hang' }); // the 4th send will hang after the network took it

    const inFlight = new Promise<void>((resolve) => {
      const off = server.network.session('inst-crash').clients.subscribe((e: SandboxEvent) => {
        if (e.name === 'message_create' && e.args[0].body === 'in flight') {
          off();
          resolve();
        }
      });
    });

    const script = `
      const { RemoteSandboxApi } = await import('./src/drivers/sandbox/remote.ts');
      const { SandboxDriver } = await import('./src/drivers/sandbox/driver.ts');
      const d = new SandboxDriver({ instanceId: 'inst-crash', api: new RemoteSandboxApi(process.env.SANDBOX_URL) });
      const ready = new Promise((r) => d.on('ready', r));
      await d.initialize();
      await ready;
      for (let i = 1; i <= 3; i++) {
        const r = await d.sendMessage('${ALICE}@c.us', { kind: 'text', body: 'order ' + i }, {});
        process.stdout.write('sent ' + r.id + '\\n');
      }
      d.sendMessage('${BOB}@c.us', { kind: 'text', body: 'in flight' }, {}).catch(() => {});
      process.stdout.write('hanging\\n');
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      env: { ...process.env, SANDBOX_URL: server.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));
    const sentIds: string[] = [];
    const hanging = new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        if (line.startsWith('sent ')) sentIds.push(line.slice(5));
        if (line === 'hanging') resolve();
      });
      child.on('exit', () => reject(new Error(`child exited early: ${stderr}`)));
    });

    try {
      await hanging;
      await inFlight;
    } finally {
      // the kill under test, and the cleanup if anything above failed
      child.kill('SIGKILL');
    }
    assert.equal(await exited, 'SIGKILL');

    const ledger = await ledgerOf(server, 'inst-crash');
    assert.deepEqual(ledger.map((e) => [e.seq, e.body, e.fault]), [[1, 'order 1', null], [2, 'order 2', null], [3, 'order 3', null], [4, 'in flight', 'hang']]);
    assert.deepEqual(ledger.slice(0, 3).map((e) => e.messageId), sentIds);
    assert.ok(ledger.every((e) => e.from === ME && e.action === 'send'));

    // the network is unaffected: a new driver (a restarted gateway) finds the link and the chats, nothing re-sent
    const api = new RemoteSandboxApi(server.url);
    const d = new SandboxDriver({ instanceId: 'inst-crash', api });
    const ready = next(d, 'ready');
    await d.initialize();
    await ready;
    const chat = await d.fetchMessages(`${ALICE}@c.us`, { limit: 50 });
    assert.deepEqual(chat.map((m) => m.body), ['order 1', 'order 2', 'order 3']);
    await d.destroy();
    api.close();

    // and the sandbox's own restart keeps the ledger (state file)
    await server.close();
    server = await startSandboxServer({ port: 0, clock, statePath });
    assert.equal((await ledgerOf(server, 'inst-crash')).length, 4);
  });
});

describe('remote transport failures', () => {
  test('a network that goes away is a fatal session; an unreachable one is provably not sent', async () => {
    const clock = simulatedClock();
    const server = await startSandboxServer({ port: 0, clock });
    const api = new RemoteSandboxApi(server.url);
    await http(server, 'POST', '/instances/inst-gone/link', { phoneNumber: ME });
    const d = new SandboxDriver({ instanceId: 'inst-gone', api });
    const ready = next(d, 'ready');
    await d.initialize();
    await ready;
    const fatal = next(d, 'fatal');
    await server.close();
    assert.deepEqual(await fatal, ['the event stream closed']);
    assert.equal(d.browserHealth().alive, false);
    await assert.rejects(d.sendMessage(`${ALICE}@c.us`, { kind: 'text', body: 'x' }, {}), (e: unknown) => e instanceof DriverError && e.code === 'NOT_CONNECTED' && e.provablyNotSent);
    // every call opens its own connection, so a refused connect proves the request never reached a network
    await assert.rejects(api.call('inst-gone', 'sendMessage', [`${ALICE}@c.us`, { kind: 'text', body: 'x' }, {}]), (e: unknown) => e instanceof DriverError && e.code === 'CALL_FAILED' && e.provablyNotSent);
    // a start on a network that is not there: unreachable, which the instance backs off from without quarantine
    await assert.rejects(d.initialize(), (e: unknown) => e instanceof DriverError && e.code === 'CALL_FAILED' && e.provablyNotSent && networkUnreachable(e));
    api.close();
  });
});

test('an event the gateway cannot read loses the stream (the session reconnects) instead of ending the process', async () => {
  // the far side as the sandbox process writes it (src/sandbox/rpc-server.ts onEvents), then a line it cannot parse
  const streams = new Set<ServerResponse>();
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('event: hello\ndata: {}\n\n');
    streams.add(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const api = new RemoteSandboxApi(`http://127.0.0.1:${port}`);
  const got: SandboxEvent[] = [];
  let lostWith!: (reason: string) => void;
  const lost = new Promise<string>((resolve) => (lostWith = resolve));
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    await api.subscribe('inst-x', (e) => got.push(e), { onLost: (reason) => lostWith(reason) });
    const [res] = [...streams];
    assert.ok(res);
    res.write(`data: ${JSON.stringify({ name: 'message', args: [1] })}\n\ndata: {"name": "message", "args": [\n\n`);
    assert.equal(await lost, 'a malformed event from the sandbox network');
    assert.deepEqual(got, [{ name: 'message', args: [1] }], 'the event before it arrived');
    assert.deepEqual(uncaught, []);
    // the stream is closed from the gateway's side: the sandbox detaches that client
    await new Promise<void>((resolve) => (res.closed ? resolve() : res.on('close', () => resolve())));
  } finally {
    process.off('uncaughtException', onUncaught);
    api.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/**
 * Two drivers for one instance on one sandbox network (an instance moved from gateway A to gateway B while A
 * was paused): the driver that initialized last owns the session. The replaced one is told
 * `disconnected('CONFLICT')`, gets no more events, and is refused provably-not-sent; its destroy, logout or
 * closed event stream never stops the owner's session. Over real sockets (the sandbox server, two remote API
 * objects as two gateways) and in-process.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { simulatedClock } from '../../src/clock.js';
import { DriverError, type Driver, type DriverEventName } from '../../src/drivers/contract.js';
import { SandboxDriver } from '../../src/drivers/sandbox/driver.js';
import { inProcessSandboxApi } from '../../src/drivers/sandbox/in-process.js';
import { RemoteSandboxApi } from '../../src/drivers/sandbox/remote.js';
import { startSandboxServer, type SandboxServer } from '../../src/http/sandbox-server.js';
import { SandboxNetwork } from '../../src/sandbox/network.js';
import * as people from '../../src/sandbox/people.js';
import type { LedgerEntry } from '../../src/sandbox/types.js';
import { next } from '../helpers/driver-events.js';

const ME = '4915100000001';
const ALICE = '4917600000042';
const BOB = '4917600000043';
const text = (body: string) => ({ kind: 'text' as const, body });


/** Every event a driver raises, by name and first argument (when it is a string). */
function record(d: Driver): string[] {
  const seen: string[] = [];
  const names: DriverEventName[] = ['qr', 'code', 'authenticated', 'ready', 'disconnected', 'change_state', 'message', 'message_ack', 'fatal'];
  for (const name of names) {
    d.on(name, (...args: unknown[]) => void seen.push(typeof args[0] === 'string' && name !== 'qr' ? `${name}:${args[0]}` : name));
  }
  return seen;
}

const refusedUnsent = (e: unknown) => e instanceof DriverError && e.code === 'NOT_CONNECTED' && e.provablyNotSent;

/** Poll a condition on real I/O turns (a socket close reaching the server); no fixed sleep. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('takeover over the wire: two remote drivers, one sandbox server', () => {
  const clock = simulatedClock();
  const ID = 'inst-moved';
  let server: SandboxServer;
  let apiA: RemoteSandboxApi;
  let apiB: RemoteSandboxApi;
  let d1: SandboxDriver;
  let d2: SandboxDriver;
  let seen1: string[];
  let seen2: string[];

  async function control(method: string, p: string, body?: unknown): Promise<{ status: number; data: Record<string, unknown> }> {
    const res = await fetch(`${server.url}/sandbox/v1${p}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as { data?: Record<string, unknown> };
    return { status: res.status, data: json.data ?? {} };
  }

  /** One raw RPC as a given client (what a driver sends, without the driver's own local checks). */
  async function rpc(clientId: string, method: string, args: unknown[] = []): Promise<{ ok: boolean; error?: { code: string; provablyNotSent: boolean } }> {
    const res = await fetch(`${server.url}/rpc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ instanceId: ID, clientId, method, args }) });
    return (await res.json()) as { ok: boolean; error?: { code: string; provablyNotSent: boolean } };
  }

  const ledgerBodies = async () => ((await control('GET', `/instances/${ID}/ledger`)).data.items as LedgerEntry[]).map((e) => e.body);
  const session = () => server.network.session(ID);

  before(async () => {
    server = await startSandboxServer({ port: 0, clock });
    apiA = new RemoteSandboxApi(server.url); // gateway A
    apiB = new RemoteSandboxApi(server.url); // gateway B
    assert.equal((await control('POST', `/instances/${ID}/link`, { phoneNumber: ME })).status, 200);
    d1 = new SandboxDriver({ instanceId: ID, api: apiA, clock });
    d2 = new SandboxDriver({ instanceId: ID, api: apiB, clock });
    assert.notEqual(d1.clientId, d2.clientId);
    seen1 = record(d1);
    seen2 = record(d2);
    const ready = next(d1, 'ready');
    await d1.initialize();
    await ready;
    await d1.sendMessage(`${ALICE}@c.us`, text('from A'), {});
  });

  after(async () => {
    await d1.destroy();
    await d2.destroy();
    apiA.close();
    apiB.close();
    await server.close();
  });

  test('driver 2 initializes: driver 1 is told CONFLICT, driver 2 is ready on the persisted link without a QR', async () => {
    const replaced = next(d1, 'disconnected');
    const ready = next(d2, 'ready');
    await d2.initialize();
    assert.deepEqual(await replaced, ['CONFLICT']);
    await ready;
    assert.equal(session().clients.owner, d2.clientId);
    assert.equal(session().phase, 'ready');
    assert.equal(d2.info?.wid, `${ME}@c.us`);
    assert.ok(!seen2.includes('qr'), 'a persisted link needs no QR');
    assert.deepEqual(seen1.slice(seen1.indexOf('ready') + 1), ['change_state:CONFLICT', 'disconnected:CONFLICT']);
    assert.equal((await d2.sendMessage(`${ALICE}@c.us`, text('from B'), {})).id?.startsWith('true_'), true);
  });

  test('the replaced driver’s calls are refused provably-not-sent, and nothing it tries reaches the ledger', async () => {
    await assert.rejects(d1.sendMessage(`${ALICE}@c.us`, text('stale send'), {}), refusedUnsent);
    await assert.rejects(d1.getChats(), refusedUnsent);
    await assert.rejects(d1.requestPairingCode(ME), refusedUnsent);
    assert.equal(await d1.getState(), null);
    assert.equal(await d2.getState(), 'CONNECTED');
    assert.deepEqual(await ledgerBodies(), ['from A', 'from B']);
  });

  test('the replaced client’s destroy only detaches it; its logout is refused and the link stays', async () => {
    assert.deepEqual(await rpc(d1.clientId, 'destroy'), { ok: true, result: null });
    assert.equal(session().phase, 'ready');
    const logout = await rpc(d1.clientId, 'logout');
    assert.equal(logout.ok, false);
    assert.equal(logout.error?.code, 'NOT_CONNECTED');
    assert.equal(logout.error?.provablyNotSent, true);
    assert.equal((await control('GET', `/instances/${ID}`)).data.linkedPhone, ME);
    await d2.sendMessage(`${ALICE}@c.us`, text('after stale destroy'), {});
    assert.deepEqual(await ledgerBodies(), ['from A', 'from B', 'after stale destroy']);
  });

  test('events go to the owner only: an incoming message and an ack reach driver 2, never driver 1', async () => {
    const got = next(d2, 'message');
    const posted = await control('POST', `/instances/${ID}/messages`, { from: BOB, body: 'still there?' });
    assert.equal(posted.status, 201);
    assert.equal((await got)[0].body, 'still there?');
    const sent = await d2.sendMessage(`${BOB}@c.us`, text('yes'), {});
    const ack = next(d2, 'message_ack');
    await control('POST', `/instances/${ID}/messages/${sent.id}/ack`, { ack: 3 });
    assert.equal((await ack)[1], 3);
    // driver 1's stream is still open (it has not been destroyed), yet it heard nothing after its CONFLICT
    assert.equal(session().clients.streamsOf(d1.clientId), 1);
    assert.deepEqual(seen1.slice(seen1.indexOf('disconnected:CONFLICT') + 1), []);
  });

  test('driver 1 destroyed and its stream closed: driver 2’s session runs on', async () => {
    await d1.destroy();
    await until(() => session().clients.streamsOf(d1.clientId) === 0, 'the server to see driver 1’s stream close');
    assert.equal(session().phase, 'ready');
    await d2.sendMessage(`${ALICE}@c.us`, text('after stale stream closed'), {});
    assert.equal((await ledgerBodies()).at(-1), 'after stale stream closed');
    assert.deepEqual(seen1.slice(seen1.indexOf('disconnected:CONFLICT') + 1), []);
  });

  test('closing the owner’s stream stops the session; a later driver takes it up without a QR', async () => {
    const fatal = next(d2, 'fatal');
    apiB.close(); // gateway B goes away
    assert.deepEqual(await fatal, ['the event stream closed']);
    await until(() => session().phase === 'stopped', 'the owner’s stream close to stop the session');
    const apiC = new RemoteSandboxApi(server.url);
    const d3 = new SandboxDriver({ instanceId: ID, api: apiC, clock });
    const seen3 = record(d3);
    const ready = next(d3, 'ready');
    await d3.initialize();
    await ready;
    assert.ok(!seen3.includes('qr'));
    // the stopped owner was not running: it is not told anything, it already knows (fatal)
    assert.ok(!seen2.includes('disconnected:CONFLICT'));
    await d3.destroy();
    apiC.close();
  });

  test('a call or stream without a client id is refused as INVALID_INPUT', async () => {
    const res = await fetch(`${server.url}/rpc`, { method: 'POST', body: JSON.stringify({ instanceId: ID, method: 'getState', args: [] }) });
    const body = (await res.json()) as { ok: boolean; error: { code: string; provablyNotSent: boolean } };
    assert.deepEqual([body.ok, body.error.code, body.error.provablyNotSent], [false, 'INVALID_INPUT', true]);
    const stream = await fetch(`${server.url}/rpc/events?instanceId=${ID}`);
    assert.equal(stream.status, 400);
    assert.equal(((await stream.json()) as { error: { code: string } }).error.code, 'INVALID_INPUT');
  });
});

describe('takeover in-process: two drivers over one in-process network', () => {
  const clock = simulatedClock();
  const ID = 'inst-local';
  let net: SandboxNetwork;
  let d1: SandboxDriver;
  let d2: SandboxDriver;

  before(async () => {
    net = new SandboxNetwork({ clock });
    net.link(ID, { phoneNumber: ME });
    const api = inProcessSandboxApi(net);
    d1 = new SandboxDriver({ instanceId: ID, api, clock });
    d2 = new SandboxDriver({ instanceId: ID, api, clock });
    const ready = next(d1, 'ready');
    await d1.initialize();
    await ready;
  });

  after(async () => {
    await d1.destroy();
    await d2.destroy();
    net.close();
  });

  test('a call hanging on the replaced driver is released as outcome unknown; the new owner is ready', async () => {
    net.addNextCallFault(ID, { kind: 'hang' });
    const hung = d1.sendMessage(`${ALICE}@c.us`, text('hangs'), {}).then(
      () => 'resolved',
      (e: unknown) => (e instanceof DriverError ? `${e.code}/${e.provablyNotSent}` : 'other'),
    );
    await new Promise((r) => setImmediate(r));
    assert.equal(net.ledger(ID).length, 1); // the network took it
    const replaced = next(d1, 'disconnected');
    const ready = next(d2, 'ready');
    await d2.initialize();
    assert.deepEqual(await replaced, ['CONFLICT']);
    await ready;
    assert.equal(await hung, 'SESSION_CLOSED/false');
    await assert.rejects(d1.sendMessage(`${ALICE}@c.us`, text('stale'), {}), refusedUnsent);
  });

  test('the replaced driver’s destroy leaves the owner running; events reach the owner only', async () => {
    const seen1 = record(d1);
    await d1.destroy();
    assert.equal(net.session(ID).phase, 'ready');
    const got = next(d2, 'message');
    people.receiveMessage(net, ID, { from: BOB, type: 'text', body: 'hello' });
    assert.equal((await got)[0].body, 'hello');
    assert.deepEqual(seen1, []);
    await d2.sendMessage(`${BOB}@c.us`, text('hi'), {});
    assert.equal(net.ledger(ID).at(-1)?.body, 'hi');
  });

  test('the replaced driver initializing again takes the session back, as a second browser would', async () => {
    const replaced = next(d2, 'disconnected');
    const ready = next(d1, 'ready');
    await d1.initialize();
    assert.deepEqual(await replaced, ['CONFLICT']);
    await ready;
    await assert.rejects(d2.sendMessage(`${BOB}@c.us`, text('stale'), {}), refusedUnsent);
    await d1.sendMessage(`${BOB}@c.us`, text('back'), {});
    assert.equal(net.ledger(ID).at(-1)?.body, 'back');
  });

  test('the network’s own calls (no client id) are never refused as stale', async () => {
    const api = inProcessSandboxApi(net);
    assert.equal(await api.call(ID, 'getState', []), 'CONNECTED');
  });
});

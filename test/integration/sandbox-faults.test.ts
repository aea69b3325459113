/**
 * Every fault the sandbox can inject gives the outcome it names. The outcome is read the way the dispatcher
 * reads a driver call (src/drivers/contract.ts): an id is `confirmed`, no id `assumed`, a DriverError that
 * proves nothing left `failed`, any other error or the caller's own timeout `unknown`.
 */
import { test, describe, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { simulatedClock, sleep } from '../../src/clock.js';
import { DriverError, type SendResult } from '../../src/drivers/contract.js';
import { SandboxDriver } from '../../src/drivers/sandbox/driver.js';
import { inProcessSandboxApi } from '../../src/drivers/sandbox/in-process.js';
import { SandboxNetwork } from '../../src/sandbox/network.js';
import { next } from '../helpers/driver-events.js';

const ME = '4915100000001';
const ALICE = '4917600000042';
const NOBODY = '4917612340000';
const INSTANCE = 'inst-faults';
const CALL_TIMEOUT_MS = 60_000;

type Outcome = { kind: 'confirmed'; id: string } | { kind: 'assumed' } | { kind: 'failed'; code: string } | { kind: 'unknown'; why: string };

const clock = simulatedClock();

/** Race the call against the caller's own timeout on the simulated clock, and classify. */
async function outcomeOf(call: Promise<SendResult>): Promise<Outcome> {
  const timeout = sleep(clock, CALL_TIMEOUT_MS).then(() => 'timeout' as const);
  const settled = call.then(
    (r) => ({ r }),
    (e: unknown) => ({ e }),
  );
  // let the call settle if it can; only then move the clock past the timeout
  await new Promise((resolve) => setImmediate(resolve));
  clock.increment(CALL_TIMEOUT_MS);
  const first = await Promise.race([settled, timeout]);
  if (first === 'timeout') return { kind: 'unknown', why: 'timeout' };
  if ('r' in first) return first.r.id ? { kind: 'confirmed', id: first.r.id } : { kind: 'assumed' };
  const e = first.e;
  if (e instanceof DriverError && e.provablyNotSent) return { kind: 'failed', code: e.code };
  return { kind: 'unknown', why: e instanceof DriverError ? e.code : 'error' };
}


const text = (body: string) => ({ kind: 'text' as const, body });

describe('sandbox fault injection', () => {
  let net: SandboxNetwork;
  let d: SandboxDriver;
  const events: string[] = [];

  beforeEach(async () => {
    net = new SandboxNetwork({ clock });
    d = new SandboxDriver({ instanceId: INSTANCE, api: inProcessSandboxApi(net), autoLink: { phoneNumber: ME }, clock });
    events.length = 0;
    for (const e of ['fatal', 'disconnected', 'browser_health', 'ready'] as const) d.on(e, () => events.push(e));
    const ready = next(d, 'ready');
    await d.initialize();
    await ready;
    events.length = 0;
  });

  afterEach(async () => {
    await d.destroy();
    net.close();
  });

  const ledgerSize = () => net.ledger(INSTANCE).length;

  test('no fault: confirmed with an id', async () => {
    const o = await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('plain'), {}));
    assert.equal(o.kind, 'confirmed');
    assert.equal(ledgerSize(), 1);
  });

  test('recipient not registered (a number without account, an explicit unregistration, a fault): failed NOT_REGISTERED, nothing sent', async () => {
    assert.deepEqual(await outcomeOf(d.sendMessage(`${NOBODY}@c.us`, text('x'), {})), { kind: 'failed', code: 'NOT_REGISTERED' });
    net.setAccount(ALICE, { registered: false });
    assert.deepEqual(await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('x'), {})), { kind: 'failed', code: 'NOT_REGISTERED' });
    assert.equal(await d.getNumberId(ALICE), null);
    net.setAccount(ALICE, { registered: true });
    net.setAccountFault(ALICE, { kind: 'not_registered' });
    assert.deepEqual(await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('x'), {})), { kind: 'failed', code: 'NOT_REGISTERED' });
    net.setAccountFault(ALICE, null);
    net.addNextCallFault(INSTANCE, { kind: 'not_registered' });
    assert.deepEqual(await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('x'), {})), { kind: 'failed', code: 'NOT_REGISTERED' });
    assert.equal(ledgerSize(), 0);
    assert.equal(net.messages.inChat(ALICE, `${ME}@c.us`).length, 0);
  });

  test('send without id: assumed; the message did go out and the ledger says so', async () => {
    net.addNextCallFault(INSTANCE, { kind: 'no_id' });
    assert.deepEqual(await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('no id'), {})), { kind: 'assumed' });
    assert.equal(net.ledger(INSTANCE)[0]?.fault, 'no_id');
    assert.equal(net.messages.inChat(ALICE, `${ME}@c.us`).length, 1);
    // a next-call fault is used once
    assert.equal((await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('normal again'), {}))).kind, 'confirmed');
  });

  test('per-account no_id applies to every send to that account only', async () => {
    net.setAccountFault(ALICE, { kind: 'no_id' });
    assert.equal((await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('1'), {}))).kind, 'assumed');
    assert.equal((await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('2'), {}))).kind, 'assumed');
    assert.equal((await outcomeOf(d.sendMessage('4917600000043@c.us', text('3'), {}))).kind, 'confirmed');
  });

  test('hang: never resolves, the caller’s timeout makes it unknown; destroy releases it with SESSION_CLOSED', async () => {
    net.addNextCallFault(INSTANCE, { kind: 'hang' });
    const call = d.sendMessage(`${ALICE}@c.us`, text('into the void'), {});
    assert.deepEqual(await outcomeOf(call), { kind: 'unknown', why: 'timeout' });
    // the network did take it (the default for hang), which is exactly why the outcome must stay unknown
    assert.equal(net.ledger(INSTANCE)[0]?.fault, 'hang');
    const released = call.then(
      () => assert.fail('a hung call must not resolve'),
      (e: unknown) => e,
    );
    await d.destroy();
    const err = await released;
    assert.ok(err instanceof DriverError);
    assert.equal(err.code, 'SESSION_CLOSED');
    assert.equal(err.provablyNotSent, false);
  });

  test('hang without delivery leaves the ledger empty; the network side releases it when the session stops', async () => {
    net.addNextCallFault(INSTANCE, { kind: 'hang', deliver: false });
    const api = inProcessSandboxApi(net);
    // straight to the network, bypassing the driver's own release, to show the network frees it too
    const call = api.call(INSTANCE, 'sendMessage', [`${ALICE}@c.us`, text('never taken'), {}]);
    const released = call.then(
      () => 'resolved',
      (e: unknown) => (e instanceof DriverError ? e.code : 'other'),
    );
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(ledgerSize(), 0);
    await net.session(INSTANCE).destroy();
    assert.equal(await released, 'SESSION_CLOSED');
  });

  test('call error: unknown (CALL_FAILED, not provably unsent); with deliver the message is on the network', async () => {
    net.addNextCallFault(INSTANCE, { kind: 'call_error' });
    assert.deepEqual(await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('e1'), {})), { kind: 'unknown', why: 'CALL_FAILED' });
    assert.equal(ledgerSize(), 0);
    net.addNextCallFault(INSTANCE, { kind: 'call_error', deliver: true });
    assert.deepEqual(await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('e2'), {})), { kind: 'unknown', why: 'CALL_FAILED' });
    assert.equal(net.ledger(INSTANCE)[0]?.fault, 'call_error');
  });

  test('invalid input: failed INVALID_INPUT, provably not sent', async () => {
    net.addNextCallFault(INSTANCE, { kind: 'invalid_input' });
    assert.deepEqual(await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('bad'), {})), { kind: 'failed', code: 'INVALID_INPUT' });
    assert.equal(ledgerSize(), 0);
  });

  test('session crash: the call is unknown, fatal and disconnected fire, hung calls are released, re-initialize comes back ready', async () => {
    net.addNextCallFault(INSTANCE, { kind: 'hang' });
    const hung = d.sendMessage(`${ALICE}@c.us`, text('hung'), {}).catch((e: unknown) => e);
    net.addNextCallFault(INSTANCE, { kind: 'session_crash', reason: 'page crashed' });
    const fatal = next(d, 'fatal');
    assert.deepEqual(await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('crash'), {})), { kind: 'unknown', why: 'SESSION_CLOSED' });
    assert.deepEqual(await fatal, ['page crashed']);
    assert.deepEqual(events, ['fatal', 'disconnected']);
    const err = await hung;
    assert.ok(err instanceof DriverError && err.code === 'SESSION_CLOSED');
    assert.deepEqual(await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('after'), {})), { kind: 'failed', code: 'NOT_CONNECTED' });
    assert.equal(await d.getState(), null);
    const ready = next(d, 'ready');
    await d.initialize();
    await ready;
    assert.equal((await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('back'), {}))).kind, 'confirmed');
  });

  test('browser death: browser_health alive=false with a fail streak, then fatal', async () => {
    net.addNextCallFault(INSTANCE, { kind: 'browser_death' });
    const health = next(d, 'browser_health');
    assert.deepEqual(await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('x'), {})), { kind: 'unknown', why: 'SESSION_CLOSED' });
    const [h] = await health;
    assert.equal(h.alive, false);
    assert.equal(h.failStreak, 1);
    assert.deepEqual(events, ['browser_health', 'fatal']);
    assert.deepEqual(d.browserHealth(), h);
  });

  test('disconnect with a reason: disconnected(reason), the call is unknown, later calls are refused', async () => {
    net.addNextCallFault(INSTANCE, { kind: 'disconnect', reason: 'CONFLICT' });
    const disconnected = next(d, 'disconnected');
    assert.deepEqual(await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('x'), {})), { kind: 'unknown', why: 'NOT_CONNECTED' });
    assert.deepEqual(await disconnected, ['CONFLICT']);
    assert.equal(await d.getState(), 'TIMEOUT');
    assert.deepEqual(await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('y'), {})), { kind: 'failed', code: 'NOT_CONNECTED' });
  });

  test('immediate failures from the control side: crash, browser death, disconnect LOGOUT unlinks', async () => {
    const fatal = next(d, 'fatal');
    net.session(INSTANCE).crash('killed by test');
    assert.deepEqual(await fatal, ['killed by test']);
    await d.initialize();
    const gone = next(d, 'disconnected');
    net.session(INSTANCE).disconnect('LOGOUT');
    assert.deepEqual(await gone, ['LOGOUT']);
    assert.equal(d.info, null);
    assert.equal(net.session(INSTANCE).phone, null);
  });

  test('faults aimed at any call hit reads too; send-only faults wait for a send', async () => {
    net.addNextCallFault(INSTANCE, { kind: 'no_id', on: 'any' });
    net.addNextCallFault(INSTANCE, { kind: 'call_error', on: 'any' });
    await assert.rejects(d.getChats(), (e: unknown) => e instanceof DriverError && e.code === 'CALL_FAILED');
    assert.equal((await d.getChats()).length, 0);
    assert.equal((await outcomeOf(d.sendMessage(`${ALICE}@c.us`, text('x'), {}))).kind, 'assumed');
  });

  test('a send to the own number is refused by the driver before the network; the network itself would crash', async () => {
    assert.deepEqual(await outcomeOf(d.sendMessage(`${ME}@c.us`, text('me'), {})), { kind: 'failed', code: 'INVALID_INPUT' });
    assert.equal(events.length, 0);
    const fatal = next(d, 'fatal');
    const raw = inProcessSandboxApi(net).call(INSTANCE, 'sendMessage', [`${ME}@c.us`, text('me'), {}]);
    await assert.rejects(raw, (e: unknown) => e instanceof DriverError && e.code === 'SESSION_CLOSED');
    await fatal;
    assert.equal(ledgerSize(), 0);
  });
});

/**
 * The session actor (src/actors/session.ts) on a minimal in-test driver that implements the driver contract with
 * an EventEmitter: what reaches the parent machine, what reaches `onNetworkEvent`, the commands it obeys, and the
 * clean-up on stop. Then the real instance machine with `createSessionLogic` on simulated time.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { assign, createActor, setup, type AnyEventObject } from 'xstate';
import type {
  ClientInfo,
  Driver,
  DriverEventName,
  DriverEvents,
  DriverListener,
  DriverOptions,
  WireMessage,
} from '../../src/drivers/contract.js';
import { DriverError } from '../../src/drivers/contract.js';
import { DRIVER_EVENT_NAMES, createSessionLogic, sessionLogic, type DriverSessionInput } from '../../src/actors/session.js';
import { instanceMachine, instanceStatus } from '../../machines/instance.machine.js';
import { simulatedClock } from '../../src/clock.js';

const notUsed = (name: string) => () => Promise.reject(new Error(`${name} is not used by the session`));

/** Just enough driver: lifecycle calls are recorded and scriptable; the network is an EventEmitter. */
class TestDriver implements Driver {
  readonly kind = 'sandbox' as const;
  info: ClientInfo | null = null;
  readonly calls: string[] = [];
  initializeImpl: () => Promise<void> = () => Promise.resolve();
  destroyImpl: () => Promise<void> = () => Promise.resolve();
  logoutImpl: () => Promise<void> = () => Promise.resolve();
  private readonly emitter = new EventEmitter();

  constructor(readonly options?: DriverOptions) {}

  listenersAtInitialize = -1;

  initialize() {
    this.calls.push('initialize');
    this.listenersAtInitialize = this.listeners();
    return this.initializeImpl();
  }
  destroy() {
    this.calls.push('destroy');
    return this.destroyImpl();
  }
  logout() {
    this.calls.push('logout');
    return this.logoutImpl();
  }
  requestPairingCode(phoneNumber: string) {
    this.calls.push(`requestPairingCode ${phoneNumber}`);
    return Promise.resolve('ABCD-EFGH');
  }
  getState = () => Promise.resolve(null);
  browserHealth = () => ({ alive: true, failStreak: 0, lastOkAt: 0 });
  sendMessage = notUsed('sendMessage');
  forwardMessage = notUsed('forwardMessage');
  react = notUsed('react');
  editMessage = notUsed('editMessage');
  deleteMessage = notUsed('deleteMessage');
  sendSeen = notUsed('sendSeen');
  sendStateTyping = notUsed('sendStateTyping');
  sendStateRecording = notUsed('sendStateRecording');
  clearState = notUsed('clearState');
  getChats = notUsed('getChats');
  getChatById = notUsed('getChatById');
  fetchMessages = notUsed('fetchMessages');
  getMessageById = notUsed('getMessageById');
  getContactById = notUsed('getContactById');
  getProfilePicUrl = notUsed('getProfilePicUrl');
  getNumberId = notUsed('getNumberId');
  downloadMedia = notUsed('downloadMedia');
  createGroup = notUsed('createGroup');
  getGroup = notUsed('getGroup');
  addParticipants = notUsed('addParticipants');
  removeParticipants = notUsed('removeParticipants');
  promoteParticipants = notUsed('promoteParticipants');
  demoteParticipants = notUsed('demoteParticipants');
  getInviteCode = notUsed('getInviteCode');
  revokeInvite = notUsed('revokeInvite');
  leaveGroup = notUsed('leaveGroup');
  setSubject = notUsed('setSubject');
  setDescription = notUsed('setDescription');

  on<E extends DriverEventName>(event: E, listener: DriverListener<E>): this {
    this.emitter.on(event, listener);
    return this;
  }
  off<E extends DriverEventName>(event: E, listener: DriverListener<E>): this {
    this.emitter.off(event, listener);
    return this;
  }
  emit<E extends DriverEventName>(event: E, ...args: DriverEvents[E]): void {
    this.emitter.emit(event, ...args);
  }
  listeners(): number {
    return DRIVER_EVENT_NAMES.reduce((n, e) => n + this.emitter.listenerCount(e), 0);
  }
}

/** Let promise chains and QR rendering run (no timers involved). */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2_000; i++) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.fail(`never happened: ${what}`);
}

const message: WireMessage = {
  id: { fromMe: false, remote: '4917000000001@c.us', id: 'ABC', _serialized: 'false_4917000000001@c.us_ABC' },
  from: '4917000000001@c.us',
  to: '4915112345678@c.us',
  author: null,
  body: 'hello',
  type: 'chat',
  timestamp: 1_767_607_200,
  fromMe: false,
  hasMedia: false,
  hasQuotedMsg: false,
  ack: 1,
  isForwarded: false,
  deviceType: 'android',
  location: null,
  vCards: [],
};

/** A parent that records every event its session child sends back, and can send the child commands. */
function recordingParent(input: DriverSessionInput) {
  const received: AnyEventObject[] = [];
  const parent = setup({ actors: { session: sessionLogic } }).createMachine({
    invoke: { id: 'session', src: 'session', input },
    on: { '*': { actions: assign(({ event }) => (received.push(event), {})) } },
  });
  const actor = createActor(parent);
  actor.start();
  const command = (c: { type: 'LOGOUT' } | { type: 'REQUEST_PAIRING_CODE'; phoneNumber: string }) => {
    const child = actor.getSnapshot().children.session;
    assert.ok(child, 'session child is running');
    child.send(c);
  };
  return { actor, received, command };
}

describe('sessionLogic on a driver', () => {
  test('initializes, forwards lifecycle events in order (the QR as its text), passes every event to onNetworkEvent, cleans up on stop', async () => {
    const driver = new TestDriver();
    const clock = simulatedClock();
    const network: [DriverEventName, unknown[]][] = [];
    const { actor, received } = recordingParent({ driver, clock, onNetworkEvent: (name, args) => network.push([name, args]) });

    await until(() => driver.calls.length > 0, 'initialize');
    assert.deepEqual(driver.calls, ['initialize']);
    assert.equal(driver.listenersAtInitialize, DRIVER_EVENT_NAMES.length, 'subscribed to every event before initialize');
    const at = clock.now();

    driver.emit('loading_screen', 10, 'starting');
    driver.emit('qr', '2@qr-payload');
    driver.emit('authenticated');
    driver.info = { wid: '4915112345678@c.us', pushname: 'Me', platform: 'android' };
    driver.emit('ready');
    driver.emit('message', message);
    driver.emit('change_state', 'CONNECTED');
    driver.emit('browser_health', { alive: true, failStreak: 0, lastOkAt: at });
    driver.emit('disconnected', 'NAVIGATION');
    driver.emit('fatal', 'page closed');
    driver.emit('auth_failure', 'bad session');
    driver.emit('code', 'WXYZ-1234');
    await until(() => received.length === 10, 'ten lifecycle events');

    assert.deepEqual(received, [
      { type: 'loading_screen', percent: 10, message: 'starting', at },
      { type: 'qr', qr: '2@qr-payload', at },
      { type: 'authenticated', at },
      { type: 'ready', wid: '4915112345678@c.us', at },
      { type: 'change_state', state: 'CONNECTED', at },
      { type: 'browser_health', health: { alive: true, failStreak: 0, lastOkAt: at }, at },
      { type: 'disconnected', reason: 'NAVIGATION', at },
      { type: 'fatal', reason: 'page closed', at },
      { type: 'auth_failure', message: 'bad session', at },
      { type: 'code', code: 'WXYZ-1234', at },
    ]);

    assert.deepEqual(
      network.map(([name]) => name),
      ['loading_screen', 'qr', 'authenticated', 'ready', 'message', 'change_state', 'browser_health', 'disconnected', 'fatal', 'auth_failure', 'code'],
    );
    assert.deepEqual(network[4], ['message', [message]]);
    assert.deepEqual(network[1], ['qr', ['2@qr-payload']]);

    actor.stop();
    assert.deepEqual(driver.calls, ['initialize', 'destroy']);
    assert.equal(driver.listeners(), 0, 'unsubscribed');
    driver.emit('message', message);
    driver.emit('ready');
    await until(() => true, 'flush');
    assert.equal(network.length, 11);
    assert.equal(received.length, 10);
  });

  test('a failing initialize() becomes SESSION_FAILED', async () => {
    const driver = new TestDriver();
    driver.initializeImpl = () => Promise.reject(new Error('chromium not found'));
    const clock = simulatedClock();
    const { actor, received } = recordingParent({ driver, clock });
    await until(() => received.length === 1, 'SESSION_FAILED');
    assert.deepEqual(received, [{ type: 'SESSION_FAILED', message: 'chromium not found', at: clock.now() }]);
    actor.stop();
    assert.deepEqual(driver.calls, ['initialize', 'destroy']);
  });

  test('LOGOUT and REQUEST_PAIRING_CODE reach the driver; the outcome comes back', async () => {
    const driver = new TestDriver();
    const clock = simulatedClock();
    const { actor, received, command } = recordingParent({ driver, clock });
    command({ type: 'REQUEST_PAIRING_CODE', phoneNumber: '4915112345678' });
    command({ type: 'LOGOUT' });
    await until(() => received.length === 1, 'LOGGED_OUT');
    assert.deepEqual(received, [{ type: 'LOGGED_OUT', at: clock.now() }]);
    assert.deepEqual(driver.calls, ['initialize', 'requestPairingCode 4915112345678', 'logout']);

    driver.logoutImpl = () => Promise.reject(new Error('not linked'));
    command({ type: 'LOGOUT' });
    await until(() => received.length === 2, 'LOGOUT_FAILED');
    assert.deepEqual(received[1], { type: 'LOGOUT_FAILED', message: 'not linked', at: clock.now() });
    actor.stop();
  });

  test('a failing destroy() is reported, not thrown', async () => {
    const driver = new TestDriver();
    driver.destroyImpl = () => Promise.reject(new Error('browser already gone'));
    const errors: [string, string][] = [];
    const { actor } = recordingParent({ driver, onError: (err, where) => errors.push([where, String(err)]) });
    actor.stop();
    await until(() => errors.length === 1, 'destroy error reported');
    assert.deepEqual(errors, [['destroy', 'Error: browser already gone']]);
  });
});

describe('createSessionLogic with the instance machine', () => {
  test('link, crash, backoff and a new driver that starts only after the old one is destroyed', async () => {
    const clock = simulatedClock();
    const drivers: TestDriver[] = [];
    const network: string[] = [];
    let releaseDestroy: () => void = () => {};
    const sessions = createSessionLogic({
      clock,
      driverFactory: (opts) => {
        const d = new TestDriver(opts);
        if (drivers.length === 0) d.destroyImpl = () => new Promise<void>((resolve) => (releaseDestroy = resolve));
        drivers.push(d);
        return d;
      },
      driverOptions: { dataDir: '/tmp/unused', callTimeoutMs: 1_000 },
      onNetworkEvent: (instanceId, name) => network.push(`${instanceId}:${name}`),
    });
    const actor = createActor(instanceMachine.provide({ actors: { session: sessions.logic } }), {
      input: { instanceId: 'inst-9' },
      clock,
    });
    actor.start();
    const status = () => instanceStatus(actor.getSnapshot());

    assert.equal(drivers.length, 1);
    assert.deepEqual(drivers[0]?.options, { instanceId: 'inst-9', dataDir: '/tmp/unused', callTimeoutMs: 1_000 });
    await until(() => drivers[0]?.calls.includes('initialize') ?? false, 'first initialize');

    drivers[0]?.emit('qr', 'qr-one');
    await until(() => status() === 'waiting_qr', 'waiting_qr');
    // kept as the driver gave it: drawn only where it is read (src/qr-image.ts)
    assert.equal(actor.getSnapshot().context.qr?.raw, 'qr-one');

    if (drivers[0]) drivers[0].info = { wid: '4915112345678@c.us', pushname: 'Me', platform: 'android' };
    drivers[0]?.emit('ready');
    await until(() => status() === 'connected', 'connected');
    assert.equal(actor.getSnapshot().context.phoneNumber, '4915112345678');

    drivers[0]?.emit('fatal', 'browser died');
    await until(() => status() === 'error', 'error');
    assert.deepEqual(drivers[0]?.calls, ['initialize', 'destroy']);

    clock.increment(actor.getSnapshot().context.backoffMs);
    assert.equal(status(), 'initializing');
    assert.equal(drivers.length, 2);
    await until(() => true, 'flush');
    assert.deepEqual(drivers[1]?.calls, [], 'waits for the old browser to close');

    releaseDestroy();
    await until(() => drivers[1]?.calls.includes('initialize') ?? false, 'second initialize');
    drivers[1]?.emit('ready');
    await until(() => status() === 'connected', 'connected again');
    assert.equal(actor.getSnapshot().context.browser.failStreak, 1);
    assert.deepEqual(network, ['inst-9:qr', 'inst-9:ready', 'inst-9:fatal', 'inst-9:ready']);

    actor.send({ type: 'STOP' });
    await sessions.settledAll();
    assert.deepEqual(drivers[1]?.calls, ['initialize', 'destroy']);
  });

  test('a send refused NOT_CONNECTED by a driver that reported ready fails the session (no put-back loop); a refusal before ready does not', async () => {
    const clock = simulatedClock();
    const drivers: TestDriver[] = [];
    const sessions = createSessionLogic({
      clock,
      driverFactory: (opts) => {
        const d = new TestDriver(opts);
        d.sendMessage = () => Promise.reject(new DriverError('the session is not connected', 'NOT_CONNECTED', true));
        drivers.push(d);
        return d;
      },
      driverOptions: { dataDir: '/tmp/unused', callTimeoutMs: 1_000 },
    });
    const actor = createActor(instanceMachine.provide({ actors: { session: sessions.logic } }), { input: { instanceId: 'inst-7' }, clock });
    actor.start();
    const status = () => instanceStatus(actor.getSnapshot());
    const call = () => {
      const session = actor.getSnapshot().children.session;
      assert.ok(session, 'a session runs');
      session.send({ type: 'CALL', askId: 'a1', replyTo: 'nobody', prepared: { call: 'send', chatId: '4917000000001@c.us', content: { kind: 'text', text: 'hi' }, options: {} } });
    };
    await until(() => drivers[0]?.calls.includes('initialize') ?? false, 'initialize');

    call(); // not ready yet: answered not_sent by the session itself, the driver is not asked
    await until(() => true, 'flush');
    assert.equal(status(), 'initializing');

    if (drivers[0]) drivers[0].info = { wid: '4915112345678@c.us', pushname: 'Me', platform: 'android' };
    drivers[0]?.emit('ready');
    await until(() => status() === 'connected', 'connected');
    call();
    await until(() => status() === 'error', 'the session failed');
    assert.match(String(actor.getSnapshot().context.lastError?.detail), /NOT_CONNECTED.*reported ready/);
    clock.increment(actor.getSnapshot().context.backoffMs);
    await until(() => drivers.length === 2, 'a new session after the backoff');
    actor.send({ type: 'STOP' });
    await sessions.settledAll();
  });

  test('a driver factory that throws becomes a session failure', async () => {
    const clock = simulatedClock();
    const sessions = createSessionLogic({
      clock,
      driverFactory: () => {
        throw new Error('unknown driver kind');
      },
      driverOptions: { dataDir: '/tmp/unused', callTimeoutMs: 1_000 },
    });
    const actor = createActor(instanceMachine.provide({ actors: { session: sessions.logic } }), { input: { instanceId: 'x' }, clock });
    actor.start();
    await until(() => instanceStatus(actor.getSnapshot()) === 'error', 'error');
    assert.deepEqual(actor.getSnapshot().context.lastError, { reason: 'SESSION_FAILED', detail: 'unknown driver kind', at: clock.now() });
    actor.stop();
  });
});

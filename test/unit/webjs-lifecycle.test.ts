/**
 * The webjs driver's lifecycle and browser health against the stand-in Client, on a simulated clock:
 * the Client options it builds, start success and failure, the periodic probe, death by browser disconnect,
 * page close, page crash or hang (probes or calls timing out), pairing code, state, logout and destroy.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import wweb from 'whatsapp-web.js';
import { simulatedClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { DriverError, type BrowserHealth } from '../../src/drivers/contract.js';
import { WebjsDriver } from '../../src/drivers/webjs/driver.js';
import { CHROME_ARGS, type WebjsDriverOptions } from '../../src/drivers/webjs/options.js';
import { StandInClient, never, wid } from './webjs-standin.js';

const root = mkdtempSync(path.join(tmpdir(), 'webjs-life-'));
after(() => rmSync(root, { recursive: true, force: true }));

const flush = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

interface Rig {
  clock: ReturnType<typeof simulatedClock>;
  driver: WebjsDriver;
  client: () => StandInClient;
  fatal: string[];
  health: BrowserHealth[];
}

let seq = 0;
function rig(
  prepare: (c: StandInClient) => void = () => undefined,
  extra: Pick<WebjsDriverOptions, 'chromePath' | 'startTimeoutMs' | 'chromeArgs' | 'blockResources'> = {},
): Rig {
  const clock = simulatedClock();
  let current: StandInClient | null = null;
  const driver = new WebjsDriver({
    instanceId: `life-${++seq}`,
    dataDir: root,
    callTimeoutMs: 1_000,
    probeIntervalMs: 30_000,
    probeTimeoutMs: 5_000,
    maxProbeFailures: 3,
    clock,
    ...extra,
    clientFactory: (options) => {
      current = new StandInClient(options);
      prepare(current);
      return current;
    },
  });
  const fatal: string[] = [];
  const health: BrowserHealth[] = [];
  driver.on('fatal', (reason) => fatal.push(reason));
  driver.on('browser_health', (h) => health.push(h));
  return {
    clock,
    driver,
    fatal,
    health,
    client: () => {
      assert.ok(current, 'no client was created');
      return current;
    },
  };
}

async function rejection(p: Promise<unknown>): Promise<DriverError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof DriverError, `expected a DriverError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a rejection');
}

describe('the Client it builds', () => {
  test('LocalAuth per instance under DATA_DIR/sessions, the system Chromium, headless, our switches', async () => {
    const r = rig(undefined, { chromePath: '/opt/chrome/chrome' });
    await r.driver.initialize();
    const o = r.client().options;
    assert.ok(o.authStrategy instanceof wweb.LocalAuth);
    assert.equal(o.authStrategy.clientId, 'life-1');
    assert.equal(o.authStrategy.dataPath, path.join(root, 'sessions'));
    assert.equal(o.puppeteer?.executablePath, '/opt/chrome/chrome');
    assert.equal(o.puppeteer?.headless, true);
    assert.deepEqual(o.puppeteer?.args, [...CHROME_ARGS]);
    for (const arg of [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // the memory switches (docs/webjs.md "Resource use")
      '--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,SpareRendererForSitePerProcess',
      '--disable-software-rasterizer',
    ]) {
      assert.ok(CHROME_ARGS.includes(arg), arg);
    }
    assert.equal(o.puppeteer?.handleSIGINT, false, 'puppeteer must not process.exit() on SIGINT');
    assert.deepEqual(o.webVersionCache, { type: 'local', path: path.join(root, 'wwebjs-cache') });
    assert.equal(r.driver.paths.userDataDir, path.join(root, 'sessions', 'session-life-1'));
    await r.driver.destroy();
  });

  test('WEBJS_CHROME_ARGS come after the driver\'s own switches', async () => {
    const r = rig(undefined, { chromeArgs: ['--proxy-server=http://127.0.0.1:3128', '--lang=de'] });
    await r.driver.initialize();
    assert.deepEqual(r.client().options.puppeteer?.args, [...CHROME_ARGS, '--proxy-server=http://127.0.0.1:3128', '--lang=de']);
    await r.driver.destroy();
  });

  test('WEBJS_BLOCK_RESOURCES: the auth strategy installs the blocking on the page, after its own step and once per page', async () => {
    const plain = rig();
    await plain.driver.initialize();
    const own = plain.client().options.authStrategy;
    assert.ok(own instanceof wweb.LocalAuth);
    assert.equal(Object.hasOwn(own, 'afterBrowserInitialized'), false, 'nothing installed when nothing is blocked');
    await plain.driver.destroy();

    const r = rig(undefined, { blockResources: ['image', 'font'] });
    await r.driver.initialize();
    const strategy = r.client().options.authStrategy;
    assert.ok(strategy instanceof wweb.LocalAuth, 'still the library\'s LocalAuth (same profile, same link)');
    const sent: { method: string; params: unknown }[] = [];
    let sessions = 0;
    const page = {
      createCDPSession: async () => {
        sessions++;
        return { on: () => undefined, send: async (method: string, params: unknown) => void sent.push({ method, params }) };
      },
    };
    const client = { pupPage: page } as unknown as wweb.Client;
    strategy.setup(client);
    await strategy.afterBrowserInitialized();
    await strategy.afterBrowserInitialized(); // the library repeats the step after a logout, on the same page
    assert.equal(sessions, 1, 'one DevTools session per page');
    assert.deepEqual(sent, [
      {
        method: 'Fetch.enable',
        params: { patterns: [{ resourceType: 'Image', requestStage: 'Request' }, { resourceType: 'Font', requestStage: 'Request' }] },
      },
    ]);
    await r.driver.destroy();
  });

  test('WEBJS_CHROME_ARGS and WEBJS_BLOCK_RESOURCES: none by default; lists as written, `none`, no repeats', () => {
    assert.deepEqual(loadConfig({}).WEBJS_CHROME_ARGS, []);
    assert.deepEqual(loadConfig({}).WEBJS_BLOCK_RESOURCES, []);
    assert.deepEqual(loadConfig({ WEBJS_CHROME_ARGS: ' --proxy-server=http://127.0.0.1:3128   --lang=de ' }).WEBJS_CHROME_ARGS, ['--proxy-server=http://127.0.0.1:3128', '--lang=de']);
    assert.deepEqual(loadConfig({ WEBJS_BLOCK_RESOURCES: 'image, font,image' }).WEBJS_BLOCK_RESOURCES, ['image', 'font']);
    assert.deepEqual(loadConfig({ WEBJS_BLOCK_RESOURCES: 'none' }).WEBJS_BLOCK_RESOURCES, []);
  });

  test('CHROME_PATH defaults to /usr/bin/chromium', async () => {
    const r = rig();
    await r.driver.initialize();
    assert.equal(r.client().options.puppeteer?.executablePath, '/usr/bin/chromium');
    await r.driver.destroy();
  });
});

describe('start', () => {
  test('resolves when the library started; the browser is watched from then on', async () => {
    const r = rig();
    await r.driver.initialize();
    const h = r.driver.browserHealth();
    assert.equal(h.alive, true);
    assert.equal(h.failStreak, 0);
    assert.equal(h.lastOkAt, r.clock.now());
    assert.deepEqual(r.fatal, []);
    await r.driver.destroy();
  });

  test('a failing library start: fatal with the reason, counted, initialize rejects, browser closed', async () => {
    const r = rig((c) => (c.initializeWith = () => Promise.reject(new Error('net::ERR_NAME_NOT_RESOLVED at https://web.whatsapp.com/'))));
    const err = await rejection(r.driver.initialize());
    assert.equal(err.message, 'start failed: net::ERR_NAME_NOT_RESOLVED at https://web.whatsapp.com/');
    assert.deepEqual(r.fatal, [err.message]);
    assert.deepEqual(r.driver.browserHealth(), { alive: false, failStreak: 1, lastOkAt: 0 });
    assert.deepEqual(r.health.at(-1), { alive: false, failStreak: 1, lastOkAt: 0 });
    assert.ok(r.client().callsOf('destroy').length >= 1, 'the library was asked to close its browser');
    await r.driver.destroy();
  });

  test('the library rejecting with a string (its "auth timeout")', async () => {
    const r = rig((c) => (c.initializeWith = () => Promise.reject('auth timeout')));
    const err = await rejection(r.driver.initialize());
    assert.equal(err.message, 'start failed: auth timeout');
    assert.deepEqual(r.fatal, ['start failed: auth timeout']);
  });

  test('a start that never ends times out', async () => {
    const r = rig((c) => (c.initializeWith = () => never()), { startTimeoutMs: 60_000 });
    const pending = rejection(r.driver.initialize());
    await flush();
    r.clock.increment(60_000);
    const err = await pending;
    assert.equal(err.code, 'TIMEOUT');
    assert.deepEqual(r.fatal, ['start timed out after 60000 ms']);
    assert.equal(r.driver.browserHealth().failStreak, 1);
  });

  test('destroy while starting ends the start at once', async () => {
    const r = rig((c) => (c.initializeWith = () => never()));
    const pending = rejection(r.driver.initialize());
    await flush();
    await r.driver.destroy();
    const err = await pending;
    assert.equal(err.code, 'SESSION_CLOSED');
    assert.deepEqual(r.fatal, [], 'a requested stop is not a crash');
  });

  test('initialize twice is refused', async () => {
    const r = rig();
    await r.driver.initialize();
    const err = await rejection(r.driver.initialize());
    assert.equal(err.provablyNotSent, true);
    await r.driver.destroy();
  });
});

describe('browser health', () => {
  test('the probe runs every interval and refreshes lastOkAt', async () => {
    const r = rig();
    await r.driver.initialize();
    const page = r.client().pupPage;
    assert.ok(page);
    r.clock.increment(30_000);
    await flush();
    assert.equal(page.evaluations, 1);
    assert.deepEqual(r.health.at(-1), { alive: true, failStreak: 0, lastOkAt: r.clock.now() });
    r.clock.increment(30_000);
    await flush();
    assert.equal(page.evaluations, 2);
    await r.driver.destroy();
    r.clock.increment(120_000);
    await flush();
    assert.equal(page.evaluations, 2, 'no probe after destroy');
  });

  test('a hung page: each timed-out probe counts; the third is death', async () => {
    const r = rig();
    await r.driver.initialize();
    const page = r.client().pupPage;
    assert.ok(page);
    page.hung = true;
    for (const streak of [1, 2]) {
      r.clock.increment(30_000);
      await flush();
      r.clock.increment(5_000);
      await flush();
      assert.equal(r.driver.browserHealth().failStreak, streak);
      assert.equal(r.driver.browserHealth().alive, true);
    }
    r.clock.increment(30_000);
    await flush();
    r.clock.increment(5_000);
    await flush();
    assert.deepEqual(r.fatal, ['browser unresponsive: 3 probes failed']);
    assert.equal(r.driver.browserHealth().alive, false);
    assert.equal(r.driver.browserHealth().failStreak, 3);
    assert.ok(r.client().callsOf('destroy').length >= 1);
  });

  test('a probe that succeeds again resets the streak', async () => {
    const r = rig();
    await r.driver.initialize();
    const page = r.client().pupPage;
    assert.ok(page);
    page.hung = true;
    r.clock.increment(30_000);
    await flush();
    r.clock.increment(5_000);
    await flush();
    assert.equal(r.driver.browserHealth().failStreak, 1);
    page.hung = false;
    r.clock.increment(30_000);
    await flush();
    assert.equal(r.driver.browserHealth().failStreak, 0);
    await r.driver.destroy();
  });

  for (const [name, kill, reason] of [
    ['browser disconnected', (c: StandInClient) => c.pupBrowser?.emit('disconnected'), 'browser disconnected'],
    ['page closed', (c: StandInClient) => c.pupPage?.emit('close'), 'browser page closed'],
    ['page crashed', (c: StandInClient) => c.pupPage?.emit('error', new Error('Page crashed!')), 'browser page crashed: Page crashed!'],
  ] as const) {
    test(`${name}: fatal once, counted, calls refused afterwards`, async () => {
      const r = rig();
      await r.driver.initialize();
      r.client().emit('ready');
      kill(r.client());
      kill(r.client());
      await flush();
      assert.deepEqual(r.fatal, [reason]);
      assert.equal(r.driver.browserHealth().alive, false);
      assert.equal(r.driver.browserHealth().failStreak, 1);
      const err = await rejection(r.driver.getChats());
      assert.equal(err.code, 'SESSION_CLOSED');
      await r.driver.destroy();
    });
  }

  test('the browser closing after the library reported disconnected is not a crash', async () => {
    const r = rig();
    await r.driver.initialize();
    r.client().emit('disconnected', 'CONFLICT');
    r.client().pupBrowser?.emit('disconnected');
    await flush();
    assert.deepEqual(r.fatal, []);
    assert.equal(r.driver.browserHealth().alive, false);
    await r.driver.destroy();
  });

  test('calls that time out count like failed probes', async () => {
    const r = rig();
    await r.driver.initialize();
    r.client().emit('ready');
    r.client().getChats = () => never();
    for (let i = 0; i < 3; i++) {
      const pending = rejection(r.driver.getChats());
      await flush();
      r.clock.increment(1_000);
      assert.equal((await pending).code, 'TIMEOUT');
    }
    await flush();
    assert.deepEqual(r.fatal, ['browser unresponsive: 3 calls or probes timed out']);
  });
});

describe('linking, state, logout, destroy', () => {
  test('pairing code: returned and emitted as `code`; not before the page, not when linked', async () => {
    const r = rig();
    const early = await rejection(r.driver.requestPairingCode('4915112345678'));
    assert.equal(early.code, 'NOT_CONNECTED');
    await r.driver.initialize();
    const codes: string[] = [];
    r.driver.on('code', (c) => codes.push(c));
    assert.equal(await r.driver.requestPairingCode('+49 151 12345678'.replace(/[^0-9]/g, '')), 'K7Q2ZP4M');
    assert.deepEqual(codes, ['K7Q2ZP4M']);
    assert.deepEqual(r.client().callsOf('requestPairingCode'), [['4915112345678', true, undefined]]);
    assert.equal((await rejection(r.driver.requestPairingCode('12'))).code, 'INVALID_INPUT');
    r.client().emit('ready');
    assert.equal((await rejection(r.driver.requestPairingCode('4915112345678'))).code, 'INVALID_INPUT');
    await r.driver.destroy();
  });

  test('getState: the library state, null without a page or for unknown values', async () => {
    const r = rig();
    assert.equal(await r.driver.getState(), null);
    await r.driver.initialize();
    assert.equal(await r.driver.getState(), 'CONNECTED');
    r.client().state = 'WEIRD';
    assert.equal(await r.driver.getState(), null);
    await r.driver.destroy();
    assert.equal(await r.driver.getState(), null);
  });

  test('logout: the library logs out, the local session is removed, the driver is closed', async () => {
    const r = rig();
    await r.driver.initialize();
    r.client().info = { wid: wid('491609876543@c.us'), pushname: 'Shop', platform: 'android' };
    r.client().emit('ready');
    mkdirSync(r.driver.paths.userDataDir, { recursive: true });
    await r.driver.logout();
    assert.deepEqual(r.client().callsOf('logout'), [[]]);
    assert.equal(existsSync(r.driver.paths.userDataDir), false);
    assert.equal(r.driver.info, null);
    assert.deepEqual(r.fatal, []);
    assert.equal((await rejection(r.driver.sendSeen('491511234567@c.us'))).code, 'SESSION_CLOSED');
  });

  test('destroy is idempotent and closes the library once', async () => {
    const r = rig();
    await r.driver.initialize();
    await Promise.all([r.driver.destroy(), r.driver.destroy()]);
    await r.driver.destroy();
    assert.equal(r.client().callsOf('destroy').length, 1);
    assert.equal(r.driver.browserHealth().alive, false);
  });

  test('destroy before initialize does nothing and forbids a later start', async () => {
    const r = rig();
    await r.driver.destroy();
    assert.equal((await rejection(r.driver.initialize())).provablyNotSent, true);
  });

  test('a listener that throws does not break the driver', async () => {
    const r = rig();
    r.driver.on('qr', () => {
      throw new Error('listener bug');
    });
    const seen: string[] = [];
    r.driver.on('qr', (qr) => seen.push(qr));
    await r.driver.initialize();
    r.client().emit('qr', '2@x');
    assert.equal(r.driver.browserHealth().alive, true);
    await r.driver.destroy();
  });
});

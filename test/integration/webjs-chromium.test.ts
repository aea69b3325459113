/**
 * The webjs driver with a real Debian Chromium and no network (CI installs `chromium`; without it every test
 * here says why it skips). whatsapp-web.js cannot load web.whatsapp.com from here, so the tests check what a
 * machine without the network can show honestly:
 *   - a start that fails reports a clear reason (`fatal`), counts it (`browser.failStreak`) and leaves no
 *     Chromium process behind;
 *   - a live browser that dies or hangs is detected (puppeteer `disconnected`, the probe) and killed;
 *   - a browser left over by an earlier run is killed before the next start (it would hold the profile);
 *   - through the real instance machine, the session restarts with backoff and nothing is left on stop.
 * For the live-browser cases WhatsApp Web's page is replaced by a local page, served through the library's
 * own web-version cache (LocalWebCache): the library then waits in that page for WhatsApp to load, which is
 * the window in which the browser is killed or frozen.
 * "No Chromium left" is checked in /proc: no running process whose command line holds the session's unique
 * --user-data-dir.
 * The live-browser cases also run on chrome-headless-shell when it is installed (Debian `chromium-headless-shell`,
 * the smaller browser docs/webjs.md describes), whose child processes do not repeat --user-data-dir.
 */
import { after, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createActor } from 'xstate';
import { instanceMachine, instanceStatus, type InstanceSnapshot } from '../../machines/instance.machine.js';
import { createSessionLogic } from '../../src/actors/session.js';
import type { Clock } from '../../src/clock.js';
import { DriverError, type BrowserHealth } from '../../src/drivers/contract.js';
import { WebjsDriver } from '../../src/drivers/webjs/driver.js';
import { webjsDriverFactory } from '../../src/drivers/webjs/factory.js';
import type { WebjsDriverOptions } from '../../src/drivers/webjs/options.js';
import { isRunning, pidsWithUserDataDir, processTree } from '../../src/drivers/webjs/processes.js';
import { CHROME, NO_CHROME } from '../helpers/chromium.js';

/** The binary itself: Debian's /usr/bin/chromium-headless-shell is a script that does not exec it. */
const SHELL = process.env.CHROME_HEADLESS_SHELL_PATH || '/usr/lib/chromium/chromium-headless-shell';
const NO_SHELL = existsSync(SHELL) ? null : `no chrome-headless-shell at ${SHELL} (apt-get install -y chromium-headless-shell)`;
const OFFLINE_VERSION = 'offline-test';

const root = mkdtempSync(path.join(tmpdir(), 'webjs-chromium-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** Real time with ref'd timers: the test process must stay up while a browser is being watched. */
const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

let seq = 0;
function dataDir(offlinePage: boolean): string {
  const dir = path.join(root, `d${++seq}`);
  mkdirSync(path.join(dir, 'wwebjs-cache'), { recursive: true });
  if (offlinePage) {
    writeFileSync(path.join(dir, 'wwebjs-cache', `${OFFLINE_VERSION}.html`), '<!doctype html><title>offline</title><p>not WhatsApp Web</p>');
  }
  return dir;
}

function newDriver(opts: Partial<WebjsDriverOptions> & { dataDir: string }): WebjsDriver {
  return new WebjsDriver({
    instanceId: `chromium-${seq}`,
    callTimeoutMs: 5_000,
    chromePath: CHROME,
    clock: realClock,
    startTimeoutMs: 30_000,
    closeTimeoutMs: 3_000,
    ...opts,
  });
}

/** Any running process whose command line mentions the directory at all (broader than the driver's own check). */
function processesMentioning(dir: string): number[] {
  return readdirSync('/proc')
    .filter((d) => /^[0-9]+$/.test(d))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir) && isRunning(pid);
      } catch {
        return false;
      }
    });
}

async function until<T>(probe: () => T | null | undefined | false, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function recorder(driver: WebjsDriver) {
  const fatal: string[] = [];
  const health: BrowserHealth[] = [];
  driver.on('fatal', (reason) => fatal.push(reason));
  driver.on('browser_health', (h) => health.push(h));
  return { fatal, health };
}

/** The browser's main process: the one with the session's profile whose parent is this test process. */
function leaderOf(userDataDir: string): number | null {
  for (const pid of pidsWithUserDataDir(userDataDir)) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid === process.pid) return pid;
  }
  return null;
}

function skipWithoutChrome(t: TestContext, missing: string | null = NO_CHROME): boolean {
  if (missing) t.skip(missing);
  return missing !== null;
}

test('no Chromium at CHROME_PATH: a start failure that says so', async () => {
  const driver = newDriver({ dataDir: dataDir(false), chromePath: path.join(root, 'no-such-chromium') });
  const { fatal } = recorder(driver);
  const err = await driver.initialize().then(
    () => assert.fail('cannot start without a browser'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof DriverError);
  assert.equal(err.message, `start failed: no Chromium at ${path.join(root, 'no-such-chromium')} (set CHROME_PATH)`);
  assert.deepEqual(fatal, [err.message]);
  assert.deepEqual(driver.browserHealth(), { alive: false, failStreak: 1, lastOkAt: 0 });
  await driver.destroy();
});

describe('webjs driver on a real Chromium, no network', { timeout: 60_000 }, () => {
  test('a start that cannot load WhatsApp Web: clear reason, counted, no Chromium left', async (t) => {
    if (skipWithoutChrome(t)) return;
    const driver = newDriver({ dataDir: dataDir(false) });
    const { fatal } = recorder(driver);
    const err = await driver.initialize().then(
      () => assert.fail('the start cannot succeed without the network'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof DriverError);
    assert.match(err.message, /^start (failed: net::ERR_[A-Z_]+ at https:\/\/web\.whatsapp\.com\/|timed out)/);
    assert.deepEqual(fatal, [err.message]);
    assert.equal(driver.browserHealth().alive, false);
    assert.equal(driver.browserHealth().failStreak, 1);
    assert.ok(existsSync(path.join(driver.paths.userDataDir, 'Default')), 'Chromium really ran with the session profile');
    assert.deepEqual(processesMentioning(driver.paths.userDataDir), [], 'nothing left after the failed start');
    await driver.destroy();
    assert.deepEqual(processesMentioning(driver.paths.userDataDir), []);
  });

  test('through the instance machine: status error, failures counted, restarts with backoff, nothing left on stop', async (t) => {
    if (skipWithoutChrome(t)) return;
    const dir = dataDir(false);
    const drivers: WebjsDriver[] = [];
    const factory = webjsDriverFactory({ chromePath: CHROME, clock: realClock, startTimeoutMs: 30_000, closeTimeoutMs: 3_000 });
    const sessions = createSessionLogic({
      driverFactory: (opts) => {
        const d = factory(opts);
        if (d instanceof WebjsDriver) drivers.push(d);
        return d;
      },
      driverOptions: { dataDir: dir, callTimeoutMs: 5_000 },
    });
    const actor = createActor(instanceMachine.provide({ actors: { session: sessions.logic } }), {
      input: { instanceId: 'machine-1', backoff: { baseMs: 300, maxMs: 1_000, factor: 2, jitter: 0 }, quarantine: { maxFailures: 10 } },
    });
    const statuses = new Set<string>();
    actor.subscribe((s: InstanceSnapshot) => statuses.add(instanceStatus(s)));
    actor.start();

    const snapshot = await until(
      () => {
        const s = actor.getSnapshot();
        return s.context.recentFailures.length >= 2 ? s : null;
      },
      40_000,
      'two failed starts',
    );
    assert.ok(statuses.has('initializing') && statuses.has('error'), `statuses seen: ${[...statuses].join(', ')}`);
    assert.ok(snapshot.context.browser.failStreak >= 2);
    assert.equal(snapshot.context.lastError?.reason, 'SESSION_CRASHED');
    assert.match(snapshot.context.lastError?.detail ?? '', /^start (failed: net::ERR_|timed out)/);
    assert.ok(drivers.length >= 2, 'a new driver per restart');

    actor.send({ type: 'STOP' });
    await sessions.settledAll();
    actor.stop();
    const profile = drivers[0]?.paths.userDataDir;
    assert.ok(profile);
    assert.ok(drivers.every((d) => d.paths.userDataDir === profile), 'every restart used the same profile (the link)');
    assert.deepEqual(processesMentioning(profile), []);
  });
});

for (const [name, chrome, missing] of [
  ['Chromium', CHROME, NO_CHROME],
  ['chrome-headless-shell', SHELL, NO_SHELL],
] as const) {
  describe(`webjs driver on a live ${name}, no network`, { timeout: 60_000 }, () => {
    test('a live browser killed from outside: fatal "browser disconnected", counted, no orphan', async (t) => {
      if (skipWithoutChrome(t, missing)) return;
      const driver = newDriver({ chromePath: chrome, dataDir: dataDir(true), webVersion: OFFLINE_VERSION, authTimeoutMs: 30_000, probeIntervalMs: 200 });
      const { fatal } = recorder(driver);
      const started = driver.initialize().then(
        () => null,
        (e: unknown) => e,
      );
      await until(() => driver.browserHealth().lastOkAt > 0, 20_000, 'a successful probe of the live browser');
      assert.equal(driver.browserHealth().alive, true);
      const leader = await until(() => leaderOf(driver.paths.userDataDir), 5_000, 'the browser main process');
      const tree = processTree(leader);
      assert.ok(tree.length > 1, 'a real process tree (zygotes, renderers)');

      process.kill(leader, 'SIGKILL');
      const err = await started;
      assert.ok(err instanceof DriverError, 'initialize ends when the browser dies during the start');
      assert.deepEqual(fatal, ['browser disconnected']);
      assert.deepEqual({ ...driver.browserHealth(), lastOkAt: 0 }, { alive: false, failStreak: 1, lastOkAt: 0 });
      assert.deepEqual(processesMentioning(driver.paths.userDataDir), [], 'the children of the killed browser are gone too');
      // those that do not name the profile (chrome-headless-shell's) end when the killed browser's pipes close:
      // under load that can come a moment after the driver reported the death
      await until(() => tree.filter(isRunning).length === 0 || null, 5_000, 'the rest of the killed browser\'s tree to end');
      await driver.destroy();
    });

    test('a frozen browser: probes time out, fatal "browser unresponsive", the processes are killed', async (t) => {
      if (skipWithoutChrome(t, missing)) return;
      const driver = newDriver({
        chromePath: chrome,
        dataDir: dataDir(true),
        webVersion: OFFLINE_VERSION,
        authTimeoutMs: 30_000,
        probeIntervalMs: 200,
        probeTimeoutMs: 400,
        maxProbeFailures: 2,
        closeTimeoutMs: 1_000,
      });
      const { fatal, health } = recorder(driver);
      const started = driver.initialize().catch((e: unknown) => e);
      await until(() => driver.browserHealth().lastOkAt > 0, 20_000, 'a successful probe of the live browser');
      const leader = await until(() => leaderOf(driver.paths.userDataDir), 5_000, 'the browser main process');

      process.kill(leader, 'SIGSTOP');
      await until(() => fatal.length > 0, 10_000, 'the hang to be detected');
      assert.match(fatal[0] ?? '', /^browser unresponsive: 2 probes failed$/);
      assert.ok(health.some((h) => h.alive && h.failStreak === 1), 'the first failed probe was reported');
      assert.deepEqual(driver.browserHealth().failStreak, 2);
      await started;
      assert.equal(isRunning(leader), false, 'the frozen browser was killed');
      assert.deepEqual(processesMentioning(driver.paths.userDataDir), []);
      await driver.destroy();
    });

    test('destroy while the browser is still being launched: nothing is left', async (t) => {
      if (skipWithoutChrome(t, missing)) return;
      const driver = newDriver({ chromePath: chrome, dataDir: dataDir(true), webVersion: OFFLINE_VERSION, authTimeoutMs: 30_000 });
      const { fatal } = recorder(driver);
      const started = driver.initialize().catch((e: unknown) => e);
      await driver.destroy();
      assert.ok((await started) instanceof DriverError);
      assert.deepEqual(fatal, [], 'a requested stop is not a crash');
      assert.deepEqual(processesMentioning(driver.paths.userDataDir), []);
    });

    test('a browser left over by an earlier run is killed before the next start', async (t) => {
      if (skipWithoutChrome(t, missing)) return;
      const dir = dataDir(false);
      const driver = newDriver({ chromePath: chrome, dataDir: dir });
      mkdirSync(driver.paths.userDataDir, { recursive: true });
      // What a gateway killed with SIGKILL leaves behind: a detached browser on the session's profile.
      const orphan = spawn(chrome, ['--headless=new', '--no-sandbox', '--disable-gpu', `--user-data-dir=${driver.paths.userDataDir}`, 'about:blank'], {
        detached: true,
        stdio: 'ignore',
      });
      orphan.unref();
      const orphanPid = orphan.pid;
      assert.ok(orphanPid);
      await until(() => pidsWithUserDataDir(driver.paths.userDataDir).includes(orphanPid), 10_000, 'the orphan to run');

      await driver.initialize().catch(() => undefined);
      assert.equal(isRunning(orphanPid), false, 'the orphan was killed');
      await driver.destroy();
      assert.deepEqual(processesMentioning(driver.paths.userDataDir), []);
    });
  });
}

/**
 * What the console shows when what it shows is not a reading of now, in real Chromium (playwright-core driving
 * Debian's chromium) against real gateways on a real PostgreSQL (found in review: in each case the console kept
 * the last rows on show as if current, or showed "—" as if there were no counts):
 *
 * - the view of an instance awaited (its node silent, up to VIEW_DEADLINE_MS): the row says "waiting", which node
 *   was asked at what time and its last known status, before it says "unknown"; the other rows are shown as they are;
 * - its queue counts not read while its view was (the queue's start read held by a lock on the `dispatches`
 *   table): the queue column says the counts could not be read, and why;
 * - no reading of the instances at all (the gateway cannot be reached, a proxy in front of it answers 502, the
 *   gateway cannot read PostgreSQL): the list says it is stale since its last reading and why, its statuses are
 *   shown as the last ones seen (no `connected` on show), until a reading comes again.
 *
 * The two-node case uses test/helpers/two-nodes.ts (node `a` behind a TCP proxy the test cuts); the third a gateway
 * behind an HTTP proxy the browser goes through (test/helpers/http-front.ts) and a TCP proxy in front of PostgreSQL.
 * Nothing sleeps: every step waits for what the page shows. No secret is in any text the page shows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Page } from 'playwright-core';
import { NEEDS_SERVER } from '../helpers/db.js';
import { ADMIN_TOKEN, settle, startTestGateway, waitFor } from '../helpers/gateway.js';
import { CHROME, NO_CHROME } from '../helpers/chromium.js';
import { twoNodes } from '../helpers/two-nodes.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { startHttpFront } from '../helpers/http-front.js';
import { saveScreenshot } from '../helpers/screenshots.js';

const WAIT = { timeout: 20_000 };
type Doc = { document: { querySelector(s: string): { textContent: string } | null; body: { innerText: string } } };
const textOf = (page: Page, sel: string) =>
  page.evaluate((s) => (globalThis as unknown as Doc).document.querySelector(s)?.textContent ?? '', sel);
/** wait until the element's text matches */
const waitText = (page: Page, sel: string, re: RegExp) =>
  page.waitForFunction(
    ([s, src, flags]) => new RegExp(src, flags).test((globalThis as unknown as Doc).document.querySelector(s)?.textContent ?? ''),
    [sel, re.source, re.flags] as const,
    WAIT,
  );

async function signIn(page: Page, url: string): Promise<void> {
  await page.goto(`${url}/console`);
  await page.fill('#token', ADMIN_TOKEN);
  await page.click('#sign-in-form button[type=submit]');
  await page.waitForSelector('#app:not([hidden])', WAIT);
}

test('console: an instance whose view is awaited says "waiting" (which node, since when, last known); counts not read say so and why', { skip: NO_CHROME ?? NEEDS_SERVER.skip }, async (t) => {
  const { clock, db, proxyA, b, admin, owner, linkedOn } = await twoNodes(t, 'console_stale');
  const far = await linkedOn('a', 'far', '4915550430001');
  await linkedOn('b', 'near', '4915550430002');

  const browser = await chromium.launch({ executablePath: CHROME, args: ['--no-sandbox'], headless: true });
  t.after(() => browser.close());
  const page: Page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await signIn(page, b.url);
  const farRow = 'tr[data-name="far"]';
  const nearRow = 'tr[data-name="near"]';
  await page.waitForSelector(`${farRow}[data-status="connected"] td.queue:text("waiting 0")`, WAIT);

  // ---- node `a` silent: "waiting", naming `a`, the time it was asked and the last status, then "unknown"
  await proxyA.cut('blackhole');
  const cutAt = Date.now();
  await page.waitForSelector(`${farRow}[data-status="waiting"]`, WAIT);
  assert.equal(await textOf(page, `${farRow} .status`), 'waiting');
  assert.match(await textOf(page, `${farRow} .detail`), /^asked node a, which runs it, at \d{1,2}:\d\d:\d\d( [AP]M)?; no answer yet \(last known: connected\)$/);
  assert.equal(await textOf(page, `${farRow} td.queue`), 'waiting');
  // the other rows are read meanwhile, as they are
  assert.equal(await page.getAttribute(nearRow, 'data-status'), 'connected');
  await saveScreenshot(page, 'console-stale-waiting.png');
  await page.waitForSelector(`${farRow}[data-status="unknown"]`, WAIT);
  assert.ok(Date.now() - cutAt < 15_000);
  await proxyA.restore();
  await page.waitForSelector(`${farRow}[data-status="connected"] td.queue:text("waiting 0")`, WAIT);

  // ---- its counts cannot be read while its state can: the queue's start read (after a move to `b`) waits for a
  // lock on `dispatches` held here; the column says the counts were not read and why, never "—"
  const locker = await db.pool.connect();
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE dispatches IN ACCESS EXCLUSIVE MODE');
  // the move's answer may wait for the queue's start too: it is read once the lock is gone
  const moving = admin('POST', `/admin/v1/instances/${far}/move`, { node: 'b' });
  try {
    await waitFor(async () => (await owner(far)) === 'b', 'far taken over by b', 4_000);
    // its view is read (b runs it), its queue has not started: no counts, and why, not "—" nor the last ones
    // (the start read waits for the lock past PostgreSQL's statement deadline, fails, and waits to be tried again)
    await waitText(page, `${farRow} td.queue`, /^counts not read: its queue could not read its jobs from PostgreSQL at start \(tried again\)$/);
    const status = (await page.getAttribute(farRow, 'data-status')) ?? '';
    assert.ok(!['unknown', 'waiting', 'stale'].includes(status), status);
    await saveScreenshot(page, 'console-stale-counts.png');
  } finally {
    await locker.query('COMMIT');
    locker.release();
  }
  const moved = await moving;
  assert.ok(moved.status === 200 || moved.status === 202, moved.text);
  // the failed start is tried again on the nodes' (simulated) clock: on until the queue has read its jobs
  const started = () => b.actors.port(far)?.ask({ type: 'queue.summary' }, 1_000).then(() => true, () => false) ?? false;
  for (let i = 0; i < 120 && !(await started()); i++) {
    clock.increment(500);
    await settle();
  }
  await page.waitForSelector(`${farRow} td.queue:text("waiting 0")`, WAIT);
  assert.ok(!(await page.evaluate(() => (globalThis as unknown as Doc).document.body.innerText)).includes(ADMIN_TOKEN));
  assert.deepEqual(problems, []);
});

test('console: no reading (gateway unreachable, a 502 in front of it, PostgreSQL gone) marks the list stale since its last reading, and why, until one comes', { skip: NO_CHROME ?? NEEDS_SERVER.skip }, async (t) => {
  const target = new URL(process.env.TEST_DATABASE_URL ?? '');
  const dbProxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  t.after(() => dbProxy.close());
  const gw = await startTestGateway({ label: 'console_stale_poll', viaPort: dbProxy.port });
  t.after(() => gw.stop());
  const front = await startHttpFront(gw.url);
  t.after(() => front.close());
  const { apiKey } = await gw.createInstance('shop');

  const browser = await chromium.launch({ executablePath: CHROME, args: ['--no-sandbox'], headless: true });
  t.after(() => browser.close());
  const page: Page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await signIn(page, front.url);
  const row = 'tr[data-name="shop"]';
  await page.waitForSelector(`${row}[data-status="connected"] td.queue:text("waiting 0")`, WAIT);
  assert.equal(await page.isVisible('#stale'), false);

  /** the list marked stale for `reason`, since a reading taken before `cutAt`, with no status shown as current */
  const staleFor = async (reason: RegExp, cutAt: number) => {
    await waitText(page, '#stale', reason);
    const text = await textOf(page, '#stale');
    assert.match(text, /^Not current: stale since \d{1,2}:\d\d:\d\d( [AP]M)?, the last reading: .+\. Retrying; states and counts may have changed since\.$/, text);
    const since = Date.parse((await page.getAttribute('#stale', 'data-since')) ?? '');
    assert.ok(since <= cutAt && since > cutAt - 10_000, `stale since ${new Date(since).toISOString()}, cut at ${new Date(cutAt).toISOString()}`);
    assert.equal(await textOf(page, '#live'), 'stale');
    assert.equal(await page.getAttribute(row, 'data-status'), 'stale');
    assert.equal(await textOf(page, `${row} .status`), 'last: connected');
    assert.equal(await page.locator('#instances .status.connected').count(), 0, 'no status shown as current');
    const shown = await page.evaluate(() => (globalThis as unknown as Doc).document.body.innerText);
    assert.ok(!shown.includes(ADMIN_TOKEN) && !shown.includes(apiKey), 'no secret in the page');
  };
  const currentAgain = async () => {
    await page.waitForSelector(`${row}[data-status="connected"]`, WAIT);
    assert.equal(await page.isVisible('#stale'), false);
    assert.equal(await textOf(page, '#live'), 'live');
  };

  // ---- the gateway cannot be reached
  let cutAt = Date.now();
  front.set('drop');
  await staleFor(/the last reading: the gateway cannot be reached\./, cutAt);
  await saveScreenshot(page, 'console-stale-unreachable.png');
  front.set('pass');
  await currentAgain();

  // ---- a proxy in front of it answers 502 (the event stream refused: tried again until it is not)
  cutAt = Date.now();
  front.set(502);
  await staleFor(/the last reading: the gateway answered 502\./, cutAt);
  front.set('pass');
  await currentAgain();

  // ---- the gateway answers but cannot read PostgreSQL
  cutAt = Date.now();
  await dbProxy.cut('refuse');
  try {
    await staleFor(/the last reading: the gateway could not read the instances\./, cutAt);
  } finally {
    await dbProxy.restore();
  }
  await currentAgain();
  assert.deepEqual(problems, []);
});

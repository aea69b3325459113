/**
 * The state of an instance whose node cannot be asked, as another node's operator API, console and CLI table show
 * it: unknown, naming that node and what happened (refused, or no answer within VIEW_DEADLINE_MS), never a stopped
 * instance's `disconnected` nor the last state seen (found from the outside: node `b`'s console showed an instance
 * of an unreachable node `a` as disconnected, or kept it `connected` with its last counts, while `a` ran it).
 *
 * Two gateway nodes in this process on one real PostgreSQL (CLUSTER_SECRET, short leases), the sandbox network in
 * a server of its own, node `a` reached by `b` through a TCP proxy (its NODE_URL) the test cuts: `refuse`
 * (connections refused) and `blackhole` (nothing answers: a node that is merely slow, or a partition). The
 * console is node `b`'s, in real Chromium. At the end `a` stops (its instance handed over): `b` runs it, and
 * its state is known again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Page } from 'playwright-core';
import { VIEW_DEADLINE_MS } from '../../src/instances.js';
import { instancesTable } from '../../src/cli/verbs/instances.js';
import { NEEDS_SERVER } from '../helpers/db.js';
import { ADMIN_TOKEN, waitFor } from '../helpers/gateway.js';
import { CHROME, NO_CHROME } from '../helpers/chromium.js';
import { twoNodes } from '../helpers/two-nodes.js';
import { saveScreenshot } from '../helpers/screenshots.js';

const WAIT = { timeout: 20_000 };
type Item = Record<string, unknown> & { id: string; name: string; status: string | null; connected: boolean | null; node: string | null; stateUnknown: { node: string; reason: string } | null };
type Doc = { document: { querySelector(s: string): { textContent: string } | null } };

test('an instance whose node cannot be asked: its state and counts are shown unknown, naming that node and why (refused, no answer), and known again once it answers or another node runs it', { skip: NO_CHROME ?? NEEDS_SERVER.skip }, async (t) => {
  const { proxyA, nodes, a, b, admin, owner, linkedOn } = await twoNodes(t, 'console_unreachable');
  let lastList: unknown = null;
  const list = async () => {
    const r = await admin('GET', '/admin/v1/instances');
    assert.equal(r.status, 200, r.text);
    lastList = r.body.data;
    return new Map((r.body.data?.items as Item[]).map((i) => [i.name, i]));
  };
  const far = await linkedOn('a', 'far', '4915550420001');
  await linkedOn('b', 'near', '4915550420002');

  const browser = await chromium.launch({ executablePath: CHROME, args: ['--no-sandbox'], headless: true });
  t.after(() => browser.close());
  const page: Page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.goto(`${b.url}/console`);
  await page.fill('#token', ADMIN_TOKEN);
  await page.click('#sign-in-form button[type=submit]');
  const farRow = 'tr[data-name="far"]';
  const nearRow = 'tr[data-name="near"]';
  await page.waitForSelector(`${farRow}[data-status="connected"] td.queue:text("waiting 0")`, WAIT);
  await page.click(`${farRow} button:text("Queue")`);
  await page.waitForFunction(() => /^mode pg/.test((globalThis as unknown as Doc).document.querySelector('#queue-counts')?.textContent ?? ''), undefined, WAIT);

  // ---- connections to `a` refused: unknown at once, naming `a`; `b`'s own instance as it is
  await proxyA.cut('refuse');
  let items = await list();
  const refused = items.get('far') as Item;
  assert.equal(refused.status, null, JSON.stringify(refused));
  assert.equal(refused.connected, null);
  assert.equal(refused.browser, null);
  assert.equal(refused.node, 'a');
  assert.deepEqual(refused.stateUnknown, { node: 'a', reason: 'cannot be reached (ECONNREFUSED)' });
  assert.equal(items.get('near')?.status, 'connected');
  assert.equal(items.get('near')?.stateUnknown, null);
  const one = await admin('GET', `/admin/v1/instances/${far}`);
  assert.deepEqual(one.body.data?.stateUnknown, { node: 'a', reason: 'cannot be reached (ECONNREFUSED)' });
  // the operator's queue counts and QR: refused, naming the node, not a stopped instance's answer
  const counts = await admin('GET', `/admin/v1/instances/${far}/queue`);
  assert.equal(counts.status, 502, counts.text);
  assert.equal(counts.body.data?.node, 'a');
  assert.match(counts.body.error ?? '', /^node a, which runs the instance, cannot be reached \(ECONNREFUSED\); nothing was done there$/);
  const qr = await admin('GET', `/admin/v1/instances/${far}/qr`);
  assert.equal(qr.status, 502, qr.text);
  assert.equal(qr.body.data?.node, 'a');
  // `mgw instances` says so too
  const farLine = instancesTable(lastList).split('\n').find((l) => l.includes(far)) ?? '';
  assert.match(farLine, /unknown: node a cannot be reached \(ECONNREFUSED\)/, farLine);
  assert.doesNotMatch(farLine, /disconnected|connected/, farLine);
  // the console: "unknown" and why; no counts, no Link; the Queue panel's counts unknown, naming `a`
  await page.waitForSelector(`${farRow}[data-status="unknown"]`, WAIT);
  assert.equal(await page.textContent(`${farRow} .status`), 'unknown');
  assert.equal(await page.textContent(`${farRow} .detail`), 'state and queue unknown: node a, which runs it, cannot be reached (ECONNREFUSED)');
  assert.equal(await page.textContent(`${farRow} td.queue`), 'unknown');
  assert.equal(await page.isVisible(`${farRow} button:text("Link")`), false);
  assert.equal(await page.getAttribute(nearRow, 'data-status'), 'connected');
  await page.waitForFunction(() => /^counts unknown: node a, which runs the instance, cannot be reached/.test((globalThis as unknown as Doc).document.querySelector('#queue-counts')?.textContent ?? ''), undefined, WAIT);
  await saveScreenshot(page, 'console-unreachable-refused.png');

  // ---- reachable again: known again
  await proxyA.restore();
  await page.waitForSelector(`${farRow}[data-status="connected"] td.queue:text("waiting 0")`, WAIT);
  await page.waitForFunction(() => /^mode pg/.test((globalThis as unknown as Doc).document.querySelector('#queue-counts')?.textContent ?? ''), undefined, WAIT);
  items = await list();
  assert.equal(items.get('far')?.stateUnknown, null);
  assert.equal(items.get('far')?.status, 'connected');

  // ---- `a` does not answer (a partition, or a node too slow): unknown once the view's deadline passed, not the
  // whole list held for a read's 30 s and then refused; `b`'s own instance is shown meanwhile as it is
  await proxyA.cut('blackhole');
  const t0 = performance.now();
  items = await list();
  const waited = performance.now() - t0;
  assert.ok(waited >= VIEW_DEADLINE_MS - 100 && waited < VIEW_DEADLINE_MS + 5_000, `answered after ${waited} ms`);
  assert.deepEqual(items.get('far')?.stateUnknown, { node: 'a', reason: `did not answer within ${VIEW_DEADLINE_MS / 1000} s` });
  assert.equal(items.get('far')?.status, null);
  assert.equal(items.get('near')?.status, 'connected');
  await page.waitForSelector(`${farRow}[data-status="unknown"]`, WAIT);
  assert.match((await page.textContent(`${farRow} .detail`)) ?? '', /^state and queue unknown: node a, which runs it, did not answer within 5 s$/);
  await saveScreenshot(page, 'console-unreachable-silent.png');
  await proxyA.restore();

  // ---- `a` goes away (its instance handed over): `b` runs it, and says so
  await proxyA.cut('refuse');
  await a.stop();
  nodes.delete('a');
  await waitFor(async () => (await owner(far)) === 'b', 'far taken over by b', 4_000);
  await page.waitForFunction((sel) => (globalThis as unknown as Doc).document.querySelector(sel)?.textContent === 'connected', `${farRow} .status`, WAIT);
  items = await list();
  assert.equal(items.get('far')?.node, 'b');
  assert.equal(items.get('far')?.stateUnknown, null);
  assert.deepEqual(problems, []);
});

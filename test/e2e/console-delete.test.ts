/**
 * Deleting an instance from the console of a node that does not run it, in real Chromium (playwright-core driving
 * Debian's chromium): the gateway has the owner finish a send in flight first (src/cluster/wiring.ts
 * drainAtOwner), and refuses the delete, nothing deleted, when the owner cannot be reached (502
 * INSTANCE_UNREACHABLE). The console must say which: while the delete waits, the row says it waits for the node
 * that runs the instance to finish its send; on the 502, that nothing was deleted and why.
 *
 * Two gateway nodes in this process on one real PostgreSQL (CLUSTER_SECRET, short leases), one simulated clock
 * for both (the send's deadline; leases run on real time), the sandbox network in a server of its own. Node `a`
 * runs the instances and is reached by the other node through a TCP proxy (its NODE_URL) the test can cut; the
 * console is node `b`'s. Screenshots: console-delete-{waiting,refused}.png, in a temporary directory
 * (test/helpers/screenshots.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Page } from 'playwright-core';
import type { Gateway } from '../../src/gateway.js';
import { NEEDS_SERVER } from '../helpers/db.js';
import { ADMIN_TOKEN, settle, waitFor } from '../helpers/gateway.js';
import { CHROME, NO_CHROME } from '../helpers/chromium.js';
import { twoNodes } from '../helpers/two-nodes.js';
import { saveScreenshot } from '../helpers/screenshots.js';

const SETTINGS = { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null };
const RECIPIENT = '4915112340044';
const WAIT = { timeout: 20_000 };
type Doc = { document: { querySelector(s: string): { textContent: string } | null; getElementById(id: string): { textContent: string } } };

test('console, delete through a node that does not run the instance: it says it waits for the owner to finish its send; on 502, that nothing was deleted and why', { skip: NO_CHROME ?? NEEDS_SERVER.skip }, async (t) => {
  const { clock, db, sandbox, proxyA, nodes, b, admin, owner } = await twoNodes(t, 'console_delete');
  /** simulated time on by `ms`, then the I/O it set off a few real turns to run */
  const step = async (ms: number) => {
    clock.increment(ms);
    await settle();
    await new Promise((r) => setTimeout(r, 10));
  };
  const exists = async (id: string) => (await db.pool.query('SELECT 1 FROM instances WHERE id = $1', [id])).rowCount === 1;
  /** an instance linked on the sandbox and running connected on node `a` */
  const instanceOnA = async (name: string, phone: string) => {
    const created = await admin('POST', '/admin/v1/instances', { name, driver: 'sandbox', settings: SETTINGS });
    assert.equal(created.status, 201, created.text);
    const data = (JSON.parse(created.text) as { data: { instance: { id: string }; apiKey: string } }).data;
    const id = data.instance.id;
    sandbox.network.link(id, { phoneNumber: phone });
    const moved = await admin('POST', `/admin/v1/instances/${id}/move`, { node: 'a' });
    assert.ok(moved.status === 200 || moved.status === 202, moved.text);
    await waitFor(async () => (await owner(id)) === 'a' && (nodes.get('a') as Gateway).actors.view(id).connected, `${name} connected on a`, 4_000);
    return { id, apiKey: data.apiKey };
  };

  const browser = await chromium.launch({ executablePath: CHROME, args: ['--no-sandbox'], headless: true });
  t.after(() => browser.close());
  const page: Page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  const deletes: number[] = [];
  page.on('response', (r) => {
    if (r.request().method() === 'DELETE' && /\/admin\/v1\/instances\/[^/]+$/.test(new URL(r.url()).pathname)) deletes.push(r.status());
  });
  await page.goto(`${b.url}/console`);
  await page.fill('#token', ADMIN_TOKEN);
  await page.click('#sign-in-form button[type=submit]');
  await page.waitForSelector('#app:not([hidden])', WAIT);

  // ---- a send in flight on `a` (the network takes it and does not answer: the call ends at its deadline)
  const busy = await instanceOnA('busy', '4915550410001');
  sandbox.network.addNextCallFault(busy.id, { kind: 'hang' });
  const sent = await fetch(`${b.url}/api/v2/send-message`, {
    method: 'POST',
    headers: { authorization: `Bearer ${busy.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ phone: RECIPIENT, message: 'in flight at the delete' }),
  });
  assert.equal(sent.status, 202, await sent.text());
  const sending = async () =>
    (await db.pool.query<{ state: string }>("SELECT state FROM jobs WHERE instance_id = $1 AND state = 'sending'", [busy.id])).rowCount === 1;
  for (let i = 0; i < 40 && !(await sending()); i++) await step(200);
  assert.ok(await sending(), 'the send is in flight');
  const row = 'tr[data-name="busy"]';
  await page.waitForSelector(`${row} td.queue:text("sending 1")`, WAIT);

  // ---- delete through `b`: the owner finishes the send first, and the row says the delete waits for it
  await page.click(`${row} button:text("Delete")`);
  await page.click('#confirm-ok');
  await page.waitForFunction((sel) => /waiting for node a/.test((globalThis as unknown as Doc).document.querySelector(sel)?.textContent ?? ''), `${row} .note`, WAIT);
  const note = (await page.textContent(`${row} .note`)) ?? '';
  assert.match(note, /waiting for node a, which runs it, to finish a send in flight/, note);
  assert.match(note, /nothing is deleted/, note);
  assert.deepEqual(deletes, [], 'the delete is still waiting while the row says so');
  assert.equal(await page.isDisabled(`${row} button:text("Delete")`), true, 'no second delete while one waits');
  assert.equal(await exists(busy.id), true);
  await saveScreenshot(page, 'console-delete-waiting.png');
  // the call's deadline (simulated) ends the send; its outcome written, the owner answers and the delete goes on
  for (let i = 0; i < 400 && deletes.length === 0; i++) await step(500);
  assert.deepEqual(deletes, [200]);
  await page.waitForSelector(row, { state: 'detached', timeout: WAIT.timeout });
  assert.equal(await page.textContent('#app-error'), '');
  assert.equal(await exists(busy.id), false);

  // ---- the owner cannot be reached (connections to it refused): 502, and the console says nothing was deleted, and why
  const cut = await instanceOnA('cut-off', '4915550410002');
  const cutRow = 'tr[data-name="cut-off"]';
  await page.waitForSelector(cutRow, WAIT);
  await proxyA.cut('refuse');
  await page.click(`${cutRow} button:text("Delete")`);
  await page.click('#confirm-ok');
  await page.waitForFunction(() => (globalThis as unknown as Doc).document.getElementById('app-error').textContent !== '', undefined, WAIT);
  assert.deepEqual(deletes, [200, 502]);
  const shown = (await page.textContent('#app-error')) ?? '';
  assert.match(shown, /^Delete cut-off: nothing was deleted\./, shown);
  assert.match(shown, /Node a, which runs it, could not be reached/, shown);
  assert.match(shown, /try again/i, shown);
  await saveScreenshot(page, 'console-delete-refused.png');
  assert.equal(await exists(cut.id), true, 'nothing was deleted');
  assert.equal(await page.isVisible(cutRow), true, 'the row stays');
  assert.equal((await page.textContent(`${cutRow} .note`)) ?? '', '', 'no longer deleting');
  assert.equal(await page.isDisabled(`${cutRow} button:text("Delete")`), false, 'the delete can be tried again');

  // ---- the owner reachable again: the same delete goes through
  await proxyA.restore();
  await page.click(`${cutRow} button:text("Delete")`);
  await page.click('#confirm-ok');
  await page.waitForSelector(cutRow, { state: 'detached', timeout: WAIT.timeout });
  assert.deepEqual(deletes, [200, 502, 200]);
  assert.equal(await page.textContent('#app-error'), '');
  assert.equal(await exists(cut.id), false);
  assert.deepEqual(problems, []);
});

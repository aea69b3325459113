/**
 * The operator console end to end in real Chromium (playwright-core driving Debian's chromium) against a real
 * gateway: sign in with the admin token (an HttpOnly cookie the page cannot read), create an instance (the key
 * shown once) and see its QR, link it through the sandbox while the QR is shown and see the status turn
 * connected over the event stream, a settings change refused with the server's message and then saved, the key
 * rotated (shown once), send through the API and see the job counted as sent, a change without
 * `X-Console: 1` refused, delete behind the confirmation dialog, sign out. Screenshots: console-*.png, in a
 * temporary directory (docs/screenshots/ with UPDATE_SCREENSHOTS=1; test/helpers/screenshots.ts).
 * Nothing is asked of any host but the gateway.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Page } from 'playwright-core';
import { startTestGateway } from '../helpers/gateway.js';
import { saveScreenshot } from '../helpers/screenshots.js';
import { CHROME, NEEDS_CHROME } from '../helpers/chromium.js';
import { CONSOLE_COOKIE } from '../../src/console/index.js';

const RECIPIENT = '4915112340042';
const PHONE = '4915112349001';
const WAIT = { timeout: 20_000 };
const shot = (page: Page, name: string) => saveScreenshot(page, `console-${name}.png`, { fullPage: true });

test('the operator console in Chromium: sign in, create, link with the QR shown, live status, send, delete, sign out', NEEDS_CHROME, async (t) => {
  const gw = await startTestGateway({ label: 'console' });
  t.after(() => gw.stop());
  if (!gw.gw.routes.some((r) => r.path === '/console')) {
    t.skip('the console is not mounted in src/gateway.ts yet (the wiring: src/console/index.ts)');
    return;
  }
  const browser = await chromium.launch({ executablePath: CHROME, args: ['--no-sandbox'], headless: true });
  t.after(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 1180, height: 820 } });
  const page = await context.newPage();
  const origin = new URL(gw.url).origin;
  const foreign: string[] = [];
  const problems: string[] = [];
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(origin) && !u.startsWith('data:')) foreign.push(u);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    // the refusals below (400 for bad settings, 403 without X-Console, 401 after signing out) are asked on purpose
    if (m.type() === 'error' && !/status of 40[013]/.test(m.text())) problems.push(`console: ${m.text()}`);
  });

  // ---- sign in: a wrong token is refused with a message, the right one opens the console
  await page.goto(`${gw.url}/console`);
  await page.waitForSelector('#sign-in:not([hidden])', WAIT);
  await page.fill('#token', 'not-the-admin-token-0000');
  await page.click('#sign-in-form button[type=submit]');
  await page.waitForFunction(() => (globalThis as unknown as { document: { getElementById(id: string): { textContent: string } } }).document.getElementById('sign-in-error').textContent.includes('not the admin token'), undefined, WAIT);
  await page.fill('#token', gw.adminToken);
  await shot(page, 'sign-in');
  await page.click('#sign-in-form button[type=submit]');
  await page.waitForSelector('#app:not([hidden])', WAIT);
  await page.waitForSelector('#live:text("live")', WAIT);

  // the session is an HttpOnly, SameSite=Strict cookie: the page cannot read it, the token is nowhere in the page
  assert.equal(await page.evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie), '');
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === CONSOLE_COOKIE);
  assert.ok(session, 'session cookie set');
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, 'Strict');
  assert.equal(session.path, '/');
  assert.notEqual(session.value, gw.adminToken);
  assert.ok(!(await page.content()).includes(gw.adminToken), 'the token is not left in the page');
  assert.equal(
    await page.evaluate(() => JSON.stringify((globalThis as unknown as { localStorage: { length: number } }).localStorage.length)),
    '0',
  );

  // ---- create: the key is shown once, the QR of the new instance appears
  await page.fill('#create-name', 'shop');
  await page.click('#create-form button[type=submit]');
  await page.waitForSelector('#new-key:not([hidden])', WAIT);
  const apiKey = (await page.textContent('#new-key-value')) ?? '';
  assert.match(apiKey, /^wapi_shop_/);
  const row = 'tr[data-name="shop"]';
  await page.waitForSelector(`${row}[data-status="waiting_qr"]`, WAIT);
  await page.waitForSelector('#qr:not([hidden])', WAIT);
  assert.match((await page.getAttribute('#qr', 'src')) ?? '', /^data:image\/png;base64,/);
  await shot(page, 'qr');
  await page.click('#new-key-done');
  assert.equal(await page.textContent('#new-key-value'), '', 'the key is gone from the page once dismissed');

  // ---- link through the sandbox while the QR is shown: the status turns connected live
  const id = (await page.getAttribute(row, 'data-id')) ?? '';
  assert.match(id, /.+/);
  const linked = await gw.admin('POST', `/sandbox/v1/instances/${id}/link`, { phoneNumber: PHONE });
  assert.ok(linked.status < 300, linked.text);
  await page.waitForSelector(`${row}[data-status="connected"]`, WAIT);
  await page.waitForSelector('#qr[hidden]', WAIT);
  assert.match((await page.textContent('#link-status')) ?? '', /Linked/);
  assert.equal(await page.textContent(`${row} td:nth-child(3)`), `+${PHONE}`);

  await page.click('#link-close');

  // ---- settings: the server's validation message is shown; a valid change is saved
  await page.click(`${row} button:text("Settings")`);
  await page.waitForSelector('#settings:not([hidden])', WAIT);
  assert.match((await page.inputValue('#settings-json')) ?? '', /"minDelayMs"/);
  await page.fill('#settings-json', JSON.stringify({ minDelayMs: 5000, maxDelayMs: 100 }));
  await page.click('#settings-form button[type=submit]');
  await page.waitForSelector('#settings-error:text("maxDelayMs must be at least minDelayMs")', WAIT);
  assert.match((await page.textContent('#settings-error')) ?? '', /^settings\.maxDelayMs/);
  await shot(page, 'settings');
  await page.fill('#settings-json', JSON.stringify({ minDelayMs: 0, maxDelayMs: 0, quietHours: null }));
  await page.click('#settings-form button[type=submit]');
  await page.waitForSelector('#settings-saved:text("Saved.")', WAIT);
  const stored = (await gw.admin('GET', `/admin/v1/instances/${id}`)).body.data?.settings as { minDelayMs?: number; quietHours?: unknown };
  assert.equal(stored.minDelayMs, 0);
  assert.equal(stored.quietHours, null);
  await page.click('#settings-close');

  // ---- rotate the key behind the dialog: the new key is shown once, the old one stops working
  await page.click(`${row} button:text("Rotate key")`);
  await page.click('#confirm-ok');
  await page.waitForFunction((old) => {
    const el = (globalThis as unknown as { document: { getElementById(id: string): { textContent: string } } }).document.getElementById('new-key-value');
    return el.textContent.startsWith('wapi_shop_') && el.textContent !== old;
  }, apiKey, WAIT);
  const rotated = (await page.textContent('#new-key-value')) ?? '';
  await page.click('#new-key-done');
  assert.equal((await gw.api(apiKey, 'GET', '/api/status')).status, 401, 'the old key stops working');

  // ---- send through the API: the row counts the job as sent
  const sent = await gw.api(rotated, 'POST', '/api/v2/send-message', { phone: RECIPIENT, message: 'hello from the console test' });
  assert.equal(sent.status, 202, sent.text);
  await page.waitForSelector(`${row} td.queue:text("sent 1")`, WAIT);
  await shot(page, 'instances');

  // ---- a change by cookie without X-Console: 1 is refused (CSRF); with it, it passes
  const csrf = await page.evaluate(async (u) => {
    const bare = await fetch(u, { method: 'POST', credentials: 'same-origin' });
    const marked = await fetch(u, { method: 'POST', credentials: 'same-origin', headers: { 'X-Console': '1' } });
    return [bare.status, marked.status];
  }, `/admin/v1/instances/${id}/restart`);
  assert.deepEqual(csrf, [403, 202]);

  // ---- delete behind the dialog: cancel keeps the instance, confirm removes it
  await page.click(`${row} button:text("Delete")`);
  await page.waitForSelector('#confirm[open]', WAIT);
  assert.match((await page.textContent('#confirm-text')) ?? '', /Delete shop\?/);
  await shot(page, 'confirm-delete');
  await page.click('#confirm button[value=cancel]');
  await page.waitForSelector('#confirm', { state: 'hidden', timeout: WAIT.timeout });
  assert.equal((await gw.admin('GET', `/admin/v1/instances/${id}`)).status, 200);
  await page.click(`${row} button:text("Delete")`);
  await page.click('#confirm-ok');
  await page.waitForSelector(row, { state: 'detached', timeout: WAIT.timeout });
  assert.equal((await gw.admin('GET', `/admin/v1/instances/${id}`)).status, 404);

  // ---- a key shown once and not dismissed yet goes with the sign-out (found from the outside: a rotated key was
  // shown again to whoever signed in next in the same tab)
  await page.fill('#create-name', 'left');
  await page.click('#create-form button[type=submit]');
  await page.waitForSelector('#new-key:not([hidden])', WAIT);

  // ---- sign out: the session is gone on the server too
  await page.click('#sign-out');
  await page.waitForSelector('#sign-in:not([hidden])', WAIT);
  assert.equal(await page.isHidden('#new-key'), true);
  assert.equal(await page.textContent('#new-key-value'), '', 'the key is not left in the page');
  const after = await page.evaluate(async () => [(await fetch('/admin/v1/instances')).status, (await fetch('/console/events')).status]);
  assert.deepEqual(after, [401, 401]);
  assert.equal((await context.cookies()).find((c) => c.name === CONSOLE_COOKIE)?.value ?? '', '');

  assert.deepEqual(foreign, [], 'the console asks no other host');
  assert.deepEqual(problems, []);
});

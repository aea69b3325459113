/**
 * The console in Chromium when a call is refused 401 because its session ended where the page did not hear of it
 * (another node of a cluster answered, whose memory has no such session; found from the outside: after a fail-over
 * the page stayed "live" while every action was refused, with no way back to the sign-in form but Sign out). The
 * refusal is that node's answer, played here by the browser's own interception of one call: the page shows the
 * sign-in form with the server's reason. Sign-out works with a cookie no session has (it is cleared).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { startTestGateway } from '../helpers/gateway.js';
import { CHROME, NEEDS_CHROME } from '../helpers/chromium.js';
import { CONSOLE_COOKIE } from '../../src/console/index.js';
import { SESSION_ENDED } from '../../src/console/auth.js';

const WAIT = { timeout: 20_000 };

test('a call refused 401 brings the sign-in form with the reason; sign-out clears a cookie no session has', NEEDS_CHROME, async (t) => {
  const gw = await startTestGateway({ label: 'console_ended' });
  t.after(() => gw.stop());
  const browser = await chromium.launch({ executablePath: CHROME, args: ['--no-sandbox'], headless: true });
  t.after(() => browser.close());
  const context = await browser.newContext();
  const page = await context.newPage();
  const signIn = async () => {
    await page.goto(`${gw.url}/console`);
    await page.waitForSelector('#sign-in:not([hidden])', WAIT);
    await page.fill('#token', gw.adminToken);
    await page.click('#sign-in-form button[type=submit]');
    await page.waitForSelector('#app:not([hidden])', WAIT);
  };
  await signIn();

  // the next create is answered as a node that does not know the session answers it
  await page.route('**/admin/v1/instances', (route) =>
    route.request().method() === 'POST'
      ? route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ success: false, error: SESSION_ENDED, code: 'UNAUTHORIZED', data: {} }) })
      : route.continue());
  await page.fill('#create-name', 'refused');
  await page.click('#create-form button[type=submit]');
  await page.waitForSelector('#sign-in:not([hidden])', WAIT);
  assert.equal(await page.textContent('#sign-in-error'), SESSION_ENDED);
  assert.equal(await page.isHidden('#app'), true);
  await page.unroute('**/admin/v1/instances');

  // signed in again through the form shown, then a cookie no session has (as another node's): Sign out clears it
  await page.fill('#token', gw.adminToken);
  await page.click('#sign-in-form button[type=submit]');
  await page.waitForSelector('#app:not([hidden])', WAIT);
  const cookie = (await context.cookies()).find((c) => c.name === CONSOLE_COOKIE);
  assert.ok(cookie?.value);
  await context.addCookies([{ ...cookie, value: 'A'.repeat(43) }]);
  await page.click('#sign-out');
  await page.waitForSelector('#sign-in:not([hidden])', WAIT);
  assert.equal(await page.textContent('#sign-in-error'), 'Signed out.');
  assert.equal((await context.cookies()).find((c) => c.name === CONSOLE_COOKIE)?.value ?? '', '', 'the cookie is cleared');
});

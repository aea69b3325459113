/**
 * The console's Queue, Webhook and Diagrams panels end to end in real Chromium (playwright-core driving
 * Debian's chromium) against a real gateway on a simulated clock (the test moves time for the dispatcher and
 * the webhook retries, so nothing waits for real backoff): sign in, create an instance and link it through the
 * sandbox, the instance diagram with `connected` highlighted live (/debug/actors/stream), a message sent through
 * the API seen `sent` in the queue panel and in the job diagram, a scheduled job cancelled and requeued from the
 * panel, a webhook refused with the server's message and then saved (the secret never shown back), its delivery
 * to a local receiver that fails seen `failed` with its attempts, the receiver fixed and Redeliver pressed: the
 * delivery `delivered` with the attempts of both rounds. Screenshots: console-{queue,webhook,diagrams}.png, in a
 * temporary directory (docs/screenshots/ with UPDATE_SCREENSHOTS=1; test/helpers/screenshots.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Page } from 'playwright-core';
import { startTestGateway } from '../helpers/gateway.js';
import { saveScreenshot } from '../helpers/screenshots.js';
import { CHROME, NEEDS_CHROME } from '../helpers/chromium.js';

const RECIPIENT = '4915112340043';
const PHONE = '4915112349002';
const SECRET = 'console-panels-webhook-secret-0123';
/** a credential in the receiver's query string: delivered with every event, never shown in the page */
const HOOK_TOKEN = 'console-panels-hook-token-4567';
/** and one in its path, as Slack's and Discord's URLs carry theirs */
const PATH_TOKEN = 'Pz7kQ2mX9vL4nR8sT1wY';
const WAIT = { timeout: 20_000 };
const shot = (page: Page, name: string) => saveScreenshot(page, `console-${name}.png`, { fullPage: true });
type Doc = { document: { getElementById(id: string): { textContent: string } } };

test('the console panels in Chromium: queue (sent, cancel, requeue), webhook (failed, redeliver, delivered), live state diagrams', NEEDS_CHROME, async (t) => {
  const gw = await startTestGateway({ label: 'console_panels', simulated: true });
  t.after(() => gw.stop());
  let answer = 500;
  const hits: string[] = [];
  const paths: string[] = [];
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits.push(String(req.headers['x-event-id']));
      paths.push(req.url ?? '');
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  t.after(() => new Promise((r) => receiver.close(r)));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook/${PATH_TOKEN}?token=${HOOK_TOKEN}`;

  const browser = await chromium.launch({ executablePath: CHROME, args: ['--no-sandbox'], headless: true });
  t.after(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    // the webhook refusal (400) and the GET of a webhook not yet configured (404) are asked on purpose
    if (m.type() === 'error' && !/status of 40[04]/.test(m.text())) problems.push(`console: ${m.text()}`);
  });

  // ---- sign in, create, link through the sandbox
  await page.goto(`${gw.url}/console`);
  await page.fill('#token', gw.adminToken);
  await page.click('#sign-in-form button[type=submit]');
  await page.waitForSelector('#app:not([hidden])', WAIT);
  await page.fill('#create-name', 'panels');
  await page.click('#create-form button[type=submit]');
  await page.waitForSelector('#new-key:not([hidden])', WAIT);
  const apiKey = (await page.textContent('#new-key-value')) ?? '';
  await page.click('#new-key-done');
  await page.click('#link-close');
  const row = 'tr[data-name="panels"]';
  const id = (await page.getAttribute(row, 'data-id')) ?? '';
  const fast = await gw.admin('PATCH', `/admin/v1/instances/${id}`, { settings: { quietHours: null, minDelayMs: 0, maxDelayMs: 0 } });
  assert.equal(fast.status, 200, fast.text);
  await page.waitForSelector(`${row}[data-status="waiting_qr"]`, WAIT);

  // ---- the instance diagram, live: waiting_qr, then connected once linked
  await page.click(`${row} button:text("Diagrams")`);
  await page.waitForSelector('#diagram-instance [data-state="active.lifecycle.running.connection.waiting_qr"].active', WAIT);
  assert.ok(await page.$('#diagram-instance [data-state="active.pause"].sc-parallel, #diagram-instance [data-state="active"].sc-parallel'), 'the parallel state is drawn as one');
  const linked = await gw.admin('POST', `/sandbox/v1/instances/${id}/link`, { phoneNumber: PHONE });
  assert.ok(linked.status < 300, linked.text);
  await page.waitForSelector(`${row}[data-status="connected"]`, WAIT);
  await page.waitForSelector('#diagram-instance [data-state="active.lifecycle.running.connection.connected"].active', WAIT);
  assert.equal(await page.$('#diagram-instance [data-state="active.lifecycle.running.connection.waiting_qr"].active'), null, 'waiting_qr no longer highlighted');
  assert.match((await page.textContent('#diagram-instance-state')) ?? '', /active\.lifecycle\.running\.connection\.connected\.(settling|steady) \+ active\.pause\.idle/);
  // transitions are drawn with their events
  assert.match((await page.textContent('#diagram-instance [data-state="active.lifecycle.running.connection"]')) ?? '', /ready → connected/);

  // ---- a message sent through the API: `sent` in the queue panel
  const sent = await gw.api(apiKey, 'POST', '/api/v2/send-message', { phone: RECIPIENT, message: 'hello from the panels test' });
  assert.equal(sent.status, 202, sent.text);
  const jobId = String(sent.body.data?.jobId);
  await gw.advanceUntil(async () => (await gw.api(apiKey, 'GET', `/api/v2/messages/${jobId}`)).body.data?.state === 'sent', 'the job sent', { stepMs: 1_000, maxMs: 120_000 });
  await page.click(`${row} button:text("Queue")`);
  await page.waitForSelector(`#queue-items tr[data-job="${jobId}"][data-state="sent"]`, WAIT);
  assert.match((await page.textContent(`#queue-items tr[data-job="${jobId}"]`)) ?? '', new RegExp(`\\+${RECIPIENT}`));
  await page.waitForSelector('#queue-counts:text("sent 1")', WAIT);

  // the job diagram shows the chosen job's state
  await page.click(`#queue-items tr[data-job="${jobId}"] button:text("Diagram")`);
  await page.waitForSelector('#diagram-job [data-state="sent"].active', WAIT);
  assert.match((await page.textContent('#diagram-job-state')) ?? '', new RegExp(`${jobId}: sent`));
  await page.$eval('#diagrams', (el) => (el as unknown as { scrollIntoView(): void }).scrollIntoView());
  await shot(page, 'diagrams');
  await page.click('#diagrams-close');

  // ---- a scheduled job: cancelled, then requeued (a new job, sent at once) from the panel
  const later = new Date(gw.clock.now() + 6 * 3_600_000).toISOString();
  const scheduled = await gw.api(apiKey, 'POST', '/api/v2/send-message', { phone: RECIPIENT, message: 'later', notBefore: later });
  assert.equal(scheduled.status, 202, scheduled.text);
  const waiting = String(scheduled.body.data?.jobId);
  const waitingRow = `#queue-items tr[data-job="${waiting}"]`;
  await page.waitForSelector(`${waitingRow}[data-state="scheduled"]`, WAIT);
  assert.equal(await page.$(`${waitingRow} button:text("Requeue")`), null, 'a waiting job cannot be requeued');
  // the operator's re-plan: the one waiting job keeps its slot (its notBefore)
  await page.click('#queue-replan');
  await page.waitForSelector('#queue-note:text("Re-planned: 0 jobs moved.")', WAIT);
  await page.click(`${waitingRow} button:text("Cancel")`);
  await page.waitForSelector(`${waitingRow}[data-state="cancelled"]`, WAIT);
  await page.click(`${waitingRow} button:text("Requeue")`);
  await page.waitForSelector('#queue-note:text("Requeued")', WAIT);
  const note = (await page.textContent('#queue-note')) ?? '';
  const requeued = /as (wq_\S+?)\.$/.exec(note)?.[1] ?? '';
  assert.ok(requeued, note);
  await gw.advanceUntil(async () => (await gw.api(apiKey, 'GET', `/api/v2/messages/${requeued}`)).body.data?.state === 'sent', 'the requeued job sent', { stepMs: 1_000, maxMs: 120_000 });
  await page.waitForSelector(`#queue-items tr[data-job="${requeued}"][data-state="sent"]`, WAIT);
  await shot(page, 'queue');
  await page.click('#queue-close');

  // ---- the webhook: the server's refusal shown, then saved; the secret is never shown back
  await page.click(`${row} button:text("Webhook")`);
  await page.waitForSelector('#webhook-state:text("No webhook configured.")', WAIT);
  await page.fill('#webhook-url', receiverUrl);
  await page.fill('#webhook-secret', SECRET);
  await page.fill('#webhook-events', 'test');
  await page.click('#webhook-form button[type=submit]');
  await page.waitForSelector('#webhook-error:not(:empty)', WAIT);
  assert.match((await page.textContent('#webhook-error')) ?? '', /^url/, 'the refusal names its field');
  await page.check('#webhook-private');
  await page.fill('#webhook-secret', SECRET);
  await page.click('#webhook-form button[type=submit]');
  await page.waitForSelector('#webhook-saved:text("Saved.")', WAIT);
  assert.equal(await page.inputValue('#webhook-secret'), '', 'the secret field is empty after saving');
  assert.ok(!(await page.content()).includes(SECRET), 'the secret is nowhere in the page');
  // the URL is shown masked, and not in the field, where a save would store the masks in its place
  assert.equal(await page.inputValue('#webhook-url'), '', 'a URL shown masked is not kept in the field');
  assert.match((await page.getAttribute('#webhook-url', 'placeholder')) ?? '', /^http:\/\/127\.0\.0\.1:\d+\/hook\/\*\*\*\?token=\*\*\* /);
  assert.ok(!(await page.content()).includes(HOOK_TOKEN), 'the query token is nowhere in the page');
  assert.ok(!(await page.content()).includes(PATH_TOKEN), 'the path token is nowhere in the page');

  // a delivery to the failing receiver: failed after its three attempts
  await page.click('#webhook-test');
  await page.waitForSelector('#webhook-saved:text("Test event")', WAIT);
  const eventId = /(ev_\w+)/.exec((await page.textContent('#webhook-saved')) ?? '')?.[1] ?? '';
  assert.ok(eventId);
  const delivery = async () => {
    const r = await gw.admin('GET', `/admin/v1/instances/${id}/webhook/deliveries`);
    return (r.body.data?.items as { eventId: string; state: string; attempts: number }[]).find((d) => d.eventId === eventId);
  };
  await gw.advanceUntil(async () => (await delivery())?.state === 'failed', 'the delivery failed', { stepMs: 1_000, maxMs: 60_000 });
  const drow = `#deliveries-body tr[data-event="${eventId}"]`;
  await page.waitForSelector(`${drow}[data-state="failed"]`, WAIT);
  assert.equal((await page.$$(`${drow} ol.attempts li.bad`)).length, 3);
  assert.match((await page.textContent(`${drow} ol.attempts`)) ?? '', /#1 500 HTTP 500/);
  assert.equal(await page.textContent(`${drow} td.attempt-count`), '3/3');

  // the receiver fixed, Redeliver: delivered, the attempts of both rounds listed
  answer = 204;
  await page.click(`${drow} button:text("Redeliver")`);
  await page.waitForSelector('#webhook-saved:text("pending again")', WAIT);
  await gw.advanceUntil(async () => (await delivery())?.state === 'delivered', 'the redelivery delivered', { stepMs: 1_000, maxMs: 60_000 });
  await page.waitForSelector(`${drow}[data-state="delivered"]`, WAIT);
  assert.equal((await page.$$(`${drow} ol.attempts li`)).length, 4);
  assert.match((await page.textContent(`${drow} ol.attempts li.good`)) ?? '', /^#4 204/);
  assert.equal(await page.textContent(`${drow} td.attempt-count`), '4/6');
  assert.deepEqual([...new Set(hits)], [eventId], 'the receiver got the same event id every time');
  assert.deepEqual([...new Set(paths)], [`/hook/${PATH_TOKEN}?token=${HOOK_TOKEN}`], 'delivered to the URL as saved, its tokens included');
  await shot(page, 'webhook');

  // ---- sign out: the panels close with the session
  await page.click('#sign-out');
  await page.waitForSelector('#sign-in:not([hidden])', WAIT);
  assert.equal(await page.isHidden('#webhook'), true);
  assert.deepEqual(problems, []);
});

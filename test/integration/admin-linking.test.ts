/**
 * Linking for operators (issue 17 item 2) against a real gateway and the in-process sandbox: the admin QR route
 * while the instance waits for a scan and after it linked, the pairing-code route answering the code (the
 * webhook gets it too, no log line does), and the CLI verbs `mgw qr` and `mgw pair` against the same gateway.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { startStubServer, type StubServer } from '../helpers/stub-http.js';
import { formatCode, qrText } from '../../src/cli/link.js';

const run = promisify(execFile);
const MGW = fileURLToPath(new URL('../../bin/mgw.js', import.meta.url));
const PHONE = '4915100004242';
const PNG_DATA_URL = /^data:image\/png;base64,[A-Za-z0-9+/]+=*$/;

const logLines: string[] = [];
let t: TestGateway;
let hook: StubServer;

before(async () => {
  t = await startTestGateway({ label: 'admin_linking', env: { WEBHOOK_ALLOW_PRIVATE: 'true' }, logLines });
  hook = await startStubServer(() => ({ status: 200, body: { ok: true } }));
});
after(async () => {
  await t.stop();
  await hook.close();
});

async function mgw(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const env = { ...process.env, MGW_URL: t.url, ADMIN_TOKEN: t.adminToken };
  try {
    const { stdout, stderr } = await run(process.execPath, [MGW, ...args], { env, timeout: 30_000 });
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number };
    return { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: typeof e.code === 'number' ? e.code : -1 };
  }
}

/** The `code` events the webhook receiver got, newest last. */
const codesDelivered = () =>
  hook.requests
    .map((r) => JSON.parse(r.body) as { event: string; data: { code?: string } })
    .filter((b) => b.event === 'code')
    .map((b) => b.data.code);

test('QR while waiting, pairing code to the operator and the webhook, nulls once linked; CLI qr and pair', async () => {
  const { instance } = await t.createInstance('linking', { link: false });
  const id = instance.id;
  assert.equal((await t.admin('PUT', `/admin/v1/instances/${id}/webhook`, { url: `${hook.url}/hook`, secret: 'linking-hook-secret-0123456789', events: ['code'] })).status, 200);

  // waiting for a scan: the PNG and the raw string (the sandbox's raw QR is its token, as the phone scans it)
  const waiting = await waitFor(async () => {
    const r = await t.admin('GET', `/admin/v1/instances/${id}/qr`);
    return r.body.data?.qr ? r : null;
  }, 'a QR on the admin route');
  assert.equal(waiting.status, 200);
  assert.equal(waiting.headers.get('cache-control'), 'no-store');
  assert.equal(waiting.body.data?.status, 'waiting_qr');
  assert.match(String(waiting.body.data?.qr), PNG_DATA_URL);
  assert.equal(typeof waiting.body.data?.raw, 'string');
  const sandboxQr = await t.admin('GET', `/sandbox/v1/instances/${id}/qr`);
  assert.equal(sandboxQr.headers.get('cache-control'), 'no-store', 'the sandbox\'s QR is kept by no cache either');
  const shown = sandboxQr.body.data as { token: string; dataUrl: string };
  assert.equal(waiting.body.data?.raw, shown.token, 'the raw QR is what the driver gave');
  assert.equal(waiting.body.data?.qr, shown.dataUrl, 'drawn from it: the image the phone sees');
  assert.deepEqual(Object.keys(waiting.body.data ?? {}).sort(), ['qr', 'raw', 'status']);

  const cliQr = await mgw('qr', id);
  assert.equal(cliQr.code, 0, cliQr.stderr);
  assert.match(cliQr.stdout, /[█▀▄]/, 'the QR drawn in the terminal');
  assert.ok(!cliQr.stdout.includes('\x1b['), 'stdout a pipe, not a terminal: no ANSI colour codes in it');
  assert.ok(!cliQr.stdout.includes(shown.token), 'the drawing, not the token');

  // the pairing code: answered to the operator, sent to the webhook
  const paired = await t.admin('POST', `/admin/v1/instances/${id}/pairing-code`, { phoneNumber: PHONE });
  assert.equal(paired.status, 200, paired.text);
  assert.equal(paired.headers.get('cache-control'), 'no-store');
  const code = String(paired.body.data?.code);
  assert.match(code, /^[A-Z0-9]{8}$/);
  assert.equal(paired.body.data?.instanceId, id);
  assert.ok(!Number.isNaN(Date.parse(String(paired.body.data?.at))));
  await waitFor(() => codesDelivered().includes(code), 'the code webhook');

  // a pairing code replaces the QR: nothing to scan now
  const afterCode = await t.admin('GET', `/admin/v1/instances/${id}/qr`);
  assert.deepEqual(afterCode.body.data, { status: 'waiting_qr', qr: null, raw: null });

  // the CLI asks for a new one: the code newer than its request, as the phone shows it
  const cliPair = await mgw('pair', id, `+${PHONE}`);
  assert.equal(cliPair.code, 0, cliPair.stderr);
  const printed = /pairing code for instance \S+: ([A-Z0-9]{4})-([A-Z0-9]{4})/.exec(cliPair.stdout);
  assert.ok(printed, cliPair.stdout);
  const code2 = `${printed[1]}${printed[2]}`;
  assert.notEqual(code2, code);
  await waitFor(() => codesDelivered().includes(code2), 'the second code webhook');

  // the phone enters the code: linked, and the routes say so
  assert.ok((await t.admin('POST', `/sandbox/v1/instances/${id}/pairing/confirm`, { code: code2 })).status < 300);
  const linked = await waitFor(async () => {
    const r = await t.admin('GET', `/admin/v1/instances/${id}/qr`);
    return r.body.data?.status === 'connected' ? r : null;
  }, 'connected');
  assert.deepEqual(linked.body.data, { status: 'connected', qr: null, raw: null });
  const again = await t.admin('POST', `/admin/v1/instances/${id}/pairing-code`, { phoneNumber: PHONE });
  assert.equal(again.status, 409);
  assert.equal(again.body.code, 'CONFLICT');
  const cliLinked = await mgw('qr', id);
  assert.equal(cliLinked.code, 0);
  assert.match(cliLinked.stdout, /is connected: no QR to scan/);

  // unknown instance, a bad number: the envelope's refusal, exit code 1
  assert.equal((await t.admin('GET', '/admin/v1/instances/nope/qr')).status, 404);
  const bad = await mgw('pair', id, '12');
  assert.equal(bad.code, 1);
  assert.match(bad.stdout, /VALIDATION_FAILED/);

  // secrets never in a log line
  const log = logLines.join('');
  assert.ok(log.length > 0, 'the gateway logged something');
  for (const [what, secret] of [['pairing code', code], ['second pairing code', code2], ['raw QR', shown.token], ['QR image', shown.dataUrl.slice(22, 80)]] as const) {
    assert.ok(!log.includes(secret), `${what} never in a log line`);
  }
});

test('mgw qr draws a raw QR string in the terminal', async () => {
  const raw = '2@abcDEF123,ghiJKL456,mnoPQR789=,stuVWX0=';
  const text = await qrText('inst-1', { status: 'waiting_qr', qr: 'data:image/png;base64,AAAA', raw });
  assert.match(text, /[█▀▄]/);
  assert.ok(text.split('\n').length > 15, 'a QR drawing, many rows');
  assert.ok(!text.includes(raw), 'the drawing, not the string');
  assert.equal(formatCode('ABCD1234'), 'ABCD-1234');
  assert.match(await qrText('inst-1', { status: 'waiting_qr', qr: null, raw: null }), /no QR to scan \(none shown yet/);
});

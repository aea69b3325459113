/**
 * A pairing code whose request the driver fails: the operator's `POST /admin/v1/instances/:id/pairing-code` is
 * answered with that failure at once (500 WA_CALL_FAILED for a call that broke), not after the gateway's
 * deadline as `504 INSTANCE_TIMEOUT` "it may still come" (before: the instance recorded the failure in its
 * trace only, and the request waited out its 60 s for a code that could not come). The sandbox network runs as
 * its own server (`SANDBOX=<url>`, as `mgw sandbox` does) behind a proxy on real sockets that resets the
 * driver's calls on demand; a request after the proxy lets calls through again gets its code.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { startSandboxServer, type SandboxServer } from '../../src/http/sandbox-server.js';

let t: TestGateway;
let sandbox: SandboxServer;
let proxy: http.Server;
/** reset: every call of the driver (not its event stream) is reset on arrival */
let reset = false;
/** the next calls of the driver, one entry each: held this long, then reset or let through */
const held: Array<{ ms: number; then: 'reset' | 'pass' }> = [];

before(async () => {
  sandbox = await startSandboxServer({ port: 0, host: '127.0.0.1', statePath: null });
  const target = new URL(sandbox.url);
  proxy = http.createServer(async (req, res) => {
    const call = req.url?.startsWith('/rpc') === true && !req.url.startsWith('/rpc/events');
    const hold = call ? held.shift() : undefined;
    if (hold) await new Promise((resolve) => setTimeout(resolve, hold.ms));
    if (call && (hold ? hold.then === 'reset' : reset)) return void req.socket.resetAndDestroy();
    const onward = http.request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    onward.on('error', () => res.destroy());
    req.pipe(onward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  t = await startTestGateway({ label: 'pairfail', env: { SANDBOX: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` } });
});

after(async () => {
  await t?.stop();
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
  await sandbox?.close();
});

test('a pairing code request the network call fails is answered with the failure at once, not a 504 after the deadline', async () => {
  const { instance } = await t.createInstance('pairfail', { link: false });
  await waitFor(() => t.gw.actors.view(instance.id).status === 'waiting_qr', 'the instance waits to be linked');
  reset = true;
  const started = Date.now();
  const failed = await t.admin('POST', `/admin/v1/instances/${instance.id}/pairing-code`, { phoneNumber: '4915112345678' });
  const ms = Date.now() - started;
  reset = false;
  assert.equal(failed.status, 500, failed.text);
  assert.equal(failed.body.code, 'WA_CALL_FAILED', failed.text);
  assert.match(String(failed.body.error), /pairing code/, 'says what failed');
  assert.ok(ms < 15_000, `answered at once, not at the deadline (${ms} ms)`);
  // the calls go through again: the next request gets its code
  const paired = await t.admin('POST', `/admin/v1/instances/${instance.id}/pairing-code`, { phoneNumber: '4915112345678' });
  assert.equal(paired.status, 200, paired.text);
  assert.match(String((paired.body.data as { code?: unknown }).code), /^[A-Z0-9]{4}-?[A-Z0-9]{4}$/);
});

test('another request\'s failure does not answer a pairing code request whose own call brings a code', async () => {
  const { instance } = await t.createInstance('pairfail-two', { link: false });
  await waitFor(() => t.gw.actors.view(instance.id).status === 'waiting_qr', 'the instance waits to be linked');
  // the first request's call fails after 600 ms; the second's, sent meanwhile, goes through after 800 ms
  held.push({ ms: 600, then: 'reset' }, { ms: 800, then: 'pass' });
  const first = t.admin('POST', `/admin/v1/instances/${instance.id}/pairing-code`, { phoneNumber: '4915112345678' });
  await new Promise((resolve) => setTimeout(resolve, 200));
  const second = await t.admin('POST', `/admin/v1/instances/${instance.id}/pairing-code`, { phoneNumber: '4915112345678' });
  assert.equal(second.status, 200, `its own call brought a code; the first request's failure is not its answer: ${second.text}`);
  assert.match(String((second.body.data as { code?: unknown }).code), /^[A-Z0-9]{4}-?[A-Z0-9]{4}$/);
  const failed = await first;
  assert.equal(failed.status, 500, failed.text);
  assert.equal(failed.body.code, 'WA_CALL_FAILED', failed.text);
});

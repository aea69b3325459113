/**
 * An upload (POST /api/v2/media) whose body is cut off by its client is a client's fault, whatever cut it: a
 * reset, a close mid-body, or a body stalled past the request timeout. Found from the outside: Node fails the
 * request's stream with ECONNRESET ("aborted"), which reached the error boundary as it came and was taken for
 * PostgreSQL going away: logged 503 QUEUE_STORE_UNAVAILABLE, and a store probe for every such upload. Now it is
 * logged 400 as a JSON body cut the same way is (test/integration/body-abort.test.ts), no probe, no temp file
 * left in the media store. (A Content-Encoding on an upload is refused with 415 before a byte of the body is
 * read: test/integration/media-routes.test.ts.)
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { probePool } from '../../src/store/pool.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { answerClientErrors, serverOptions } from '../../src/http/client-error.js';

let g: TestGateway;
let key: string;
const logLines: string[] = [];
/** the gateway's own request handler behind a server whose request timeout is short (Node's default is 300 s) */
let slow: http.Server;
let probes = 0;

const B = 'mgwAbortBoundary01';
const head = Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
const whole = Buffer.concat([head, Buffer.alloc(40_000, 0x41), Buffer.from(`\r\n--${B}--\r\n`)]);
const chunk = (b: Buffer) => Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]);

before(async () => {
  // simulated: no periodic store probe runs, so every probe counted is one a request asked for
  g = await startTestGateway({ label: 'upabort', simulated: true, logLines });
  key = (await g.createInstance('up', { link: false })).apiKey;
  // the health probe asks on a connection of its own (src/store/pool.ts probePool)
  const pool = probePool(g.gw.pool) as unknown as { query: (...a: unknown[]) => unknown };
  const query = pool.query.bind(pool);
  pool.query = (...a: unknown[]) => {
    if (a[0] === 'SELECT 1') probes += 1;
    return query(...a);
  };
  const handler = g.gw.server?.listeners('request')[0] as http.RequestListener;
  slow = http.createServer({ ...serverOptions, requestTimeout: 200, headersTimeout: 200, connectionsCheckingInterval: 20 }, handler);
  answerClientErrors(slow);
  await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
});

after(async () => {
  slow.closeAllConnections();
  await new Promise<void>((resolve) => slow.close(() => resolve()));
  await g.stop();
});

/** The request line logged for `id`, once it is (the test's own deadline bounds the wait). */
async function logged(id: string): Promise<{ status?: number }> {
  for (;;) {
    const line = logLines
      .flatMap((c) => c.split('\n').filter(Boolean))
      .map((l) => JSON.parse(l) as { reqId?: string; status?: number; msg?: string })
      .find((l) => l.msg === 'request' && l.reqId === id);
    if (line) return line;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Files under the data directory's media folder whose name is a temp file's (`.<mediaId>.tmp`). */
async function tempFiles(): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (e.isDirectory()) await walk(path.join(dir, e.name));
      else if (e.name.endsWith('.tmp')) out.push(path.join(dir, e.name));
    }
  };
  await walk(path.join(g.dataDir, 'media'));
  return out;
}

/** Headers and the first bytes of a body, then `how`: a reset once the server has them, a FIN, or nothing. Resolves with what the client read. */
function upload(port: number, id: string, framing: string, first: Buffer, how: 'reset' | 'fin' | 'stall'): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`POST /api/v2/media HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nX-Request-Id: ${id}\r\nContent-Type: multipart/form-data; boundary=${B}\r\n${framing}\r\n\r\n`);
      socket.write(first);
      if (how === 'fin') socket.end();
      // the file part is being stored once its first bytes are in: then the reset
      if (how === 'reset') setTimeout(() => socket.resetAndDestroy(), 50);
    });
    socket.on('data', (c: Buffer) => (got += c.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(got));
  });
}

const gatewayPort = () => Number(new URL(g.url).port);
const slowPort = () => (slow.address() as AddressInfo).port;

for (const [name, framing, first, how, port] of [
  ['reset, Content-Length', `Content-Length: ${whole.length}`, whole.subarray(0, 20_000), 'reset', gatewayPort],
  ['reset, chunked', 'Transfer-Encoding: chunked', chunk(whole.subarray(0, 20_000)), 'reset', gatewayPort],
  ['closed mid-body (FIN)', `Content-Length: ${whole.length}`, whole.subarray(0, 20_000), 'fin', gatewayPort],
  ['a Content-Length larger than what is sent, stalled past the request timeout', `Content-Length: ${whole.length + 5_000}`, whole, 'stall', slowPort],
] as const) {
  test(`an upload cut off (${name}) is logged 4xx, asks for no store probe, leaves no temp file`, { timeout: 10_000 }, async () => {
    const id = `upabort-${name.replace(/\W+/g, '-')}`;
    const before = probes;
    const got = await upload(port(), id, framing, first, how);
    const line = await logged(id);
    assert.ok(line.status === 400 || line.status === 408, `logged ${line.status}`);
    if (how === 'stall') assert.match(got, /^HTTP\/1\.1 408 /);
    if (how === 'fin') assert.match(got, /^HTTP\/1\.1 400 /);
    // the handler has run to its end by the time its line is logged
    assert.equal(probes - before, 0, 'a client that cut its upload off made the gateway probe PostgreSQL');
    assert.deepEqual(await tempFiles(), []);
  });
}

test('a reset upload is logged 400, as a JSON body cut the same way', { timeout: 10_000 }, async () => {
  await upload(gatewayPort(), 'upabort-exact', `Content-Length: ${whole.length}`, whole.subarray(0, 20_000), 'reset');
  assert.equal((await logged('upabort-exact')).status, 400);
});

test('a whole upload is still stored afterwards', async () => {
  const r = await fetch(`${g.url}/api/v2/media`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${B}` }, body: whole });
  assert.equal(r.status, 201, await r.text());
});

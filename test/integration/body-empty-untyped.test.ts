/**
 * An empty body counts as `{}` however it is framed (docs/api.md, Bodies: "A request without a body, or with an
 * empty body, counts as {}"). Found from the outside: `POST /api/v2/queue/replan` with an empty chunked body
 * and no Content-Type or another one (a client streaming nothing) was 415 UNSUPPORTED_MEDIA_TYPE, and so was
 * `Content-Length: 00`, where `Content-Length: 0` went through. A body with bytes and no JSON type stays 415.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/http/app.js';
import { requestHandler } from '../../src/http/handler.js';
import { createRouter } from '../../src/http/router.js';
import { ok } from '../../src/http/envelope.js';
import { createLogger } from '../../src/log.js';

let server: http.Server;
let port = 0;

before(async () => {
  const log = createLogger({ level: 'fatal', stream: new Writable({ write: (_c, _e, cb) => cb() }) });
  const router = createRouter();
  router.post('/echo', (ctx) => ok(ctx, { got: ctx.request.body }));
  server = http.createServer(requestHandler(createApp({ log, routers: [router] })));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** One raw request on its own connection: the status and the JSON answered. */
function raw(headers: string, body = ''): Promise<{ status: number; json: { success: boolean; code?: string; data?: unknown } }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(`POST /echo HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${headers}\r\n${body}`));
    let out = '';
    socket.on('data', (d: Buffer) => (out += d.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(out.split(' ')[1]);
      resolve({ status, json: JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4)) as { success: boolean; code?: string } });
    });
  });
}

test('an empty chunked body not typed as JSON, or Content-Length: 00, counts as {}', async () => {
  for (const [headers, body] of [
    ['Transfer-Encoding: chunked\r\n', '0\r\n\r\n'],
    ['Transfer-Encoding: chunked\r\n', '0;ext=1\r\n\r\n'],
    ['Content-Length: 00\r\n', ''],
    ['Content-Length: 0\r\n', ''],
    ['Transfer-Encoding: chunked\r\nContent-Type: text/plain\r\n', '0\r\n\r\n'],
  ] as const) {
    const r = await raw(headers, body);
    assert.equal(r.status, 200, `${headers.trim()} ${JSON.stringify(body)}`);
    assert.deepEqual(r.json, { success: true, data: { got: {} } });
  }
});

test('a chunked body with bytes not typed as JSON is still 415, as a body with a length is', async () => {
  for (const [headers, body] of [
    ['Transfer-Encoding: chunked\r\n', '2\r\n{}\r\n0\r\n\r\n'],
    ['Content-Length: 2\r\n', '{}'],
    ['Transfer-Encoding: chunked\r\nContent-Type: text/plain\r\n', '2\r\n{}\r\n0\r\n\r\n'],
  ] as const) {
    const r = await raw(headers, body);
    assert.equal(r.status, 415, `${headers.trim()} ${JSON.stringify(body)}`);
    assert.equal(r.json.code, 'UNSUPPORTED_MEDIA_TYPE');
  }
});

test('an empty chunked body with a Content-Encoding counts as {}, as one with Content-Length: 0 does', async () => {
  // found from the outside: no bytes at all with Content-Encoding: gzip (typed as JSON or not) was 400 "could not
  // be decoded", the inflater failing on its empty input, where the same empty body with a length was {}
  for (const [headers, body] of [
    ['Transfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n', '0\r\n\r\n'],
    ['Transfer-Encoding: chunked\r\nContent-Encoding: br\r\nContent-Type: application/json\r\n', '0\r\n\r\n'],
    ['Transfer-Encoding: chunked\r\nContent-Encoding: deflate\r\nContent-Type: application/json\r\n', '0\r\n\r\n'],
    ['Content-Length: 0\r\nContent-Encoding: gzip\r\n', ''],
  ] as const) {
    const r = await raw(headers, body);
    assert.equal(r.status, 200, `${headers.trim()} ${JSON.stringify(body)}`);
    assert.deepEqual(r.json, { success: true, data: { got: {} } });
  }
  // bytes that do not inflate stay 400
  const bad = await raw('Transfer-Encoding: chunked\r\nContent-Encoding: gzip\r\nContent-Type: application/json\r\n', '2\r\n{}\r\n0\r\n\r\n');
  assert.equal(bad.status, 400);
});

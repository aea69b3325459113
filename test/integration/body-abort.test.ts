/**
 * A request whose body is cut off by the client is over, whatever its Content-Encoding: its line is logged
 * (400, the body never arrived) and nothing of it waits on. Found from the outside: a gzip, deflate or br body
 * reset after its first bytes left the request waiting forever with its inflater, and never logged, where an
 * identity body cut the same way was logged 400.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { Writable } from 'node:stream';
import { gzipSync, deflateSync, brotliCompressSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/http/app.js';
import { requestHandler } from '../../src/http/handler.js';
import { createRouter } from '../../src/http/router.js';
import { ok } from '../../src/http/envelope.js';
import { createLogger } from '../../src/log.js';

const lines: Array<{ reqId?: string; status?: number; msg?: string }> = [];
let server: http.Server;
let port = 0;
let waiting: (() => void) | null = null;

before(async () => {
  const log = createLogger({
    level: 'info',
    stream: new Writable({
      write(c: Buffer, _e, cb) {
        for (const l of c.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as { reqId?: string; status?: number; msg?: string });
        waiting?.();
        cb();
      },
    }),
  });
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

/** The request line logged for `id`, once it is (the test's own deadline bounds the wait). */
async function logged(id: string): Promise<{ status?: number }> {
  for (;;) {
    const line = lines.find((l) => l.msg === 'request' && l.reqId === id);
    if (line) return line;
    await new Promise<void>((resolve) => (waiting = resolve));
  }
}

/** Headers and the first bytes of `body`, then a reset once the server has taken them in. */
function cutOff(id: string, encoding: string, body: Buffer, chunked = false): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      const length = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${body.length}`;
      const part = body.subarray(0, 10);
      socket.write(`POST /echo HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: ${id}\r\nContent-Type: application/json\r\nContent-Encoding: ${encoding}\r\n${length}\r\n\r\n`);
      socket.write(chunked ? Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')]) : part);
      // the server has read them when the kernel has sent them: a turn later the reset follows
      setImmediate(() => {
        socket.resetAndDestroy();
        resolve();
      });
    });
    socket.on('error', () => undefined);
  });
}

const json = Buffer.from(JSON.stringify({ phone: '4915112345678', message: 'x'.repeat(200) }));

for (const [encoding, body, chunked] of [
  ['identity', json, false],
  ['gzip', gzipSync(json), false],
  ['gzip', gzipSync(json), true],
  ['deflate', deflateSync(json), false],
  ['br', brotliCompressSync(json), false],
] as const) {
  test(`a ${encoding}${chunked ? ' chunked' : ''} body reset after its first bytes is logged 400 and over`, { timeout: 10_000 }, async () => {
    const id = `cut-${encoding}-${chunked ? 'chunked' : 'length'}`;
    await cutOff(id, encoding, body, chunked);
    const line = await logged(id);
    assert.equal(line.status, 400);
  });
}

test('the server still answers whole bodies of every encoding afterwards', async () => {
  for (const [encoding, body] of [['gzip', gzipSync(json)], ['br', brotliCompressSync(json)], ['identity', json]] as const) {
    const answer = await fetch(`http://127.0.0.1:${port}/echo`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': encoding }, body });
    assert.equal(answer.status, 200, encoding);
    assert.deepEqual(((await answer.json()) as { data: { got: unknown } }).data.got, JSON.parse(json.toString()));
  }
});

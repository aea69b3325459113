/**
 * What Node's HTTP parser refuses before any middleware runs is answered in the v2 error envelope, over raw
 * sockets: an oversized header block (431), a request line that is not HTTP (400), a client too slow to send
 * its headers (408). The refused bytes are never echoed, the connection is closed, and the server goes on
 * answering. A refusal after a response has begun on the same connection only drops the connection; requests
 * received whole before the refused one are answered first. A client that half-closes after its request still
 * gets the answer.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { Writable } from 'node:stream';
import { answerClientErrors, serverOptions } from '../../src/http/client-error.js';
import { createApp } from '../../src/http/app.js';
import { requestHandler } from '../../src/http/handler.js';
import { createRouter } from '../../src/http/router.js';
import { ok } from '../../src/http/envelope.js';
import { createLogger } from '../../src/log.js';

const MARKER = 'do-not-echo-7f3a';
/** responses of `/hold` that the test lets finish */
const held: http.ServerResponse[] = [];

let server: http.Server;
let port = 0;

function handler(req: http.IncomingMessage, res: http.ServerResponse): void {
  if (req.url === '/hold') {
    // a response that has begun (status line and headers sent) and is not finished yet
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('partial');
    held.push(res);
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify({ success: true, data: { path: req.url } }));
}

async function listen(s: http.Server): Promise<number> {
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return (s.address() as net.AddressInfo).port;
}

async function close(s: http.Server): Promise<void> {
  s.closeAllConnections();
  await new Promise<void>((resolve) => s.close(() => resolve()));
}

before(async () => {
  server = http.createServer(handler);
  answerClientErrors(server);
  port = await listen(server);
});
after(async () => {
  for (const res of held) res.end();
  await close(server);
});

/**
 * Write `bytes` on a fresh connection (optionally without ending our side, or with more bytes once the first
 * answer's bytes arrive) and read everything until the
 * server closes it. A reset after the server's answer is not an error here. Bounded: no close within
 * `limitMs` fails.
 */
function exchange(to: number, bytes: string, opts: { end?: boolean; onFirstData?: string; limitMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(to, '127.0.0.1', () => {
      if (opts.end === false || opts.onFirstData !== undefined) socket.write(bytes);
      else socket.end(bytes);
    });
    // bytes sent once the server has begun to answer
    if (opts.onFirstData !== undefined) socket.once('data', () => socket.write(opts.onFirstData ?? ''));
    socket.setTimeout(opts.limitMs ?? 5_000, () => {
      socket.destroy();
      reject(new Error(`the server did not close the connection; received:\n${Buffer.concat(chunks).toString('latin1')}`));
    });
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ECONNRESET' && err.code !== 'EPIPE') reject(err);
    });
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

interface Parsed {
  status: number;
  headers: Record<string, string>;
  body: { success: boolean; error: string; code: string; data: Record<string, unknown> };
  raw: string;
}

function parseResponse(raw: string): Parsed {
  const split = raw.indexOf('\r\n\r\n');
  assert.ok(split > 0, `a complete response head:\n${raw}`);
  const [statusLine = '', ...lines] = raw.slice(0, split).split('\r\n');
  const m = /^HTTP\/1\.1 (\d{3}) \S/.exec(statusLine);
  assert.ok(m, `an HTTP/1.1 status line: ${statusLine}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const bodyText = raw.slice(split + 4);
  assert.equal(Buffer.byteLength(bodyText, 'latin1'), Number(headers['content-length']), 'Content-Length is the body as sent');
  return { status: Number(m[1]), headers, body: JSON.parse(bodyText) as Parsed['body'], raw };
}

function assertRefusal(r: Parsed, status: number, code: string): void {
  assert.equal(r.status, status, r.raw);
  assert.equal(r.headers.connection, 'close');
  assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
  assert.equal(r.headers['x-content-type-options'], 'nosniff', 'never read as anything but JSON');
  assert.equal(r.body.success, false);
  assert.equal(r.body.code, code);
  assert.equal(typeof r.body.error, 'string');
  assert.ok(!r.raw.includes(MARKER), 'no byte of the request is echoed');
}

/** The server still answers a well-formed request on a new connection. */
async function assertStillServing(s: http.Server): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${(s.address() as net.AddressInfo).port}/after`);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { success: true, data: { path: '/after' } });
}

test('an oversized header block: 431 HEADERS_TOO_LARGE in the envelope with the limit, Connection: close', async () => {
  const big = `${MARKER}${'a'.repeat(17 * 1024)}`;
  const r = parseResponse(await exchange(port, `GET /x HTTP/1.1\r\nHost: localhost\r\nX-Big: ${big}\r\n\r\n`));
  assertRefusal(r, 431, 'HEADERS_TOO_LARGE');
  assert.deepEqual(r.body.data, { maxBytes: http.maxHeaderSize });
  assert.ok(!r.raw.includes('aaaaaaaa'));
  await assertStillServing(server);
});

test("a server's own maxHeaderSize is the limit it reports", async () => {
  const small = http.createServer({ maxHeaderSize: 1024 }, handler);
  answerClientErrors(small);
  try {
    const r = parseResponse(await exchange(await listen(small), `GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'b'.repeat(2048)}\r\n\r\n`));
    assertRefusal(r, 431, 'HEADERS_TOO_LARGE');
    assert.deepEqual(r.body.data, { maxBytes: 1024 });
  } finally {
    await close(small);
  }
});

test('a garbage request line: 400 VALIDATION_FAILED (data.field request), nothing echoed', async () => {
  const r = parseResponse(await exchange(port, `${MARKER} \x01\x02 not http at all\r\n\r\n`));
  assertRefusal(r, 400, 'VALIDATION_FAILED');
  assert.deepEqual(r.body.data, { field: 'request' });
  await assertStillServing(server);
});

test('a bad header line after a good request line: 400 in the envelope as well', async () => {
  const r = parseResponse(await exchange(port, `GET / HTTP/1.1\r\nHost: localhost\r\nBad Header${MARKER}\r\n\r\n`));
  assertRefusal(r, 400, 'VALIDATION_FAILED');
  await assertStillServing(server);
});

test('a refusal on a connection whose earlier response has begun: no second status line, the connection is dropped', async () => {
  const raw = await exchange(port, 'GET /hold HTTP/1.1\r\nHost: localhost\r\n\r\n', { onFirstData: `${MARKER} garbage\r\n\r\n` });
  assert.match(raw, /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\npartial\r\n$/);
  assert.equal(raw.split('HTTP/1.1 ').length - 1, 1, `one status line only:\n${raw}`);
  assert.ok(!raw.includes('VALIDATION_FAILED'));
  assert.ok(!raw.includes(MARKER));
  await assertStillServing(server);
});

/**
 * An app (the gateway's, with its request log) whose `/gate` answers only once `open` was called, and whose
 * log lines are kept: what a handler still at work when the connection's next bytes arrive looks like.
 */
async function gatedApp(options: http.ServerOptions = {}) {
  const lines: string[] = [];
  const log = createLogger({ level: 'info', stream: new Writable({ write(c: Buffer, _e, cb) { lines.push(c.toString()); cb(); } }) });
  let open = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));
  const router = createRouter();
  router.get('/gate', async (ctx) => {
    await gate;
    ok(ctx, { answered: true });
  });
  const s = http.createServer({ ...serverOptions, ...options }, requestHandler(createApp({ log, routers: [router] })));
  answerClientErrors(s);
  return { s, port: await listen(s), open, lines };
}

/**
 * `/gate` and a request the server refuses (`after`) on one connection, the gate opened once it did: the gated
 * answer comes first, whole, and its log line says 200; then the refusal `status`/`code`.
 */
async function answeredBeforeRefusal(after: string, status: number, code: string, options: http.ServerOptions = {}): Promise<void> {
  const g = await gatedApp(options);
  try {
    g.s.once('clientError', () => setImmediate(g.open));
    const raw = await exchange(g.port, `GET /gate HTTP/1.1\r\nHost: localhost\r\n\r\n${after}`, { end: false });
    const second = raw.indexOf('HTTP/1.1 ', 1);
    assert.ok(second > 0, `two responses:\n${raw}`);
    const first = raw.slice(0, second);
    assert.match(first, /^HTTP\/1\.1 200 OK\r\n/);
    assert.ok(first.endsWith(JSON.stringify({ success: true, data: { answered: true } })), first);
    assertRefusal(parseResponse(raw.slice(second)), status, code);
    const line = g.lines.find((l) => l.includes('"path":"/gate"'));
    assert.equal((JSON.parse(line ?? '{}') as { status?: number }).status, 200, line);
  } finally {
    await close(g.s);
  }
}

test('a malformed request pipelined after a good one: the good one is answered first, then the refusal', () =>
  // found from the outside: a send pipelined before a malformed request was accepted and went out, and its
  // client got only the 400 of the request after it (and the request log wrote 400 for the send)
  answeredBeforeRefusal(`GET /x HTTP/1.1\r\nHost: localhost\r\n${MARKER} no colon\r\n\r\n`, 400, 'VALIDATION_FAILED'));

test('an unfinished request pipelined after a good one times out: the good one is answered first, then the 408', () =>
  // found from the outside: the send's caller got only the 408 of the request after it, for a message that went out
  answeredBeforeRefusal(`GET /x HTTP/1.1\r\nHost: localhost\r\nX-Slow: ${MARKER}`, 408, 'REQUEST_TIMEOUT', {
    headersTimeout: 200, requestTimeout: 200, connectionsCheckingInterval: 20,
  }));

test('a client that closes its sending side after a whole request still gets the answer', async () => {
  // found from the outside: shutdown(SHUT_WR) after a send request; the send was performed, no answer written
  const g = await gatedApp();
  try {
    // the handler answers once the server has seen the client's end
    g.s.once('connection', (socket: net.Socket) => socket.once('end', () => setImmediate(g.open)));
    const raw = await exchange(g.port, 'GET /gate HTTP/1.1\r\nHost: localhost\r\n\r\n');
    assert.match(raw, /^HTTP\/1\.1 200 OK\r\n/, raw);
    assert.ok(raw.endsWith(JSON.stringify({ success: true, data: { answered: true } })), raw);
  } finally {
    await close(g.s);
  }
});

test('headers not complete within headersTimeout: 408 REQUEST_TIMEOUT in the envelope', async () => {
  const slow = http.createServer({ headersTimeout: 200, requestTimeout: 200, connectionsCheckingInterval: 20 }, handler);
  answerClientErrors(slow);
  try {
    // the header block is never finished; the server's own timer ends the wait
    const r = parseResponse(await exchange(await listen(slow), `GET /${MARKER} HTTP/1.1\r\nHost: localhost\r\n`, { end: false }));
    assertRefusal(r, 408, 'REQUEST_TIMEOUT');
    await assertStillServing(slow);
  } finally {
    await close(slow);
  }
});

test('a body that stalls past the request timeout: the 408 the client gets is the status the request log writes', async () => {
  // found from the outside: the client got 408 REQUEST_TIMEOUT (written here) while the log line said 400, the
  // handler's answer to a body that ended early, which never reached the client
  const lines: string[] = [];
  const log = createLogger({ level: 'info', stream: new Writable({ write(c: Buffer, _e, cb) { lines.push(c.toString()); cb(); } }) });
  const router = createRouter();
  router.post('/echo', (ctx) => ok(ctx, ctx.request.body));
  const slow = http.createServer({ headersTimeout: 200, requestTimeout: 200, connectionsCheckingInterval: 20 }, requestHandler(createApp({ log, routers: [router] })));
  answerClientErrors(slow);
  try {
    const head = `POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`;
    const r = parseResponse(await exchange(await listen(slow), `${head}{"a":${MARKER}`, { end: false }));
    assertRefusal(r, 408, 'REQUEST_TIMEOUT');
    // the handler's end comes after the refusal: wait for its line
    for (let i = 0; i < 100 && !lines.some((l) => l.includes('"path":"/echo"')); i++) await new Promise((res) => setTimeout(res, 10));
    const line = lines.find((l) => l.includes('"path":"/echo"'));
    assert.ok(line, `a request line:\n${lines.join('')}`);
    assert.equal((JSON.parse(line) as { status: number }).status, 408, line);
    assert.ok(!lines.join('').includes(MARKER));
  } finally {
    await close(slow);
  }
});

test("what Node answered itself outside the envelope: no Host (400), an Expect it does not know (417), CONNECT (dropped)", async () => {
  // found from the outside: an empty 400, an empty 417, and a connection closed without an answer
  const router = createRouter();
  router.post('/echo', (ctx) => ok(ctx, ctx.request.body));
  router.get('/ping', (ctx) => ok(ctx, { pong: true }));
  const log = createLogger({ level: 'error', stream: new Writable({ write(_c: Buffer, _e, cb) { cb(); } }) });
  const app = http.createServer(serverOptions, requestHandler(createApp({ log, routers: [router] })));
  answerClientErrors(app);
  try {
    const to = await listen(app);
    const noHost = parseResponse(await exchange(to, 'GET /ping HTTP/1.1\r\n\r\n'));
    assert.equal(noHost.status, 400, noHost.raw);
    assert.equal(noHost.body.code, 'VALIDATION_FAILED');
    assert.deepEqual(noHost.body.data, { field: 'host' });
    // RFC 9112 3.2: two Host headers, or a Host that is no host[:port], are a 400 as well (found from the outside)
    for (const head of ['Host: a\r\nHost: b', 'Host: x:99999', 'Host: x y', 'Host: a/b']) {
      const r = parseResponse(await exchange(to, `GET /ping HTTP/1.1\r\n${head}\r\n\r\n`));
      assert.equal(r.status, 400, `${head}: ${r.raw}`);
      assert.deepEqual(r.body.data, { field: 'host' }, head);
    }
    for (const head of ['Host: x:65535', 'Host: 127.0.0.1:3000', 'Host: [::1]:80', 'Host: my_host.example', 'Host: x:']) {
      assert.match(await exchange(to, `GET /ping HTTP/1.1\r\n${head}\r\n\r\n`), /^HTTP\/1\.1 200 /, head);
    }
    // HTTP/1.0 has no Host requirement
    const old = await exchange(to, 'GET /ping HTTP/1.0\r\n\r\n');
    assert.match(old, /^HTTP\/1\.1 200 /);
    // an expectation the server does not know is ignored (RFC 9110 allows it): the request is answered
    const body = '{"a":1}';
    const expect = await exchange(to, `POST /echo HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    assert.match(expect, /^HTTP\/1\.1 200 /);
    assert.ok(expect.endsWith('{"success":true,"data":{"a":1}}'), expect);
    const connect = parseResponse(await exchange(to, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', { end: false }));
    assertRefusal(connect, 405, 'METHOD_NOT_ALLOWED');
    assert.equal(connect.headers.allow, '');
    const after = await fetch(`http://127.0.0.1:${to}/ping`);
    assert.equal(after.status, 200, 'still serving');
  } finally {
    await close(app);
  }
});

/**
 * Requests pipelined on one connection (src/http/handler.ts): at most MAX_IN_PROGRESS of them are answered at a
 * time beside the first (which had no answer ahead of it), at most MAX_WAITING wait their turn, and what waits of a connection that closed (a reset) is never run.
 * Found from the outside: 16 connections that pipelined `GET /openapi.json` and never read an answer made the
 * gateway build a 232 KB answer for every request of each chunk it read (a chunk of 64 KiB holds 1,600 of them),
 * 150 MB a second, until V8's heap limit killed the process. A client that pipelines more than MAX_WAITING behind
 * those in progress gets their answers, then the connection ends; one that reads gets every answer, in order,
 * and a body that arrives after the waiting requests is read. Real sockets; the app is the gateway's (createApp)
 * with routes of its own.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/http/app.js';
import { createRouter } from '../../src/http/router.js';
import { MAX_IN_PROGRESS, MAX_WAITING, requestHandler } from '../../src/http/handler.js';
import { ok } from '../../src/http/envelope.js';
import { silentLogger } from '../../src/log.js';
import { waitFor } from '../helpers/gateway.js';

const BIG = 'x'.repeat(200_000);
/** more than the kernel's buffers of a connection take when 17 of them are written */
const HUGE = 'x'.repeat(2_000_000);
/** answered at once of a connection that pipelines: the first, with no answer ahead of it, and MAX_IN_PROGRESS behind it */
const RUNNING = MAX_IN_PROGRESS + 1;
/** the handler's OVERFLOW_CLOSE_MS here */
const CLOSE_MS = 600;
let handled = 0;
let slowCalls = 0;
let release: () => void = () => undefined;
const slowGate = new Promise<void>((r) => {
  release = r;
});
let server: http.Server;
let port = 0;

before(async () => {
  const router = createRouter();
  router.get('/big/:n', (ctx) => {
    handled += 1;
    ok(ctx, { n: Number(ctx.params.n), big: BIG });
  });
  router.get('/huge/:n', (ctx) => {
    handled += 1;
    ok(ctx, { n: Number(ctx.params.n), huge: HUGE });
  });
  router.get('/small/:n', (ctx) => {
    handled += 1;
    ok(ctx, { n: Number(ctx.params.n) });
  });
  router.get('/slow/:n', async (ctx) => {
    slowCalls += 1;
    await slowGate;
    ok(ctx, { slow: Number(ctx.params.n) });
  });
  router.post('/echo', (ctx) => {
    handled += 1;
    ok(ctx, { got: (ctx.request.body as { v?: unknown }).v });
  });
  server = http.createServer(requestHandler(createApp({ log: silentLogger(), routers: [router] }), { overflowCloseMs: CLOSE_MS }));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: t\r\n\r\n`;

/** A connection that reads: what it was answered so far. */
function reading(): { socket: net.Socket; text: () => string } {
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => {
    text += d;
  });
  socket.on('error', () => undefined);
  return { socket, text: () => text };
}

/** The `n` of each `/small/:n` answer in `text`, in the order they came. */
const answered = (text: string): number[] => [...text.matchAll(/"n":(\d+)/g)].map((m) => Number(m[1]));

/** A connection that writes and never reads. */
function unread(): net.Socket {
  const s = net.connect(port, '127.0.0.1');
  s.pause();
  s.on('error', () => undefined);
  return s;
}

/** Let the server's event loop run a while (real time: what is measured is that nothing more happens). */
const settle = () => new Promise((r) => setTimeout(r, 150));

test('a client that pipelines and never reads is answered RUNNING at a time; what waits is dropped with its connection', async () => {
  handled = 0;
  const s = unread();
  const requests = Array.from({ length: 600 }, (_, i) => get(`/big/${i}`)).join('');
  for (let k = 0; k < 5; k++) s.write(requests);
  await waitFor(() => handled >= RUNNING, 'the first answers made');
  await settle();
  // the kernel takes an answer or so of 200 KB before the connection stops taking any
  const atRest = handled;
  assert.ok(atRest <= 2 * RUNNING, `${atRest} of 3,000 answered`);
  await settle();
  assert.equal(handled, atRest, 'no more answers are made while none is read');
  s.destroy();
  await settle();
  assert.equal(handled, atRest, 'nothing of a closed connection is answered');
});

test('more than MAX_WAITING waiting: the answers in progress go out, then the connection ends; nothing that waited runs', async () => {
  handled = 0;
  const { socket: s, text } = reading();
  const closed = new Promise<void>((r) => s.once('close', () => r()));
  // in one write, which the server reads as one chunk
  s.write(Array.from({ length: RUNNING + MAX_WAITING + 10 }, (_, i) => get(`/small/${i}`)).join(''));
  await closed;
  await settle();
  assert.deepEqual(answered(text()), Array.from({ length: RUNNING }, (_, i) => i), 'the answers of those in progress, in order');
  assert.equal(handled, RUNNING, 'nothing that waited ran');
});

/** The connections the server holds open now. */
const openConnections = () => new Promise<number>((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));

test('a connection that overflowed in one write, the client sending on after it: every answer in progress comes, in order, then the connection is closed', async () => {
  await waitFor(async () => (await openConnections()) === 0, 'the earlier tests\' connections closed');
  handled = 0;
  // the client keeps its end open and sends on, as the probes' clients did
  const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  s.on('error', () => undefined);
  let text = '';
  s.setEncoding('latin1');
  s.on('data', (d: string) => {
    text += d;
  });
  const ended = new Promise<void>((r) => s.once('end', () => r()));
  // found from the outside: 147 requests or more in one write got no answer though 17 had run (a resend of each)
  s.write(Array.from({ length: RUNNING + MAX_WAITING + 70 }, (_, i) => get(`/small/${i}`)).join(''));
  await new Promise((r) => setTimeout(r, 5));
  s.write(get('/small/999'));
  await ended;
  assert.deepEqual(answered(text), Array.from({ length: RUNNING }, (_, i) => i), 'the answers of those in progress, in order');
  assert.equal(handled, RUNNING, 'nothing more ran');
  // nothing is read any more: what the client sends on is neither run nor held, and the connection is closed
  // CLOSE_MS after the overflow (found from the outside: only ended, it was read on, 1.75 GB in 20 s)
  const more = Array.from({ length: 2_000 }, (_, i) => get(`/small/${i}`)).join('');
  for (let i = 0; i < 20; i++) s.write(more);
  await waitFor(async () => (await openConnections()) === 0, 'the overflowed connection closed by the server', 4 * CLOSE_MS);
  assert.equal(handled, RUNNING, 'nothing sent after the overflow ran');
  s.destroy();
});

test('a client that overflows and never reads is closed CLOSE_MS after the overflow', async () => {
  await waitFor(async () => (await openConnections()) === 0, 'the earlier tests\' connections closed');
  handled = 0;
  const s = unread();
  const closed = new Promise<void>((r) => s.once('close', () => r()));
  // found from the outside: answers never taken kept the connection for good (the close waited for them)
  s.write(Array.from({ length: RUNNING + MAX_WAITING + 1 }, (_, i) => get(`/huge/${i}`)).join(''));
  await waitFor(async () => (await openConnections()) === 0, 'closed by the server', 4 * CLOSE_MS);
  s.destroy();
  await closed;
});

test('a client that resets its connection: the requests waiting behind slow ones never run', async () => {
  handled = 0;
  slowCalls = 0;
  const s = net.connect(port, '127.0.0.1');
  s.on('error', () => undefined);
  s.write(Array.from({ length: RUNNING }, (_, i) => get(`/slow/${i}`)).join('') + Array.from({ length: 5 }, (_, i) => get(`/small/${i}`)).join(''));
  await waitFor(() => slowCalls >= RUNNING, 'the slow requests in progress');
  s.resetAndDestroy();
  await settle();
  release();
  await settle();
  assert.equal(handled, 0, 'the requests that waited did not run');
});

test('a client that reads gets every pipelined answer in order, and a body that comes after the waiting requests', async () => {
  handled = 0;
  const { socket: s, text } = reading();
  const n = RUNNING + MAX_WAITING - 2;
  const body = JSON.stringify({ v: 'last' });
  s.write(Array.from({ length: n }, (_, i) => get(`/small/${i}`)).join('') +
    `POST /echo HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
  // the rest of the last request's body comes later, once the requests before it wait or ran
  await waitFor(() => handled >= RUNNING, 'the first answers made');
  s.write(body.slice(5));
  await waitFor(() => text().includes('"got":"last"'), 'the last request answered');
  assert.deepEqual(answered(text()), Array.from({ length: n }, (_, i) => i), 'every answer, in order');
  assert.equal(text().split('HTTP/1.1 200 OK').length - 1, n + 1);
  s.destroy();
});

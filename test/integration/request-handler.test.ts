/**
 * src/http/handler.ts against Koa's own `app.callback()`: the same app behind two servers, the same requests on
 * raw sockets to both, and the bytes answered compared (the Date header aside). The routes answer every kind of
 * body Koa's respond knows (plain JSON objects and arrays, a null-prototype object, a class instance, strings,
 * Buffers, node and web streams, Blob, null, an explicit null, none), with the statuses whose answers carry no
 * body, after headers a route set (a Transfer-Encoding, a Content-Length of its own), with `ctx.respond = false`,
 * a JSON body that cannot be written (a BigInt), a thrown error, and a path no route has; each by GET, HEAD and
 * POST, over HTTP/1.1 and 1.0, with and without keep-alive.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { Readable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import type { Context } from 'koa';
import { createApp } from '../../src/http/app.js';
import { createRouter } from '../../src/http/router.js';
import { requestHandler } from '../../src/http/handler.js';
import { ok } from '../../src/http/envelope.js';
import { silentLogger } from '../../src/log.js';
import { DomainError } from '../../src/errors.js';

class Thing {
  a = 1;
  toJSON() {
    return { thing: this.a };
  }
}

/** What each route sets: its body and status; every route is mounted for GET, HEAD (Koa's router) and POST. */
const answers: Record<string, (ctx: Context) => void> = {
  ok: (ctx) => ok(ctx, { id: 'x', n: 1, nested: { list: [1, 'two', null] }, text: 'ünïcödé ✓' }),
  created: (ctx) => ok(ctx, { id: 'y' }, 201),
  accepted: (ctx) => ok(ctx, { queued: true }, 202),
  array: (ctx) => {
    ctx.body = [1, 2, { three: 3 }];
  },
  'null-proto': (ctx) => {
    const body = Object.create(null) as Record<string, unknown>;
    body.plain = 'no prototype';
    ctx.body = body;
  },
  'class-instance': (ctx) => {
    ctx.body = new Thing();
  },
  'empty-object': (ctx) => {
    ctx.body = {};
  },
  string: (ctx) => {
    ctx.body = 'plain text ✓';
  },
  html: (ctx) => {
    ctx.body = '<p>hi</p>';
  },
  buffer: (ctx) => {
    ctx.body = Buffer.from([0, 1, 2, 255]);
  },
  stream: (ctx) => {
    ctx.body = Readable.from([Buffer.from('one '), Buffer.from('two')]);
  },
  'web-stream': (ctx) => {
    ctx.body = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('web'));
        c.close();
      },
    });
  },
  blob: (ctx) => {
    ctx.body = new Blob(['blob ✓'], { type: 'text/plain' });
  },
  'no-body': (ctx) => {
    ctx.status = 200;
  },
  'null-body': (ctx) => {
    ctx.body = null;
  },
  'null-body-201': (ctx) => {
    ctx.status = 201;
    ctx.body = null;
  },
  'no-content': (ctx) => {
    ctx.status = 204;
  },
  'no-content-with-body': (ctx) => {
    ctx.body = { dropped: true };
    ctx.status = 204;
  },
  'no-content-then-body': (ctx) => {
    ctx.status = 204;
    ctx.body = { dropped: true };
  },
  'not-modified-then-body': (ctx) => {
    ctx.status = 304;
    ctx.body = { dropped: true };
  },
  'reset-content': (ctx) => {
    ctx.body = { dropped: true };
    ctx.status = 205;
  },
  'not-modified': (ctx) => {
    ctx.body = { dropped: true };
    ctx.status = 304;
  },
  'transfer-encoding': (ctx) => {
    ctx.set('Transfer-Encoding', 'chunked');
    ctx.body = { chunked: true };
  },
  'own-length': (ctx) => {
    ctx.body = { a: 1 };
    ctx.set('Content-Length', '99');
  },
  'own-type': (ctx) => {
    ctx.body = { a: 1 };
    ctx.type = 'application/vnd.thing+json';
  },
  'extra-headers': (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.set('X-Many', ['a', 'b']);
    ok(ctx, { headers: true });
  },
  'respond-false': (ctx) => {
    ctx.respond = false;
    ctx.res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '4' });
    ctx.res.end('mine');
  },
  'answered-already': (ctx) => {
    ctx.res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '5' });
    ctx.res.end('early');
    ctx.body = { late: true };
  },
  bigint: (ctx) => {
    ctx.body = { big: 1n };
  },
  thrown: () => {
    throw new DomainError('VALIDATION_FAILED', 'a thrown domain error', { field: 'x' });
  },
  crash: () => {
    throw new Error('an unexpected error with internals');
  },
};

function app() {
  const router = createRouter();
  for (const [name, answer] of Object.entries(answers)) {
    router.get(`/${name}`, (ctx) => answer(ctx));
    router.post(`/${name}`, (ctx) => answer(ctx));
  }
  return createApp({ log: silentLogger(), routers: [router] });
}

let koaPort = 0;
let oursPort = 0;
const servers: http.Server[] = [];

async function listen(handler: http.RequestListener): Promise<number> {
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

before(async () => {
  // two apps built alike (not one app twice: Koa's callback and ours each add the default error listener)
  koaPort = await listen(app().callback());
  oursPort = await listen(requestHandler(app()));
});

after(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
});

/** Everything the server wrote on a connection given `bytes`, once it closed (or after a quiet moment on keep-alive). */
function exchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(port, '127.0.0.1', () => socket.end(bytes));
    socket.setTimeout(3_000, () => {
      socket.destroy();
      reject(new Error(`no end of the answer; received:\n${Buffer.concat(chunks).toString('latin1')}`));
    });
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

const undated = (raw: string) => raw.replace(/\r\nDate: [^\r]*/g, '\r\nDate: -');

const REQUESTS: Array<[string, (path: string) => string]> = [
  ['GET 1.1 close', (p) => `GET ${p} HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: same\r\nConnection: close\r\n\r\n`],
  ['HEAD 1.1 close', (p) => `HEAD ${p} HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: same\r\nConnection: close\r\n\r\n`],
  ['POST 1.1 close', (p) => `POST ${p} HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: same\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`],
  ['GET 1.0', (p) => `GET ${p} HTTP/1.0\r\nHost: localhost\r\nX-Request-Id: same\r\n\r\n`],
  ['GET 1.1 keep-alive, then another', (p) => `GET ${p} HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: same\r\n\r\nGET /ok HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: next\r\nConnection: close\r\n\r\n`],
];

test('every kind of answer is written byte for byte as Koa writes it', async () => {
  const paths = [...Object.keys(answers).map((n) => `/${n}`), '/nowhere', '/ok?x=%ZZ'];
  let compared = 0;
  for (const path of paths) {
    for (const [label, request] of REQUESTS) {
      const bytes = request(path);
      const [theirs, ours] = await Promise.all([exchange(koaPort, bytes), exchange(oursPort, bytes)]);
      assert.ok(theirs.startsWith('HTTP/1.'), `${label} ${path}: Koa answered\n${theirs}`);
      assert.equal(undated(ours), undated(theirs), `${label} ${path}`);
      compared++;
    }
  }
  assert.equal(compared, paths.length * REQUESTS.length);
});

test('a JSON answer written by the short way carries its status, type, length and request id', async () => {
  const raw = await exchange(oursPort, REQUESTS[0]![1]('/ok'));
  const [head, body] = raw.split('\r\n\r\n') as [string, string]; // latin1: one character a byte
  assert.match(head, /^HTTP\/1\.1 200 OK\r\n/);
  assert.match(head, /\r\nContent-Type: application\/json; charset=utf-8/);
  assert.match(head, new RegExp(`\\r\\nContent-Length: ${body.length}(\\r|$)`));
  assert.match(head, /\r\nX-Request-Id: same/);
  assert.deepEqual(JSON.parse(Buffer.from(body, 'latin1').toString('utf8')), { success: true, data: { id: 'x', n: 1, nested: { list: [1, 'two', null] }, text: 'ünïcödé ✓' } });
});

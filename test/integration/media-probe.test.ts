/**
 * The acceptance probe of a `mediaUrl` (src/media/probe.ts) over real loopback sockets. A server on 127.0.0.2
 * stands in for a public host (exempted by `allowAddress`); a second server on 127.0.0.1 is the internal
 * target a redirect tries to reach and must never see a request. Names resolve through an injected resolver.
 * Each server records `METHOD path`, so the tests see exactly which requests the probe made.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DomainError } from '../../src/errors.js';
import { simulatedClock } from '../../src/clock.js';
import { probeMediaUrl, type ProbeOptions } from '../../src/media/probe.js';
import type { Resolver } from '../../src/media/ssrf.js';

const MiB = 1024 * 1024;
const seen: string[] = [];
const innerSeen: string[] = [];
let hub: http.Server;
let inner: http.Server;
let hubPort: number;
let innerPort: number;
/** settles when the server sees the client hang up on a GET body it never finished */
let getBodyClosed: Promise<void> = Promise.resolve();
let onGetBodyClosed = (): void => undefined;

const resolver: Resolver = async (host) => {
  if (host === 'cdn.example') return [{ address: '127.0.0.2', family: 4 }];
  if (host === 'internal.example') return [{ address: '127.0.0.1', family: 4 }];
  throw Object.assign(new Error('no answer'), { code: 'ENOTFOUND' });
};

function hubAnswer(req: http.IncomingMessage, res: http.ServerResponse): void {
  const path = req.url ?? '/';
  const head = req.method === 'HEAD';
  const png = () => res.writeHead(200, { 'Content-Type': 'image/png', 'Content-Length': '4' }).end(head ? undefined : 'PNG!');
  const hop = /^\/hop\/(\d+)$/.exec(path);
  if (hop) {
    const left = Number(hop[1]);
    return void (left === 0 ? png() : res.writeHead(302, { Location: `/hop/${left - 1}` }).end());
  }
  switch (path) {
    case '/small.png':
      return void png();
    case '/no-head.png':
    case '/not-implemented.png':
    case '/signed.png':
      if (head) return void res.writeHead(path === '/no-head.png' ? 405 : path === '/signed.png' ? 403 : 501).end();
      // declares 1 MiB, sends 1 KiB and then nothing: a probe that read the body would wait for ever
      res.on('close', () => onGetBodyClosed());
      res.writeHead(200, { 'Content-Type': 'image/png', 'Content-Length': String(MiB) });
      return void res.write(Buffer.alloc(1024));
    case '/gone.png':
      return void res.writeHead(404).end();
    case '/broken.png':
      return void res.writeHead(head ? 405 : 503).end();
    case '/big.png':
      return void res.writeHead(200, { 'Content-Type': 'image/png', 'Content-Length': String(17 * MiB) }).end();
    case '/to-loopback':
      return void res.writeHead(302, { Location: `http://127.0.0.1:${innerPort}/admin` }).end();
    case '/to-name':
      return void res.writeHead(307, { Location: `http://internal.example:${innerPort}/admin` }).end();
    case '/to-ftp':
      return void res.writeHead(301, { Location: `ftp://cdn.example:${hubPort}/a.png` }).end();
    case '/silent':
      return; // never answers
    default:
      res.writeHead(404).end();
  }
}

before(async () => {
  hub = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    hubAnswer(req, res);
  });
  inner = http.createServer((req, res) => {
    innerSeen.push(`${req.method} ${req.url}`);
    res.end('internal');
  });
  await new Promise<void>((r) => hub.listen(0, '127.0.0.2', r));
  await new Promise<void>((r) => inner.listen(0, '127.0.0.1', r));
  hubPort = (hub.address() as AddressInfo).port;
  innerPort = (inner.address() as AddressInfo).port;
});

after(async () => {
  for (const s of [hub, inner]) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  assert.deepEqual(innerSeen, [], 'the internal target never saw a request');
});

const opts = (extra: Partial<ProbeOptions> = {}): ProbeOptions => ({
  resolver,
  allowAddress: (a) => a === '127.0.0.2',
  maxBytes: 16 * MiB,
  ...extra,
});
const url = (path: string) => `http://cdn.example:${hubPort}${path}`;

/** The probe of `path`: the requests it made (from the server's record), and its refusal if any. */
async function probe(path: string, extra: Partial<ProbeOptions> = {}) {
  const from = seen.length;
  try {
    const result = await probeMediaUrl(url(path), opts(extra));
    return { result, error: null, requests: seen.slice(from) };
  } catch (err) {
    assert.ok(err instanceof DomainError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.code, 'VALIDATION_FAILED');
    assert.equal(err.data.field, 'mediaUrl');
    return { result: null, error: err, requests: seen.slice(from) };
  }
}

describe('probeMediaUrl: accepted', () => {
  test('a public URL with a small Content-Length: one HEAD, nothing else', async () => {
    const p = await probe('/small.png');
    assert.equal(p.error, null);
    assert.deepEqual(p.result, { method: 'HEAD', status: 200, contentLength: 4, mimetype: 'image/png' });
    assert.deepEqual(p.requests, ['HEAD /small.png']);
  });

  test('3 redirect hops are followed with HEAD', async () => {
    const p = await probe('/hop/3');
    assert.equal(p.result?.status, 200);
    assert.deepEqual(p.requests, ['HEAD /hop/3', 'HEAD /hop/2', 'HEAD /hop/1', 'HEAD /hop/0']);
  });

  for (const [path, status] of [['/no-head.png', 405], ['/not-implemented.png', 501], ['/signed.png', 403]] as const) {
    test(`HEAD answered ${status}: asked again with a GET whose body is not read`, async () => {
      getBodyClosed = new Promise<void>((r) => (onGetBodyClosed = r));
      const p = await probe(path);
      assert.deepEqual(p.result, { method: 'GET', status: 200, contentLength: MiB, mimetype: 'image/png' });
      assert.deepEqual(p.requests, [`HEAD ${path}`, `GET ${path}`]);
      // the GET's 1 MiB body never comes: the probe resolved without it, and hung up (else this never settles)
      await getBodyClosed;
    });
  }
});

describe('probeMediaUrl: refused with 400 VALIDATION_FAILED naming the rule', () => {
  test('an error answer names its status (HEAD 404, then the GET verdict)', async () => {
    const p = await probe('/gone.png');
    assert.equal(p.error?.message, 'mediaUrl answered HTTP 404');
    assert.deepEqual([p.error?.data.reason, p.error?.data.status], ['http_status', 404]);
    assert.deepEqual(p.requests, ['HEAD /gone.png', 'GET /gone.png']);
    const q = await probe('/broken.png');
    assert.equal(q.error?.message, 'mediaUrl answered HTTP 503');
  });

  test('a declared Content-Length above the cap, without a GET', async () => {
    const p = await probe('/big.png');
    assert.equal(p.error?.data.reason, 'too_large');
    assert.equal(p.error?.data.maxBytes, 16 * MiB);
    assert.match(String(p.error?.message), /exceeds 16777216 bytes \(Content-Length: 17825792\)/);
    assert.deepEqual(p.requests, ['HEAD /big.png']);
  });

  test('a redirect to loopback, literal or by name: refused before any connection to it', async () => {
    for (const path of ['/to-loopback', '/to-name']) {
      const p = await probe(path);
      assert.equal(p.error?.data.reason, 'loopback', path);
      assert.equal(p.error?.data.redirected, true, path);
      assert.match(String(p.error?.message), /^mediaUrl redirects to a non-public address \(target is loopback\)$/, path);
      assert.deepEqual(p.requests, [`HEAD ${path}`]);
    }
    assert.deepEqual(innerSeen, []);
  });

  test('a redirect to another scheme', async () => {
    const p = await probe('/to-ftp');
    assert.equal(p.error?.message, 'mediaUrl redirects to a URL that is not http or https');
    assert.equal(p.error?.data.reason, 'scheme');
  });

  test('more than 3 hops: the 5th URL is never requested', async () => {
    const p = await probe('/hop/4');
    assert.equal(p.error?.message, 'mediaUrl redirects more than 3 times');
    assert.deepEqual(p.requests, ['HEAD /hop/4', 'HEAD /hop/3', 'HEAD /hop/2', 'HEAD /hop/1']);
  });

  test('a connection refused: "could not be reached"', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.2', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    try {
      await probeMediaUrl(`http://cdn.example:${port}/a.png`, opts());
      assert.fail('not refused');
    } catch (err) {
      assert.ok(err instanceof DomainError);
      assert.equal(err.message, 'mediaUrl could not be reached: the connection was refused (ECONNREFUSED)');
      assert.deepEqual([err.status, err.data.reason, err.data.field], [400, 'unreachable', 'mediaUrl']);
    }
  });

  test('no answer within the deadline (on the injected clock): "could not be reached"', async () => {
    const clock = simulatedClock(Date.now());
    const from = seen.length;
    const pending = probeMediaUrl(url('/silent'), opts({ clock, timeoutMs: 10_000 }));
    while (!seen.slice(from).includes('HEAD /silent')) await new Promise((r) => setTimeout(r, 5));
    clock.increment(10_000);
    await assert.rejects(pending, (err: unknown) => {
      assert.ok(err instanceof DomainError);
      assert.equal(err.message, 'mediaUrl could not be reached: no answer within 10000 ms');
      assert.equal(err.data.reason, 'timeout');
      return true;
    });
  });
});

/**
 * safeFetch over real loopback sockets. Every refusal test points at a live server that counts its requests,
 * so a check that let the request through would show up as a hit (and as a different error). Names resolve
 * through an injected resolver, never real DNS. Where a test is about something else than the refusal
 * (redirect counting, size caps), the loopback server is reached through `allowPrivate` / `allowAddress`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { assertPublicUrl, safeFetch, type Resolver } from '../../src/media/ssrf.js';
import { DomainError } from '../../src/errors.js';
import { simulatedClock } from '../../src/clock.js';

const MiB = 1024 * 1024;
const PUBLIC_V4 = '93.184.216.34';

interface TestServer {
  host: string;
  port: number;
  hits: string[];
  close(): Promise<void>;
}

async function serve(host: string, handler: http.RequestListener): Promise<TestServer> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    host,
    port: (server.address() as AddressInfo).port,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const resolverFrom = (table: Record<string, string[]>): Resolver => async (host) =>
  (table[host] ?? [PUBLIC_V4]).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

async function refusal(p: Promise<unknown>): Promise<DomainError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof DomainError, `expected DomainError, got ${String(err)}`);
    assert.equal(err.status, 400);
    assert.equal(err.code, 'VALIDATION_FAILED');
    return err;
  }
  assert.fail('the fetch was not refused');
}

const base = { maxBytes: 16 * MiB, timeoutMs: 10_000 };

describe('safeFetch: the SSRF matrix against a live loopback target', () => {
  let target: TestServer;
  let target6: TestServer;
  before(async () => {
    target = await serve('127.0.0.1', (_req, res) => res.end('secret'));
    target6 = await serve('::1', (_req, res) => res.end('secret'));
  });
  after(async () => {
    await target.close();
    await target6.close();
  });

  const cases = (): [string, string, Record<string, string[]>, string][] => [
    ['127.0.0.1', `http://127.0.0.1:${target.port}/a`, {}, 'loopback'],
    ['localhost', `http://localhost:${target.port}/a`, { localhost: ['127.0.0.1'] }, 'loopback'],
    ['::1', `http://[::1]:${target6.port}/a`, {}, 'loopback'],
    ['::ffff:127.0.0.1', `http://[::ffff:127.0.0.1]:${target.port}/a`, {}, 'loopback'],
    ['2130706433', `http://2130706433:${target.port}/a`, {}, 'loopback'],
    ['0x7f.0.0.1', `http://0x7f.0.0.1:${target.port}/a`, {}, 'loopback'],
    ['0177.0.0.1', `http://0177.0.0.1:${target.port}/a`, {}, 'loopback'],
    ['127.1', `http://127.1:${target.port}/a`, {}, 'loopback'],
    ['a DNS name resolving to loopback', `http://intranet.example:${target.port}/a`, { 'intranet.example': ['127.0.0.1'] }, 'loopback'],
    ['a DNS name resolving to ::1', `http://v6.example:${target6.port}/a`, { 'v6.example': ['::1'] }, 'loopback'],
    ['a DNS name with a public and a loopback answer', `http://mixed.example:${target.port}/a`, { 'mixed.example': [PUBLIC_V4, '127.0.0.1'] }, 'loopback'],
    ['10/8', 'http://10.0.0.1/a', {}, 'private'],
    ['172.16/12', 'http://172.16.5.4/a', {}, 'private'],
    ['192.168/16', 'http://192.168.0.10/a', {}, 'private'],
    ['169.254.169.254', 'http://169.254.169.254/latest/meta-data/', {}, 'metadata'],
    ['fd00::/8', 'http://[fd00::1]/a', {}, 'unique-local'],
    ['file:', 'file:///etc/passwd', {}, 'scheme'],
    ['gopher:', `gopher://127.0.0.1:${target.port}/_GET%20/`, {}, 'scheme'],
  ];

  test('every case is refused and the target never sees a request', async () => {
    for (const [label, url, table, reason] of cases()) {
      const err = await refusal(safeFetch(url, { ...base, resolver: resolverFrom(table) }));
      assert.equal(err.data.reason, reason, label);
      assert.equal(err.data.field, 'mediaUrl', label);
    }
    assert.deepEqual(target.hits, []);
    assert.deepEqual(target6.hits, []);
  });

  test('the same target is reachable when the policy allows it (so the refusals above are the checks)', async () => {
    const res = await safeFetch(`http://intranet.example:${target.port}/ok`, {
      ...base,
      resolver: resolverFrom({ 'intranet.example': ['127.0.0.1'] }),
      allowPrivate: true,
    });
    assert.equal(res.body.toString(), 'secret');
    assert.deepEqual(target.hits, ['/ok']);
    target.hits.length = 0;
  });

  test('DNS rebinding: public at acceptance, loopback at connect → refused at connect', async () => {
    let calls = 0;
    const rebinding: Resolver = async () => [{ address: ++calls === 1 ? PUBLIC_V4 : '127.0.0.1', family: 4 }];
    const url = `http://rebind.example:${target.port}/steal`;
    await assertPublicUrl(url, { resolver: rebinding }); // first answer: public, accepted
    const err = await refusal(safeFetch(url, { ...base, resolver: rebinding }));
    assert.equal(err.data.reason, 'loopback');
    assert.equal(calls, 2, 'the connect-time lookup asked again');
    assert.deepEqual(target.hits, []);
  });

  test('credentials in the URL never appear in an error', async () => {
    const err = await refusal(safeFetch(`http://bob:hunter2@127.0.0.1:${target.port}/x?sig=abc123`, base));
    const text = JSON.stringify({ m: err.message, d: err.data });
    for (const s of ['bob', 'hunter2', 'abc123']) assert.ok(!text.includes(s), text);
  });
});

describe('safeFetch: redirects', () => {
  let hub: TestServer; // stands in for a public server: 127.0.0.2 is exempted by allowAddress
  let inner: TestServer; // the loopback target a redirect tries to reach
  before(async () => {
    inner = await serve('127.0.0.1', (_req, res) => res.end('internal'));
    hub = await serve('127.0.0.2', (req, res) => {
      const url = req.url ?? '/';
      const chain = /^\/r(\d+)$/.exec(url);
      if (chain) {
        const n = Number(chain[1]);
        res.writeHead(302, { Location: n > 1 ? `/r${n - 1}` : '/final' }).end();
      } else if (url === '/to-loopback') {
        res.writeHead(302, { Location: `http://127.0.0.1:${inner.port}/admin` }).end();
      } else if (url === '/to-name') {
        res.writeHead(307, { Location: `http://internal.example:${inner.port}/admin` }).end();
      } else if (url === '/to-file') {
        res.writeHead(301, { Location: 'file:///etc/passwd' }).end();
      } else if (url === '/auth') {
        res.end(req.headers.authorization ?? 'none');
      } else {
        res.writeHead(200, { 'Content-Type': 'image/png' }).end('final-bytes');
      }
    });
  });
  after(async () => {
    await hub.close();
    await inner.close();
  });
  const opts = () => ({
    ...base,
    resolver: resolverFrom({ 'public.example': ['127.0.0.2'], 'internal.example': ['127.0.0.1'] }),
    allowAddress: (a: string) => a === '127.0.0.2',
  });
  const url = (path: string) => `http://public.example:${hub.port}${path}`;

  test('a public-looking URL that redirects to loopback is refused; the loopback target is never reached', async () => {
    const err = await refusal(safeFetch(url('/to-loopback'), opts()));
    assert.equal(err.data.reason, 'loopback');
    const err2 = await refusal(safeFetch(url('/to-name'), opts()));
    assert.equal(err2.data.reason, 'loopback');
    assert.deepEqual(inner.hits, []);
  });

  test('a redirect to file: is refused', async () => {
    const err = await refusal(safeFetch(url('/to-file'), opts()));
    assert.equal(err.data.reason, 'scheme');
  });

  test('3 redirects are followed, the 4th is refused and never requested', async () => {
    hub.hits.length = 0;
    const ok = await safeFetch(url('/r3'), opts());
    assert.equal(ok.status, 200);
    assert.equal(ok.body.toString(), 'final-bytes');
    assert.equal(ok.mimetype, 'image/png');
    assert.equal(ok.finalUrl, url('/final'));
    assert.deepEqual(hub.hits, ['/r3', '/r2', '/r1', '/final']);

    hub.hits.length = 0;
    const err = await refusal(safeFetch(url('/r4'), opts()));
    assert.equal(err.data.reason, 'too_many_redirects');
    assert.deepEqual(hub.hits, ['/r4', '/r3', '/r2', '/r1'], 'the target of the 4th redirect was not requested');
  });

  test('URL credentials that are not valid percent-encoding are refused before any request', async () => {
    hub.hits.length = 0;
    const err = await refusal(safeFetch(`http://user:p%ss@public.example:${hub.port}/auth`, opts()));
    assert.equal(err.data.reason, 'invalid_url');
    assert.match(err.message, /percent-encoding/);
    assert.ok(!JSON.stringify({ m: err.message, d: err.data }).includes('p%ss'));
    assert.deepEqual(hub.hits, []);
  });

  test('URL credentials become a Basic header and are not in finalUrl', async () => {
    const res = await safeFetch(`http://al%40ice:p%3Ass@public.example:${hub.port}/auth`, opts());
    assert.equal(res.body.toString(), `Basic ${Buffer.from('al@ice:p:ss').toString('base64')}`);
    assert.ok(!res.finalUrl.includes('ice'));
  });
});

describe('safeFetch: size and time limits', () => {
  let srv: TestServer;
  const streamed = { written: 0, closedEarly: false, finished: false };
  before(async () => {
    srv = await serve('127.0.0.1', (req, res) => {
      if (req.url === '/declared-huge') {
        // claims 17 MiB, sends 1 KiB and then nothing: reading it would hang until the deadline
        res.writeHead(200, { 'Content-Length': String(17 * MiB) });
        res.write(Buffer.alloc(1024));
      } else if (req.url === '/endless') {
        // no Content-Length: the size is only known by counting
        res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
        const chunk = Buffer.alloc(64 * 1024, 7);
        const pump = () => {
          while (streamed.written < 40 * MiB) {
            streamed.written += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          streamed.finished = true;
          res.end();
        };
        res.on('close', () => {
          if (!streamed.finished) streamed.closedEarly = true;
        });
        pump();
      } else if (req.url === '/exact') {
        res.end(Buffer.alloc(16 * MiB, 1));
      } else if (req.url === '/silent') {
        // never answers
      } else {
        res.end('ok');
      }
    });
  });
  after(async () => srv.close());
  const local = { ...base, allowPrivate: true };

  test('a Content-Length above the cap is refused before the body is read', { timeout: 5_000 }, async () => {
    const err = await refusal(safeFetch(`http://127.0.0.1:${srv.port}/declared-huge`, { ...local, timeoutMs: 60_000 }));
    assert.equal(err.data.reason, 'too_large');
    assert.equal(err.data.maxBytes, 16 * MiB);
  });

  test('a body without a length is cut at the cap and the connection dropped', async () => {
    const err = await refusal(safeFetch(`http://127.0.0.1:${srv.port}/endless`, local));
    assert.equal(err.data.reason, 'too_large');
    await new Promise((r) => setImmediate(r));
    for (let i = 0; i < 100 && !streamed.closedEarly; i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(streamed.closedEarly, 'the server saw the client go away');
    assert.ok(streamed.written < 40 * MiB, `the server wrote ${streamed.written} bytes`);
  });

  test('exactly the cap is accepted', async () => {
    const res = await safeFetch(`http://127.0.0.1:${srv.port}/exact`, local);
    assert.equal(res.body.length, 16 * MiB);
  });

  test('a target that does not answer times out on the injected clock', async () => {
    const clock = simulatedClock(Date.now());
    const p = safeFetch(`http://127.0.0.1:${srv.port}/silent`, { ...local, timeoutMs: 30_000, clock });
    while (srv.hits.filter((h) => h === '/silent').length === 0) await new Promise((r) => setTimeout(r, 5));
    clock.increment(30_000);
    const err = await refusal(p);
    assert.equal(err.data.reason, 'timeout');
  });

  test('an unreachable port is a validation failure naming the field, not a crash', async () => {
    const closed = await serve('127.0.0.1', () => undefined);
    const port = closed.port;
    await closed.close();
    const err = await refusal(safeFetch(`http://127.0.0.1:${port}/`, { ...local, field: 'url' }));
    assert.equal(err.data.field, 'url');
    assert.equal(err.data.reason, 'unreachable');
  });
});

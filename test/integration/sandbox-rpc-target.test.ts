/**
 * The sandbox server's RPC routes (`POST /rpc`, `GET /rpc/events`, src/sandbox/rpc-server.ts) read their request
 * target as the gateway's HTTP layer reads its own (src/http/target.ts): a query with a malformed percent escape
 * (`%ZZ`, a cut UTF-8 sequence, a trailing `%`) or an encoded NUL is refused with 400 in the RPC's own error
 * format, never read literally (`instanceId=%ZZ` was the session of an instance named `%ZZ`, a cut sequence one
 * named with U+FFFD), and a path is the RPC's only when it is `/rpc` or `/rpc/events` exactly as written: the
 * WHATWG URL parser it was read with turned `/x/../rpc`, `//host/rpc` and `/%2e%2e/rpc` into `/rpc`. Over a real
 * socket, each request target sent as written (node's client does not normalise a path).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { simulatedClock } from '../../src/clock.js';
import { startSandboxServer, type SandboxServer } from '../../src/http/sandbox-server.js';

let server: SandboxServer;

before(async () => {
  server = await startSandboxServer({ port: 0, clock: simulatedClock() });
});
after(async () => {
  await server.close();
});

interface Answer { status: number; type: string; body: string }

/** One request with its target exactly as given; an event stream is answered by its head alone (then closed). */
function send(method: string, target: string, body?: string): Promise<Answer> {
  const u = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port: u.port, method, path: target, agent: false, headers: body === undefined ? {} : { 'content-type': 'application/json' } },
      (res) => {
        const type = String(res.headers['content-type'] ?? '');
        if (type.startsWith('text/event-stream')) {
          req.destroy();
          return resolve({ status: res.statusCode ?? 0, type, body: '' });
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const CALL = JSON.stringify({ instanceId: 'inst-target', clientId: 'client-target', method: 'getState', args: [] });

/** The RPC's refusal: 400 `{ok:false, error:{code:'INVALID_INPUT', message, provablyNotSent:true}}`. */
function assertRpcRefusal(a: Answer, what: string): string {
  assert.equal(a.status, 400, `${what}: ${a.status} ${a.body}`);
  const body = JSON.parse(a.body) as { ok?: unknown; error?: { code?: unknown; message?: unknown; provablyNotSent?: unknown } };
  assert.equal(body.ok, false, what);
  assert.equal(body.error?.code, 'INVALID_INPUT', what);
  assert.equal(body.error?.provablyNotSent, true, what);
  assert.equal(typeof body.error?.message, 'string', what);
  return String(body.error?.message);
}

test('a malformed percent escape or an encoded NUL in the query is refused in the RPC format, never read literally', async () => {
  const malformed = ['%ZZ', '%E0%A4%A', 'abc%', '%C3', '%FF', 'a%00b'];
  for (const value of malformed) {
    for (const query of [`instanceId=${value}&clientId=client-target`, `instanceId=inst-target&clientId=${value}`]) {
      const a = await send('GET', `/rpc/events?${query}`);
      const message = assertRpcRefusal(a, `GET /rpc/events?${query}`);
      assert.ok(!message.includes(value), `the message echoes nothing of the query: ${message}`);
    }
    // POST /rpc reads no query, but one it cannot read is refused before the call runs, as the gateway refuses it
    assertRpcRefusal(await send('POST', `/rpc?since=${value}`, CALL), `POST /rpc?since=${value}`);
  }
  // a malformed escape in a parameter's name too
  assertRpcRefusal(await send('GET', '/rpc/events?instanceId=inst-target&clientId=client-target&%ZZ=1'), 'a malformed name');
  // a parameter given twice is ambiguous: which instance's stream is this?
  assertRpcRefusal(await send('GET', '/rpc/events?instanceId=a&instanceId=b&clientId=client-target'), 'instanceId twice');
  assertRpcRefusal(await send('GET', '/rpc/events?instanceId=a&clientId=c1&clientId=c2'), 'clientId twice');
});

test('well-formed queries are read as before: escapes and + decoded', async () => {
  const stream = await send('GET', '/rpc/events?instanceId=inst%2Dtarget&clientId=client-target');
  assert.equal(stream.status, 200);
  assert.match(stream.type, /^text\/event-stream/);
  const plus = await send('GET', '/rpc/events?instanceId=inst+target&clientId=client%2Dtarget&other=%25');
  assert.equal(plus.status, 200);
  const call = await send('POST', '/rpc?trace=%20ok', CALL);
  assert.equal(call.status, 200, call.body);
  assert.equal((JSON.parse(call.body) as { ok: unknown }).ok, true, call.body);
  // what was there before: a missing id is refused in the RPC format
  assertRpcRefusal(await send('GET', '/rpc/events?clientId=client-target'), 'no instanceId');
});

test('a path is the RPC’s only exactly as written: dot segments, double slashes and encoded dots are no /rpc', async () => {
  const posts = ['/x/../rpc', '//host/rpc', '/%2e%2e/rpc', '/rpc/.', '/./rpc', '/rpc/', '/RPC', '/rpc%2F'];
  for (const target of posts) {
    const a = await send('POST', target, CALL);
    assert.notEqual(a.status, 200, `POST ${target} ran the call: ${a.body}`);
    // not an RPC path: the control API's app answers it, in the gateway's envelope
    const body = JSON.parse(a.body) as { success?: unknown; code?: unknown };
    assert.equal(body.success, false, `POST ${target}: ${a.body}`);
    assert.ok(a.status === 404 || a.status === 400, `POST ${target}: ${a.status} ${a.body}`);
  }
  const gets = ['/rpc/./events', '/x/../rpc/events', '//host/rpc/events', '/rpc/%2e/events', '/rpc//events', '/rpc/events/'];
  for (const target of gets) {
    const a = await send('GET', `${target}?instanceId=inst-target&clientId=client-target`);
    assert.equal(a.status, 404, `GET ${target} opened a stream: ${a.status} ${a.type}`);
    assert.equal((JSON.parse(a.body) as { code?: unknown }).code, 'NOT_FOUND', a.body);
  }
});

test('the control API on the same server refuses a malformed query in its own envelope (the ledger’s since=%ZZ)', async () => {
  for (const since of ['%ZZ', '%E0%A4%A', '1%']) {
    const a = await send('GET', `/sandbox/v1/instances/inst-target/ledger?since=${since}`);
    assert.equal(a.status, 400, a.body);
    const body = JSON.parse(a.body) as { success?: unknown; code?: unknown; data?: { field?: unknown } };
    assert.deepEqual([body.success, body.code, body.data?.field], [false, 'VALIDATION_FAILED', 'since'], a.body);
  }
});

test('a target in absolute form (as a proxy sends it) is the RPC’s as its origin form is; its path is still read as written', async () => {
  const call = await send('POST', 'http://sandbox.example/rpc', CALL);
  assert.equal(call.status, 200, call.body);
  assert.equal((JSON.parse(call.body) as { ok: unknown }).ok, true, call.body);
  const stream = await send('GET', 'http://sandbox.example:3100/rpc/events?instanceId=inst-target&clientId=client-target');
  assert.equal(stream.status, 200);
  assert.match(stream.type, /^text\/event-stream/);
  assertRpcRefusal(await send('POST', 'HTTP://sandbox.example/rpc?a=%ZZ', CALL), 'a malformed query in absolute form');
  for (const target of ['http://sandbox.example/x/../rpc', 'http://sandbox.example//rpc', 'http://sandbox.example']) {
    const a = await send('POST', target, CALL);
    assert.notEqual(a.status, 200, `POST ${target} ran the call: ${a.body}`);
  }
});

/**
 * Only an error the store raised says that PostgreSQL is unreachable. Found from the outside: the test
 * (src/store/health.ts isConnectionError) read the code and the text of ANY error, so a request whose validation
 * message echoed a caller's text that reads like a socket's (a field named `ECONNRESET`, `?state=Connection
 * terminated`) was answered `503 QUEUE_STORE_UNAVAILABLE` ("the persistent queue is unreachable", `queueMode:
 * memory-degraded`) with a store probe, where it is `400 VALIDATION_FAILED`; and a socket error of any other
 * peer (a media host, a webhook receiver, another node) would be taken for PostgreSQL's wherever it was not
 * wrapped first. Now the store's pools and clients mark what they raise (src/store/pool.ts), and only a marked
 * error is judged by its code and text; real store failures (a server that refuses, a session terminated) are
 * still recognised, through the pool and through a checked-out client.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { NEEDS_SERVER } from '../helpers/db.js';
import { isConnectionError } from '../../src/store/health.js';
import { createPool, probePool } from '../../src/store/pool.js';
import { translate } from '../../src/http/translate.js';
import { failureReply, replyErrorToThrow, type AskReply, type ReplyError } from '../../src/actors/port.js';

let g: TestGateway;
let key: string;
let instanceId: string;
let probes = 0;

before(async () => {
  // simulated: no periodic store probe runs, so every probe counted is one a request asked for
  g = await startTestGateway({ label: 'errorigin', simulated: true });
  const created = await g.createInstance('origin', { link: false });
  key = created.apiKey;
  instanceId = created.instance.id;
  // the health probe asks on a connection of its own (src/store/pool.ts probePool)
  const pool = probePool(g.gw.pool) as unknown as { query: (...a: unknown[]) => unknown };
  const query = pool.query.bind(pool);
  pool.query = (...a: unknown[]) => {
    if (a[0] === 'SELECT 1') probes += 1;
    return query(...a);
  };
});

after(async () => {
  await g.stop();
});

test('a validation failure that echoes a socket-like text is 400 VALIDATION_FAILED, with no store probe', async () => {
  const cases: Array<[string, () => Promise<{ status: number; body: { code?: string; data?: Record<string, unknown> } }>, string]> = [
    ['an unknown body field named ECONNRESET', () => g.admin('POST', '/admin/v1/instances', { name: 'x', ECONNRESET: 1 }), 'ECONNRESET'],
    ['a body field named "Connection terminated"', () => g.admin('POST', `/admin/v1/instances/${instanceId}/webhook/test`, { 'Connection terminated': 1 }), 'Connection terminated'],
    ['an enum query value ECONNRESET (API key)', () => g.api(key, 'GET', '/api/v2/queue/items?state=ECONNRESET'), 'state'],
    ['an enum query value "Connection terminated"', () => g.admin('GET', `/admin/v1/instances/${instanceId}/webhook/deliveries?state=Connection%20terminated`), 'state'],
  ];
  for (const [what, ask, field] of cases) {
    const before = probes;
    const r = await ask();
    assert.deepEqual([r.status, r.body.code, r.body.data?.field], [400, 'VALIDATION_FAILED', field], what);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(probes, before, `${what}: no store probe`);
  }
  assert.equal((await g.api(key, 'GET', '/api/v2/queue')).body.data?.mode, 'pg');
});

test("another peer's socket error is not the store's: not QUEUE_STORE_UNAVAILABLE, no probe, no store_unreachable reply", () => {
  const socketErrors = [
    Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' }),
    Object.assign(new Error('connect ECONNREFUSED 203.0.113.9:443'), { code: 'ECONNREFUSED', syscall: 'connect' }),
    Object.assign(new Error('getaddrinfo ENOTFOUND media.example'), { code: 'ENOTFOUND', syscall: 'getaddrinfo' }),
  ];
  for (const err of socketErrors) {
    let probed = 0;
    assert.equal(isConnectionError(err), false, err.message);
    assert.equal(translate(err, { onStoreError: () => probed++ }).code, 'INTERNAL_ERROR', err.message);
    assert.equal(probed, 0, err.message);
    const reply = failureReply(err, () => undefined);
    assert.ok(!reply.ok && reply.error.code === 'INTERNAL_ERROR' && reply.error.cause === undefined, err.message);
  }
});

test('the store still knows its own failures: a refused connection (pool) and a terminated session (checked-out client)', async () => {
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as net.AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const refusing = createPool({ host: '127.0.0.1', port, user: 'x', database: 'x', connectionTimeoutMillis: 1_000 });
  refusing.on('error', () => undefined);
  try {
    const viaQuery = await refusing.query('SELECT 1').then(() => null, (err: unknown) => err);
    assert.ok(viaQuery && isConnectionError(viaQuery), `pool.query: ${String(viaQuery)}`);
    let probed = 0;
    assert.equal(translate(viaQuery, { onStoreError: () => probed++ }).code, 'QUEUE_STORE_UNAVAILABLE');
    assert.equal(probed, 1);
    const viaConnect = await refusing.connect().then(() => null, (err: unknown) => err);
    assert.ok(viaConnect && isConnectionError(viaConnect), `pool.connect: ${String(viaConnect)}`);
  } finally {
    await refusing.end();
  }

  // a session the server terminates (57P01, FATAL) under a checked-out client: the client's own query fails
  const pool = createPool({ ...g.db.config, max: 2 });
  pool.on('error', () => undefined);
  const client = await pool.connect();
  client.on('error', () => undefined);
  try {
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    await g.db.pool.query('SELECT pg_terminate_backend($1)', [pid]);
    const err = await client.query('SELECT 1').then(() => null, (e: unknown) => e);
    assert.ok(err && isConnectionError(err), `client.query: ${String(err)}`);
  } finally {
    client.release(true);
    await pool.end();
  }
});

test("a server error that quotes a caller's text is judged by its code: a cast of 'ECONNRESET' is not the store unreachable", async () => {
  // the store raised it (marked), and its message holds the value: `invalid input syntax for type uuid: "ECONNRESET"`
  const err = await g.gw.pool.query('SELECT $1::uuid', ['ECONNRESET: Connection terminated']).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof Error && /ECONNRESET/.test(err.message), String(err));
  assert.equal((err as { code?: string }).code, '22P02');
  assert.equal(isConnectionError(err), false);
  let probed = 0;
  assert.equal(translate(err, { onStoreError: () => probed++ }).code, 'INTERNAL_ERROR');
  assert.equal(probed, 0);
});

test('no free connection in time is answered by what the probe, on its own connection, finds: busy while PostgreSQL answers, unreachable once it does not', async () => {
  const pool = createPool({ ...g.db.config, max: 1, connectionTimeoutMillis: 100 });
  const held = await pool.connect();
  try {
    const err = await pool.query('SELECT 1').then(() => null, (e: unknown) => e);
    assert.ok(err instanceof Error && /timeout exceeded when trying to connect/.test(err.message), String(err));
    assert.ok(isConnectionError(err), 'still a connection failure for what is done with it (a group fails as one)');
    const busy = translate(err, { storeDegraded: () => false });
    assert.deepEqual([busy.status, busy.code, busy.data], [503, 'QUEUE_STORE_UNAVAILABLE', { queueMode: 'pg', reason: 'store_timeout' }]);
    const down = translate(err, { storeDegraded: () => true });
    assert.deepEqual([down.status, down.code, down.data], [503, 'QUEUE_STORE_UNAVAILABLE', { queueMode: 'memory-degraded' }]);
    // the same under an actor (a v2 send's acceptance): its reply carries what the probe found to the route
    const report = () => assert.fail('a store failure is not reported as unexpected');
    const replyError = (r: AskReply): ReplyError => (r.ok ? assert.fail('a failure') : r.error);
    const viaActor = (degraded: boolean) => translate(replyErrorToThrow(replyError(failureReply(err, report, () => degraded))), { storeDegraded: () => degraded });
    const busyAsk = viaActor(false);
    assert.deepEqual([busyAsk.status, busyAsk.code, busyAsk.data], [503, 'QUEUE_STORE_UNAVAILABLE', { queueMode: 'pg', reason: 'store_timeout' }]);
    assert.match(busyAsk.message, /every connection to PostgreSQL was busy/);
    const downAsk = viaActor(true);
    assert.deepEqual([downAsk.status, downAsk.code, downAsk.data], [503, 'QUEUE_STORE_UNAVAILABLE', { queueMode: 'memory-degraded' }]);
  } finally {
    held.release();
    await pool.end();
  }
});

test("a lock held elsewhere that takes every connection of the gateway's pool: an operator read is 503 store_timeout in pg, the probe (its own connection) finds PostgreSQL answering, no queue degrades", NEEDS_SERVER, async () => {
  const holder = await g.db.pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE');
    // more reads of `jobs` than the pool has connections: each holds one, waiting on the lock until its statement deadline
    const reads = Array.from({ length: 12 }, () => g.api(key, 'GET', '/api/v2/queue/items?limit=5'));
    const before = probes;
    const list = await g.admin('GET', '/admin/v1/instances');
    assert.deepEqual([list.status, list.body.code, list.body.data], [503, 'QUEUE_STORE_UNAVAILABLE', { queueMode: 'pg', reason: 'store_timeout' }], JSON.stringify(list.body));
    await holder.query('ROLLBACK');
    for (const r of await Promise.all(reads)) assert.ok([200, 503].includes(r.status), JSON.stringify(r.body));
    assert.ok(probes > before, 'the busy pool made the gateway probe PostgreSQL');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const health = await fetch(`${g.url}/health`).then((r) => r.json() as Promise<{ queue: { degraded: number } }>);
    assert.equal(health.queue.degraded, 0, 'the probe found PostgreSQL answering: no queue switched to memory-degraded');
    assert.equal((await g.api(key, 'GET', '/api/v2/queue')).body.data?.mode, 'pg');
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    holder.release();
  }
});

/**
 * A busy store is not an unreachable one: the health probe (src/store/health.ts) waits for a connection of the
 * pool like any query, and a start of many full queues keeps every connection busy for longer than the probe's
 * deadline. Found from the outside: a node taking over 200 full queues switched every queue to memory-degraded for
 * a second (sends answered 503 after every queue had loaded). A probe past its deadline while PostgreSQL answered
 * the pool's other queries meanwhile now counts as answered; one that nothing answered still does not.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { createPool, lastAnswerAt } from '../../src/store/pool.js';
import { StoreHealth } from '../../src/store/health.js';
import { systemClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';

let db: TestDb;
before(async () => {
  db = await createTestDb('store_health_busy');
});
after(async () => {
  await db?.close();
});

test('a probe stuck behind the pool\'s own work, while PostgreSQL answers it, leaves the store reachable', async () => {
  // one connection, and a second of work queued on it: the probe waits behind it past its 200 ms deadline
  const pool = createPool({ ...db.config, max: 1 });
  const health = new StoreHealth({ pool, clock: systemClock, log: silentLogger(), probeTimeoutMs: 200 });
  try {
    await pool.query('SELECT 1');
    const work = Array.from({ length: 20 }, () => pool.query('SELECT pg_sleep(0.05)'));
    const asked = performance.now();
    await health.probe();
    assert.ok(lastAnswerAt(pool) > asked, 'the pool was answered meanwhile');
    assert.equal(health.degraded, false, 'busy, not unreachable');
    await Promise.all(work);
  } finally {
    health.stop();
    await pool.end();
  }
});

test('a probe that nothing answers (a server that accepts and says nothing) still finds the store unreachable', async () => {
  // a silent peer: connections are accepted, no byte ever comes back (a partition, from the client's side)
  const sockets = new Set<net.Socket>();
  const silent = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const port = (silent.address() as net.AddressInfo).port;
  const pool = createPool({ host: '127.0.0.1', port, user: 'x', database: 'x', max: 1, connectionTimeoutMillis: 5_000 });
  pool.on('error', () => undefined);
  const health = new StoreHealth({ pool, clock: systemClock, log: silentLogger(), probeTimeoutMs: 200 });
  try {
    await health.probe();
    assert.equal(health.degraded, true);
  } finally {
    health.stop();
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => silent.close(resolve));
    await pool.end().catch(() => undefined);
  }
});

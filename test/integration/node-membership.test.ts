/**
 * Cluster membership against a real database (src/cluster/nodes.ts), with real HTTP servers as the addresses of
 * nodes: a second process given a live node's NODE_ID is refused, with or without the secret, and leaves that
 * node's registration as it was; a node's own earlier process (the same address, or one where nothing answers
 * any more) is taken over; a node whose registration was removed registers again at its next heartbeat; a
 * process leaving removes only its own registration. Found from the outside: a process without any secret,
 * given a live node's NODE_ID, took over that node's row, and the nodes started after it with the right secret
 * were refused.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { ClusterRefused, healthProbe, heartbeat, leaveCluster, liveNodes, registerNode, secretHash } from '../../src/cluster/nodes.js';

const TTL = 60_000;
const HASH = secretHash('cluster-secret-0123456789abcdef');
const probe = healthProbe(1_000);
let db: TestDb;
let live: http.Server;
let liveUrl = '';

before(async () => {
  db = await createTestDb('membership');
  // the address of the node that runs: whatever it answers, a process is there
  live = http.createServer((_req, res) => res.end('{"status":"ok"}'));
  await new Promise<void>((r) => live.listen(0, '127.0.0.1', r));
  liveUrl = `http://127.0.0.1:${(live.address() as AddressInfo).port}`;
});
after(async () => {
  live.close();
  await db?.close();
});

const row = async (id: string) =>
  (await db.pool.query<{ url: string; secret_hash: string | null }>('SELECT url, secret_hash FROM nodes WHERE id = $1', [id])).rows[0];

/** An address where nothing answers (a port that was just free). */
async function deadUrl(): Promise<string> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  await new Promise<void>((r) => s.close(() => r()));
  return url;
}

test('a second process with a live node\'s NODE_ID is refused, with the secret or without, and the live registration stays', async () => {
  const n1 = { id: 'n1', url: liveUrl, capacity: 100 };
  await registerNode(db.pool, n1, HASH, TTL, probe);
  for (const hash of [null, HASH]) {
    await assert.rejects(
      registerNode(db.pool, { id: 'n1', url: 'http://127.0.0.1:1/other', capacity: 100 }, hash, TTL, probe),
      (err: unknown) => err instanceof ClusterRefused && /NODE_ID n1 is in use by a live node/.test(err.message),
    );
    assert.deepEqual(await row('n1'), { url: liveUrl, secret_hash: HASH }, 'the live node\'s address and secret are kept');
  }
  // the nodes after it, with the right secret, still join; without it they are refused as before
  await registerNode(db.pool, { id: 'n2', url: await deadUrl(), capacity: 100 }, HASH, TTL, probe);
  await assert.rejects(registerNode(db.pool, { id: 'n3', url: await deadUrl(), capacity: 100 }, null, TTL, probe), ClusterRefused);
  assert.deepEqual((await liveNodes(db.pool, TTL)).map((n) => n.id), ['n1', 'n2']);
});

test('a node\'s own earlier process is taken over: at the same address, or where nothing answers any more', async () => {
  const earlier = await deadUrl();
  await registerNode(db.pool, { id: 'n4', url: earlier, capacity: 100 }, HASH, TTL, probe);
  // restarted at the same address (it was killed; its heartbeat is still young)
  await registerNode(db.pool, { id: 'n4', url: earlier, capacity: 100 }, HASH, TTL, probe);
  // restarted elsewhere: the old address does not answer
  const now = await deadUrl();
  await registerNode(db.pool, { id: 'n4', url: now, capacity: 100 }, HASH, TTL, probe);
  assert.equal((await row('n4'))?.url, now);
});

test('a registration removed under a node comes back with its next heartbeat; a process leaves only its own', async () => {
  const n5 = { id: 'n5', url: await deadUrl(), capacity: 100 };
  await registerNode(db.pool, n5, HASH, TTL, probe);
  assert.equal(await heartbeat(db.pool, n5, HASH, TTL), n5.url);
  // another process with the same id at another address leaving: n5's row stays
  await leaveCluster(db.pool, { ...n5, url: 'http://127.0.0.1:1/other' });
  assert.equal((await row('n5'))?.url, n5.url);
  await db.pool.query('DELETE FROM nodes WHERE id = $1', ['n5']);
  assert.equal(await heartbeat(db.pool, n5, HASH, TTL), null, 'the heartbeat says the row was gone');
  assert.deepEqual(await row('n5'), { url: n5.url, secret_hash: HASH }, 'and registers again');
  await leaveCluster(db.pool, n5);
  assert.equal(await row('n5'), undefined);
});

test('a node\'s clock offset: written by its heartbeat, kept by one that has none to give, and cleared when a process of that id registers', async () => {
  const n6 = { id: 'n6', url: await deadUrl(), capacity: 100 };
  const offset = async () => (await liveNodes(db.pool, TTL)).find((n) => n.id === 'n6')?.clockOffsetMs;
  await registerNode(db.pool, n6, HASH, TTL, probe);
  assert.equal(await offset(), null, 'null until measured');
  await heartbeat(db.pool, n6, HASH, TTL, 1_234);
  assert.equal(await offset(), 1_234);
  await heartbeat(db.pool, n6, HASH, TTL);
  assert.equal(await offset(), 1_234, 'a heartbeat without a reading keeps the last');
  // the process was killed (its row stayed) and started again: the last run's offset is not this run's
  await registerNode(db.pool, n6, HASH, TTL, probe);
  assert.equal(await offset(), null, 'null again until this process measures it');
  await leaveCluster(db.pool, n6);
});

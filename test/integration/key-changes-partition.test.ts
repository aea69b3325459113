/**
 * The key-change watch (src/store/key-changes.ts) through a partition: a TCP proxy between it and PostgreSQL
 * that drops everything and closes nothing. Found from the outside: after a healed partition the watch said it
 * was listening while its connection, left half-open, heard nothing, and a graceful stop waited 30 s on that
 * connection's end until the hard stop (exit 1). Now an unanswered check drops the connection (the key cache is
 * told the watch is down, and it listens anew once the store answers), and a stop drops a connection whose server
 * does not answer its end. Real PostgreSQL, real sockets, short check intervals.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { createTestDb, NEEDS_SERVER, type TestDb } from '../helpers/db.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/gateway.js';
import { watchKeyChanges } from '../../src/store/key-changes.js';
import { systemClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';

let db: TestDb;
let proxy: TcpProxy;
let connectionString = '';

before(async () => {
  if (NEEDS_SERVER.skip) return;
  db = await createTestDb('key_changes_partition');
  const u = new URL(db.url ?? '');
  proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 5432) });
  u.port = String(proxy.port);
  connectionString = u.toString();
});
after(async () => {
  if (NEEDS_SERVER.skip) return;
  await proxy.close();
  await db.close();
});

test('a partition: the watch finds its connection silent, says so, listens anew once healed, and a stop in a partition ends at once', NEEDS_SERVER, async () => {
  const states: boolean[] = [];
  let changedAll = 0;
  const watch = watchKeyChanges({
    connection: { connectionString },
    clock: systemClock,
    log: silentLogger(),
    changed: (ids) => {
      if (ids === null) changedAll += 1;
    },
    watching: (on) => void states.push(on),
    checks: { everyMs: 100, withinMs: 300, closeWithinMs: 300 },
  });
  try {
    await waitFor(() => states.at(-1) === true, 'listening');
    const heardBefore = changedAll;

    await proxy.cut('blackhole');
    await waitFor(() => states.at(-1) === false, 'the silent connection taken for lost');
    await proxy.restore();
    await waitFor(() => states.at(-1) === true, 'listening anew once the store answers', 10_000);
    assert.ok(changedAll > heardBefore, 'what changed meanwhile may have been missed: every cached key is looked up again');

    await proxy.cut('blackhole');
    const t0 = performance.now();
    await watch.stop();
    const tookMs = performance.now() - t0;
    assert.ok(tookMs < 2_000, `the stop took ${Math.round(tookMs)} ms in a partition`);
  } finally {
    await proxy.restore();
    await watch.stop();
  }
});

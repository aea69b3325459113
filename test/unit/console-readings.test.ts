/**
 * The console's poll (src/console/readings.ts) and an instance deleted between the poll's list read and its
 * describe: the port of an instance no node runs answers INSTANCE_NOT_FOUND once its row is gone
 * (src/cluster/remote-port.ts). The poll leaves that instance out and sends the others, where it failed whole
 * (found by the outside probe with GET /admin/v1/instances, which the same describe failed: a 404 of the list;
 * test/integration/instance-list-deleted.test.ts makes that moment with locks). Any other failed view still fails
 * the poll. The instance service is a stand-in here: the describe answers as the real one does then.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { consoleReadings } from '../../src/console/readings.js';
import { DomainError } from '../../src/errors.js';
import type { Instance } from '../../src/store/instances.js';

const inst = (id: string): Instance => ({
  id, name: id, driver: 'sandbox', phoneNumber: null, createdAt: '2026-01-05T10:00:00.000Z', lastDispatchAt: null, planEpoch: 0,
  settings: { maxPerHour: 40, maxPer24h: 500, minDelayMs: 4000, maxDelayMs: 12000, quietHours: null, defaultTtlSeconds: 86400, legacyQueueMode: 'sync', enabled: true, storeIncomingMedia: false },
});

function readingsWith(fail: (id: string) => Error | null) {
  const listed = [inst('kept'), inst('doomed')];
  return consoleReadings({
    instances: {
      list: async () => listed,
      describe: async (i: Instance) => {
        const err = fail(i.id);
        if (err) throw err;
        return { id: i.id, name: i.name, status: 'connected', stateUnknown: null };
      },
    },
  });
}

test('an instance deleted between the list read and its describe is left out of the poll; the others are sent', async () => {
  const readings = readingsWith((id) => (id === 'doomed' ? new DomainError('INSTANCE_NOT_FOUND', 'the instance was deleted; nothing was accepted') : null));
  const snapshot = await readings.read();
  assert.deepEqual(snapshot.items.map((i) => i.id), ['kept']);
  assert.equal(snapshot.items[0]?.status, 'connected');
  // asked again at the next poll (the list still names it here), left out again, never a stale reading of it
  const again = await readings.read();
  assert.deepEqual(again.items.map((i) => i.id), ['kept']);
});

test('any other failed view still fails the poll', async () => {
  const readings = readingsWith((id) => (id === 'doomed' ? new Error('something else') : null));
  await assert.rejects(readings.read(), /something else/);
});

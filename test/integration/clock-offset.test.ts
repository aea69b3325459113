/**
 * A node's clock against the database's (src/cluster/clock-offset.ts): each cluster round reads the database's
 * clock between two readings of the clock the node plans by, the operator API lists every node's offset
 * (GET /admin/v1/nodes `clockOffsetMs`), and an offset past a second is said in the log once, not at every round.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { ClockOffset, OFFSET_WARN_MS } from '../../src/cluster/clock-offset.js';

const DAY_MS = 86_400_000;

interface NodeItem {
  id: string;
  self: boolean;
  heartbeatAt: string;
  clockOffsetMs: number | null;
}

const selfNode = async (t: TestGateway): Promise<NodeItem | undefined> =>
  ((await t.admin('GET', '/admin/v1/nodes')).body.data as { items: NodeItem[] }).items.find((n) => n.self);

test('a node whose clock is far behind the database\'s: its offset listed, said once in the log', async () => {
  const lines: string[] = [];
  // the simulated clock stands at 2026-01-05: months behind the database's
  // rounds every 500 ms (a quarter of the lease), on real time
  const t = await startTestGateway({ label: 'clock_behind', simulated: true, logLines: lines, env: { LEASE_TTL_MS: '2000' } });
  try {
    const self = await selfNode(t);
    assert.ok(self && typeof self.clockOffsetMs === 'number', JSON.stringify(self));
    const expected = Date.UTC(2026, 0, 5, 10, 0, 0) - Date.now();
    assert.ok(Math.abs(self.clockOffsetMs - expected) < DAY_MS, `${self.clockOffsetMs} is about ${expected}`);
    // two more rounds (each heartbeat moves heartbeatAt)
    let seen = self.heartbeatAt;
    for (let round = 0; round < 2; round++) {
      seen = await waitFor(async () => {
        const now = (await selfNode(t))?.heartbeatAt;
        return now !== undefined && now !== seen ? now : null;
      }, 'the next heartbeat', 1_000);
    }
    const warned = lines.filter((l) => l.includes("this node's clock is") && l.includes("behind the database's"));
    assert.equal(warned.length, 1, `said once over three rounds: ${warned.join('')}`);
    const line = JSON.parse(warned[0] as string) as { level: number; clockOffsetMs: number; node: string };
    assert.equal(line.level, 40, 'a warning');
    assert.equal(line.node, self.id);
    assert.ok(line.clockOffsetMs < -DAY_MS);
  } finally {
    await t.stop();
  }
});

test('a node on the system clock beside its database: an offset within the reading, nothing said', async () => {
  const lines: string[] = [];
  const t = await startTestGateway({ label: 'clock_agrees', logLines: lines });
  try {
    const self = await selfNode(t);
    assert.ok(self && typeof self.clockOffsetMs === 'number' && Math.abs(self.clockOffsetMs) < OFFSET_WARN_MS, JSON.stringify(self));
    assert.ok(!lines.some((l) => l.includes("this node's clock")), lines.join(''));
  } finally {
    await t.stop();
  }
});

test('the offset: the node\'s clock at the midpoint of the reading minus the database\'s; warned past the threshold beyond the round trip, agreed again under half', () => {
  const c = new ClockOffset();
  // read through a function: an assertion on the getter would narrow it for the rest of the test
  const reading = () => c.reading;
  assert.equal(reading(), null, 'nothing read yet');
  // ahead by 1,500 ms, read within 10 ms: warned
  assert.equal(c.read(10_000, 8_505, 10_010), 'warn');
  assert.deepEqual(reading(), { offsetMs: 1_500, withinMs: 5 });
  // still off: said once
  assert.equal(c.read(20_000, 18_000, 20_000), null);
  // about the threshold but not under half of it: nothing new
  assert.equal(c.read(30_000, 29_200, 30_000), null);
  assert.equal(c.read(40_000, 39_700, 40_000), 'agree');
  // past the threshold by less than the reading's uncertainty: not warned (a slow round trip is no offset)
  assert.equal(c.read(50_000, 49_100, 50_800), null);
  assert.deepEqual(reading(), { offsetMs: 1_300, withinMs: 400 });
  // behind
  assert.equal(c.read(60_000, 62_000, 60_000), 'warn');
  assert.equal(reading()?.offsetMs, -2_000);
});

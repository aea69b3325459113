/**
 * The outcome totals a gateway answers after a restart are the ones its jobs say: sends that went out, one the network
 * refused and one cancelled, by the real gateway over the sandbox; then a new gateway over the same database reads
 * them at its start (src/queue/sql/loadStarts.ts, from the totals sql/0018's trigger kept as the first one wrote the
 * outcomes) and GET /api/status and GET /metrics answer what counting the jobs answers.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/log.js';
import { queueCounts } from '../../src/queue/sql/queueCounts.js';
import { ADMIN_TOKEN, startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';

let t: TestGateway | undefined;
let again: Gateway | undefined;
after(async () => {
  await again?.stop();
  await t?.stop();
});

const FAST = { minDelayMs: 1000, maxDelayMs: 1000, quietHours: null, maxPerHour: null, maxPer24h: null };

test('after sends, a refusal and a cancel, a restarted gateway answers the totals counting the jobs answers', async () => {
  t = await startTestGateway({ label: 'totals_restart', simulated: true });
  const gw = t;
  const { instance, apiKey } = await gw.createInstance('totals', { settings: FAST });
  const send = (body: Record<string, unknown>) => gw.accept(apiKey, body);
  for (let i = 0; i < 3; i++) await send({ phone: '4915112345678', message: `ok ${i}` });
  await send({ phone: '4915112340000', message: 'nobody there' }); // NOT_REGISTERED → failed
  const later = await send({ phone: '4915112345678', message: 'cancel me', notBefore: new Date(gw.clock.now() + 3_600_000).toISOString() });
  assert.equal((await gw.api(apiKey, 'DELETE', `/api/v2/messages/${later}`)).status, 200);
  await gw.advanceUntil(async () => {
    const c = await queueCounts(gw.db.pool, instance.id, gw.clock.now());
    return c.sent === 3 && c.failed === 1 ? true : null;
  }, 'three sent and one failed', { maxMs: 600_000 });
  const truth = await queueCounts(gw.db.pool, instance.id, gw.clock.now());
  const { rows } = await gw.db.pool.query<{ state: string; n: number }>('SELECT state, n::int AS n FROM job_outcome_totals WHERE instance_id = $1 ORDER BY state', [instance.id]);
  assert.deepEqual(rows, [{ state: 'cancelled', n: 1 }, { state: 'failed', n: 1 }, { state: 'sent', n: 3 }], 'the trigger counted each as it was written');

  await gw.gw.stop();
  again = await startGateway({
    config: loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: gw.dataDir, ADMIN_TOKEN, DEMO_INSTANCE: 'false', LOG_LEVEL: 'fatal' }),
    database: gw.db.config,
    ...(gw.sim ? { clock: gw.sim } : {}),
    log: silentLogger(),
  });
  const url = again.url;
  const status = await waitFor(async () => {
    const r = await fetch(`${url}/api/status`, { headers: { authorization: `Bearer ${apiKey}` } });
    const body = (await r.json()) as { data?: { queue?: Record<string, number> } };
    return r.status === 200 && body.data?.queue ? body.data.queue : null;
  }, 'the restarted gateway answers its status');
  for (const k of ['sent', 'failed', 'unknown', 'queued', 'scheduled', 'sending'] as const) assert.equal(status[k], truth[k], `queue.${k} after the restart`);
  const metrics = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  for (const [state, n] of [['sent', 3], ['failed', 1], ['cancelled', 1], ['queued', 0]] as const) {
    assert.match(metrics, new RegExp(`^mgw_jobs\\{state="${state}"\\} ${n}$`, 'm'), `mgw_jobs ${state}`);
  }
});

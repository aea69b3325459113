/**
 * An idempotent send still being prepared (its mediaUrl's probe slow) when the instance goes offline, and its
 * retry refused at the gate meanwhile: the retry is told 503 INSTANCE_OFFLINE, 'no job has the key', so the first
 * send must not be accepted after it (it was: 202, and the message went out once the instance was back). The gate
 * is checked again in the turn the send is offered (src/http/routes/queue-gate.ts `gatedOnce`).
 * Real HTTP, real PostgreSQL, the sandbox network; a loopback server stands in for the public media host.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, unlinkUntilOffline, waitFor, type TestGateway } from '../helpers/gateway.js';
import { NEEDS_SERVER } from '../helpers/db.js';
import { setNetworkDefaults } from '../../src/media/ssrf.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
let t: TestGateway;
let server: http.Server;
let port = 0;
let restore: () => void = () => undefined;
let firstDelayMs = 0;
let requests = 0;
before(async () => {
  restore = setNetworkDefaults({ resolver: async () => [{ address: '127.0.0.1', family: 4 }], allowAddress: (a) => a === '127.0.0.1' });
  server = http.createServer((req, res) => {
    requests += 1;
    const delay = requests === 1 ? firstDelayMs : 0;
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG.length });
      res.end(req.method === 'HEAD' ? undefined : PNG);
    }, delay);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  t = await startTestGateway({ label: 'replay_prepare' });
});
after(async () => {
  await t.stop();
  server.close();
  restore();
});

const SETTINGS = { minDelayMs: 1_000, maxDelayMs: 1_000, quietHours: null, maxPerHour: null, maxPer24h: null };

test('a send prepared across the instance going offline is not accepted after its retry was told no job has the key', NEEDS_SERVER, async () => {
  const { instance, apiKey } = await t.createInstance('preparer', { settings: SETTINGS });
  const body = {
    phone: '4915112345678',
    mediaUrl: `http://media.example.com:${port}/a.png`,
    idempotencyKey: 'prep-race-01',
    notBefore: new Date(Date.now() + 3_600_000).toISOString(),
  };
  firstDelayMs = 2_000;
  requests = 0;
  const first = t.api(apiKey, 'POST', '/api/v2/send-media', body);
  await waitFor(async () => requests > 0, 'the first send probing its mediaUrl');

  await unlinkUntilOffline(t, instance.id, apiKey);

  const retry = await t.api(apiKey, 'POST', '/api/v2/send-media', body);
  const a = await first;
  const jobs = await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs WHERE instance_id = $1', [instance.id]);
  if (retry.status === 503) {
    assert.equal(retry.body.code, 'INSTANCE_OFFLINE', retry.text);
    assert.equal(a.status, 503, `the retry was told no job has the key, yet the first send was: ${a.text}`);
    assert.equal(jobs.rows[0]?.n, 0, 'no job');
  } else {
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.body.data?.jobId, a.body.data?.jobId, retry.text);
    assert.equal(jobs.rows[0]?.n, 1, 'one job');
  }
});

/**
 * METRICS_TOKEN and CLUSTER_SECRET are bearer tokens as secret as the admin token: none of them is written to a
 * log line, wherever a client puts it. Found from the outside: sent as `X-Request-Id` (a token of the allowed
 * characters, so taken as the request's id) or in a request's path, either was logged as it came, where the
 * admin token was `[redacted]`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from '../helpers/gateway.js';

const METRICS_TOKEN = 'probeMetricsTok_0123456789abcdef';
const CLUSTER_SECRET = 'probeClusterSec_0123456789abcdef';

test('the metrics token and the cluster secret never reach a log line', async () => {
  const logLines: string[] = [];
  const t = await startTestGateway({ label: 'bearer_secrets_log', env: { METRICS_TOKEN, CLUSTER_SECRET }, logLines });
  try {
    for (const secret of [METRICS_TOKEN, CLUSTER_SECRET, t.adminToken]) {
      assert.equal((await fetch(`${t.url}/health`, { headers: { 'X-Request-Id': secret } })).status, 200);
      assert.equal((await fetch(`${t.url}/admin/v1/instances/${secret}`, { headers: { Authorization: `Bearer ${t.adminToken}` } })).status, 404);
      assert.equal((await fetch(`${t.url}/metrics`, { headers: { Authorization: `Bearer ${secret}` } })).status, secret === CLUSTER_SECRET ? 401 : 200);
    }
    await new Promise((r) => setTimeout(r, 50));
    const log = logLines.join('');
    assert.ok(log.includes('"msg":"request"'), 'the requests were logged');
    for (const secret of [METRICS_TOKEN, CLUSTER_SECRET, t.adminToken]) assert.ok(!log.includes(secret), `${secret.slice(0, 10)}… is in the log`);
  } finally {
    await t.stop();
  }
});

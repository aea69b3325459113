/**
 * A node of a cluster (CLUSTER_SECRET) started without ADMIN_TOKEN makes a token of its own, which the other nodes
 * refuse: it says so at start, naming the variable, never the token. Found from the outside: two nodes started
 * that way each printed its own token, valid on that node alone, and nothing said why the other refused it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from '../helpers/gateway.js';

test('a cluster node without ADMIN_TOKEN warns that its token is its own; with it, no warning', async () => {
  for (const adminToken of ['', 'cluster-admin-token-0123456789']) {
    const logLines: string[] = [];
    const t = await startTestGateway({ label: 'cluster_admin_token', env: { CLUSTER_SECRET: 'cluster-admin-secret-0123456789', ADMIN_TOKEN: adminToken, LOG_LEVEL: 'warn' }, logLines });
    try {
      const warned = logLines.filter((l) => l.includes('ADMIN_TOKEN is not set'));
      assert.equal(warned.length, adminToken === '' ? 1 : 0, logLines.join(''));
      const token = (await import('node:fs/promises')).readFile(`${t.dataDir}/admin-token`, 'utf8').catch(() => '');
      const made = (await token).trim();
      if (made) assert.ok(!logLines.join('').includes(made), 'the token itself is never logged');
    } finally {
      await t.stop();
    }
  }
});

/**
 * The sandbox control API's integer query parameters (`since` of the ledger, `limit` of an account's chat) follow
 * the API's rule for integer query parameters (docs/api.md, Bodies): ASCII digits only, else 400
 * VALIDATION_FAILED naming the parameter. Found from the outside: `?since=abc`, `?since=-5` or `?since=1e999`
 * answered the whole ledger as if none of it had been read, and `?limit=-1` the default page.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { simulatedClock } from '../../src/clock.js';
import { startSandboxServer, type SandboxServer } from '../../src/http/sandbox-server.js';

async function get(server: SandboxServer, p: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${server.url}/sandbox/v1${p}`);
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('sandbox control API: integer query parameters', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sandbox-query-'));
  let server: SandboxServer;

  before(async () => {
    server = await startSandboxServer({ port: 0, clock: simulatedClock(), statePath: path.join(dir, 'sandbox.json') });
  });

  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a since or limit that is not written in digits is 400 naming it; digits and absence are read as before', async () => {
    for (const value of ['abc', '-5', '1e999', '+1', '1.5', '', '%205']) {
      const ledger = await get(server, `/instances/inst-q/ledger?since=${value}`);
      assert.equal(ledger.status, 400, `since=${value}`);
      assert.equal(ledger.json.code, 'VALIDATION_FAILED');
      assert.deepEqual(ledger.json.data, { field: 'since' });
      const chat = await get(server, `/accounts/4915100000321/chats/4915100000322@c.us/messages?limit=${value}`);
      assert.equal(chat.status, 400, `limit=${value}`);
      assert.deepEqual(chat.json.data, { field: 'limit' });
    }
    assert.deepEqual((await get(server, '/instances/inst-q/ledger?since=1&since=2')).json.data, { field: 'since' });
    for (const q of ['', '?since=0', '?since=05']) assert.equal((await get(server, `/instances/inst-q/ledger${q}`)).status, 200, q);
    for (const q of ['', '?limit=0', '?limit=5000']) assert.equal((await get(server, `/accounts/4915100000321/chats/4915100000322@c.us/messages${q}`)).status, 200, q);
  });
});

/**
 * The console's own routes, open to everyone (its sign-in needs no credential), read bodies of at most
 * CONSOLE_BODY_LIMIT_BYTES, not the API's 10 MB: found from the outside, a 10 MB body of nested arrays, 30 KB
 * gzipped, sent without a credential to `POST /console/session`, held the event loop 1.4-3.4 s before its 403.
 * Over the limit is 413 with `maxBytes`, declared or inflated; a sign-in still works. Real HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { startTestGateway } from '../helpers/gateway.js';
import { CONSOLE_BODY_LIMIT_BYTES } from '../../src/gateway-routes.js';

test('the console sign-in reads at most CONSOLE_BODY_LIMIT_BYTES: 413 beyond, plain or compressed; a sign-in within it works', async () => {
  const t = await startTestGateway({ label: 'console_body_limit' });
  try {
    const headers = { 'content-type': 'application/json', 'x-console': '1', origin: t.url };
    const signIn = (body: string | Buffer, extra: Record<string, string> = {}) =>
      fetch(`${t.url}/console/session`, { method: 'POST', headers: { ...headers, ...extra }, body }).then(async (r) => ({ status: r.status, body: (await r.json()) as { code?: string; data?: { maxBytes?: number } } }));
    const nested = `{"token":[${Array(400_000).fill(`${'['.repeat(30)}${']'.repeat(30)}`).join(',')}]}`;
    for (const [what, r] of [
      ['plain, declared', await signIn(nested.slice(0, CONSOLE_BODY_LIMIT_BYTES + 1))],
      ['gzipped (small on the wire, 24 MB inflated)', await signIn(gzipSync(nested), { 'content-encoding': 'gzip' })],
    ] as const) {
      assert.equal(r.status, 413, what);
      assert.equal(r.body.code, 'PAYLOAD_TOO_LARGE', what);
      assert.equal(r.body.data?.maxBytes, CONSOLE_BODY_LIMIT_BYTES, what);
    }
    const ok = await fetch(`${t.url}/console/session`, { method: 'POST', headers, body: JSON.stringify({ token: t.adminToken }) });
    assert.equal(ok.status, 200, await ok.text());
    // the API's own limit is untouched: a body over 16 KiB to an API route is read
    const created = await fetch(`${t.url}/admin/v1/instances`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'big-body', driver: 'sandbox', padding: 'x'.repeat(64 * 1024) }),
    });
    assert.notEqual(created.status, 413, await created.text());
  } finally {
    await t.stop();
  }
});

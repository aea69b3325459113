/**
 * send-bulk has no fixed entry cap (SPEC.md "Limits"), so one request within the 10 MB body limit can hold
 * hundreds of thousands of entries. Found from the outside: a bulk of 600,000 bad entries (8.4 MB) held the
 * gateway's event loop for 12 s (each entry's rejection builds and throws an Error, about 13 µs), past
 * LEASE_TTL_MS: the node's leases ran out ("leases ran out and nobody took them"), and /health and every
 * other request and dispatch of the node waited. The entries are now read in parts, with turns of the event
 * loop between them, so that other requests are answered meanwhile.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startV1Harness, type V1Harness } from './legacy-harness.js';

describe('send-bulk with a very large number of entries', () => {
  let h: V1Harness;
  before(async () => {
    h = await startV1Harness('legacy_bulk_loop');
  });
  after(async () => {
    await h.stop();
  });

  test('another request is answered while the batch is read', async () => {
    const big = await h.add('many', {});
    const other = await h.add('other', {});
    const N = 300_000;
    // made before the requests: the client runs in this process too
    const body = JSON.stringify({ messages: Array.from({ length: N }, () => ({ phone: 'x' })) });
    const post = (name: string, text: string, sent?: () => void) =>
      new Promise<{ status: number; text: string; at: number }>((resolve, reject) => {
        const req = http.request(`${h.url}/api/send-bulk`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-instance': name } }, (res) => {
          const at = performance.now();
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), at }));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.on('finish', () => sent?.());
        req.end(text);
      });
    let bodySent!: () => void;
    const written = new Promise<void>((r) => (bodySent = r));
    const large = post(big.name, body, bodySent);
    // the whole batch on its way, and the gateway busy with it
    await written;
    await new Promise((r) => setTimeout(r, 300));
    const small = await post(other.name, JSON.stringify({ messages: [{ phone: 'x' }] }));
    const { status, text, at } = await large;
    assert.equal(small.status, 200);
    assert.equal(status, 200);
    // unchanged, the small request waited for the whole batch (3.8 s of one turn here, 300,000 entries)
    assert.ok(small.at < at, `the small request was answered ${Math.round(small.at - at)} ms after the batch`);
    // written in parts (src/http/routes/legacy-bulk.ts answerParts): the same JSON as one JSON.stringify writes
    const answer = JSON.parse(text) as { success: boolean; data: { queued: number; messages: { status: string }[] } };
    assert.equal(text, JSON.stringify(answer));
    assert.equal(answer.success, true);
    assert.equal(answer.data.queued, N);
    assert.equal(answer.data.messages.length, N);
    assert.ok(answer.data.messages.every((m) => m.status === 'rejected'));
    assert.equal((JSON.parse(small.text) as { data: { queued: number } }).data.queued, 1);
  });
});

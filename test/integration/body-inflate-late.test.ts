/**
 * A compressed JSON body is inflated once all of it has arrived (src/http/body.ts): a client that sends the first
 * 10 KB of a gzip bomb and stops holds the bytes it sent, not the 10 MB they inflate to. Found from the outside:
 * 500 connections without a key, each 10 KB of such a body to the open `POST /console/session`, took the gateway
 * from 1.1 to 2.4 GB, held until the request timed out. Whole bodies still inflate (and a bomb is 413). Real HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { startTestGateway, waitFor } from '../helpers/gateway.js';

const MB = 1024 * 1024;

test('a compressed body that stops short is not inflated meanwhile; a whole one is', async () => {
  const t = await startTestGateway({ label: 'body_inflate_late' });
  const sockets: net.Socket[] = [];
  try {
    const bomb = gzipSync(Buffer.from(JSON.stringify({ phone: '4915112345678', message: 'a'.repeat(9_900_000) })));
    const u = new URL(t.url);
    global.gc?.();
    const before = process.memoryUsage();
    let received = 0;
    for (let i = 0; i < 20; i++) {
      const s = net.connect(Number(u.port), u.hostname);
      s.on('error', () => undefined);
      sockets.push(s);
      s.write(`POST /console/session HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: ${bomb.length}\r\n\r\n`);
      s.write(bomb.subarray(0, bomb.length - 8), () => {
        received += 1;
      });
    }
    await waitFor(() => received === 20, 'every partial body written');
    // let the server read and (before the fix) inflate what came
    await new Promise((r) => setTimeout(r, 300));
    const after = process.memoryUsage();
    const grown = after.arrayBuffers + after.external - (before.arrayBuffers + before.external);
    assert.ok(grown < 50 * MB, `${Math.round(grown / MB)} MB held for 20 partial bodies of ${bomb.length} bytes`);

    // a whole compressed body is inflated and read; one that inflates past the limit is 413; bytes that do not inflate 400
    const post = (body: Buffer) => fetch(`${t.url}/admin/v1/instances`, {
      method: 'POST', headers: { authorization: `Bearer ${t.adminToken}`, 'content-type': 'application/json', 'content-encoding': 'gzip' }, body,
    });
    const made = await post(gzipSync(Buffer.from(JSON.stringify({ name: 'gzipped', driver: 'sandbox' }))));
    assert.equal(made.status, 201, await made.clone().text());
    assert.equal((await post(gzipSync(Buffer.from(JSON.stringify({ name: 'x'.repeat(11 * MB) }))))).status, 413);
    assert.equal((await post(Buffer.from('not gzip at all'))).status, 400);
  } finally {
    for (const s of sockets) s.destroy();
    await t.stop();
  }
});

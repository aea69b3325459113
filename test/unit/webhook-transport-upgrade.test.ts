/**
 * A receiver that answers `101 Switching Protocols` to a delivery: node's http client emits neither
 * 'response' nor 'error' for it (no 'upgrade' listener: the socket is destroyed, the request only closes), so
 * the transport's promise never settled, not even at its timeout, and the instance's sender waited behind
 * that attempt for ever (every later event of the instance stayed pending). Found from the outside.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createWebhookTransport } from '../../src/webhooks/transport.js';
import { systemClock } from '../../src/clock.js';

function rawServer(answer: string): Promise<net.Server> {
  const server = net.createServer((c) => {
    c.on('error', () => undefined);
    c.once('data', () => c.write(answer));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

test('a 101 Switching Protocols answer ends the attempt (a failed one) instead of hanging it', async () => {
  const server = await rawServer('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
  const transport = createWebhookTransport({ allowPrivate: true });
  try {
    const { port } = server.address() as AddressInfo;
    const attempt = transport
      .post({ url: `http://127.0.0.1:${port}/hook`, body: Buffer.from('{}'), headers: {}, allowPrivate: true, timeoutMs: 1_000, clock: systemClock })
      .then((r) => ({ status: r.status }), (err: Error) => ({ error: err.message }));
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([attempt, new Promise((resolve) => (timer = setTimeout(() => resolve('still pending'), 3_000)))]);
    clearTimeout(timer);
    assert.notEqual(outcome, 'still pending', 'the attempt never ended, not even at its 1 s timeout');
    assert.deepEqual(outcome, { status: 101 });
  } finally {
    transport.close();
    server.close();
  }
});

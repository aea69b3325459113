/**
 * A TCP proxy in front of an HTTP server that swallows answers: on each of the first `swallow` connections it
 * passes the request through, drops whatever the server answers and closes the client's connection as soon as
 * the answer begins. The server has acted; the client saw no answer at all (a socket hang up), the case in
 * which docs/api.md says a send may be repeated with the same idempotency key. Later connections pass freely.
 * (test/helpers/tcp-proxy.ts cuts a link as a whole; this one loses single answers.)
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface SwallowProxy {
  url: string;
  /** answers dropped so far */
  readonly swallowed: number;
  /** connections made through the proxy */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startSwallowProxy(target: { host: string; port: number }, opts: { swallow?: number } = {}): Promise<SwallowProxy> {
  let toSwallow = opts.swallow ?? 1;
  let swallowed = 0;
  let connections = 0;
  const sockets = new Set<net.Socket>();

  const server = net.createServer((client) => {
    connections += 1;
    const lose = toSwallow > 0;
    if (lose) toSwallow -= 1;
    const upstream = net.connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    client.on('data', (d: Buffer) => upstream.write(d));
    upstream.on('data', (d: Buffer) => {
      if (!lose) return void client.write(d);
      // the answer has begun: the server committed it; the client never sees a byte of it
      if (!client.destroyed) {
        swallowed += 1;
        client.resetAndDestroy();
      }
      upstream.destroy();
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get swallowed() {
      return swallowed;
    },
    get connections() {
      return connections;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

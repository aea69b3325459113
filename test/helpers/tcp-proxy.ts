/**
 * A TCP proxy in front of PostgreSQL that a test can cut and restore, to take the store away from a running
 * gateway without stopping the shared server.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  port: number;
  /** drop every open connection and refuse new ones */
  cut(): Promise<void>;
  /** accept connections again (same port) */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const make = () =>
    net.createServer((client) => {
      const upstream = net.connect(target.port, target.host);
      sockets.add(client);
      sockets.add(upstream);
      client.pipe(upstream).pipe(client);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
    });
  let server = make();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const closeServer = () => new Promise<void>((r) => server.close(() => r()));
  return {
    port,
    async cut() {
      const closed = closeServer();
      for (const s of sockets) s.destroy();
      sockets.clear();
      await closed;
    },
    async restore() {
      if (server.listening) return;
      server = make();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve());
      });
    },
    async close() {
      for (const s of sockets) s.destroy();
      if (server.listening) await closeServer();
    },
  };
}

/**
 * A TCP proxy in front of PostgreSQL that a test can cut and restore, to take the store away from a running
 * gateway without stopping the shared server. Two ways to cut:
 * - `refuse`: every open connection is reset and new ones are refused (the server went down);
 * - `blackhole`: a partition: nothing passes in either direction and nothing is closed; new connections are
 *   accepted at the TCP level and then hear nothing, data sent either way is dropped, a close is not passed on.
 * `restore()` lets traffic through again; connections that lived through a blackhole are reset then (as a
 * firewall that forgot them would), so each side learns its peer is gone.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export type CutMode = 'refuse' | 'blackhole';

export interface TcpProxy {
  port: number;
  /** take the store away: `refuse` (default) or `blackhole` */
  cut(mode?: CutMode): Promise<void>;
  /** let traffic through again (same port) */
  restore(): Promise<void>;
  close(): Promise<void>;
  /** how the proxy is cut right now, or null */
  readonly state: CutMode | null;
  /** connections currently open through the proxy (pairs) */
  readonly open: number;
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let state: CutMode | null = null;

  // a socket still connecting, or one whose peer has ended it (its own end under way), is destroyed, not reset:
  // node's reset of a socket whose shutdown is under way never finishes closing its handle, and the test process
  // then spun in its exit's cleanup of handles (seen with a black-holed proxy whose client was SIGKILLed)
  const kill = (s: net.Socket) => {
    if (s.destroyed) return;
    if (s.connecting || s.readableEnded || s.writableEnded) s.destroy();
    else s.resetAndDestroy();
  };
  const reset = (p: Pair) => {
    pairs.delete(p);
    kill(p.client);
    kill(p.upstream);
  };

  const make = () =>
    net.createServer((client) => {
      const upstream = net.connect(target.port, target.host);
      const pair: Pair = { client, upstream };
      pairs.add(pair);
      // forward by hand rather than pipe(): in a blackhole the bytes are dropped, not buffered for later
      client.on('data', (d: Buffer) => {
        if (state === null && !upstream.destroyed) upstream.write(d);
      });
      upstream.on('data', (d: Buffer) => {
        if (state === null && !client.destroyed) client.write(d);
      });
      const closed = () => {
        // in a partition the peer does not learn of a close (restore() resets what is left)
        if (state === 'blackhole') return;
        pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', closed).on('close', closed).on('end', closed);
      upstream.on('error', closed).on('close', closed).on('end', closed);
    });
  let server = make();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const closeServer = () => new Promise<void>((r) => server.close(() => r()));

  return {
    port,
    get state() {
      return state;
    },
    get open() {
      return pairs.size;
    },
    async cut(mode: CutMode = 'refuse') {
      if (state !== null) throw new Error(`the proxy is already cut (${state})`);
      state = mode;
      if (mode === 'blackhole') return;
      const closed = closeServer();
      for (const p of [...pairs]) reset(p);
      await closed;
    },
    async restore() {
      const was = state;
      if (was === null) return;
      if (was === 'blackhole') {
        for (const p of [...pairs]) reset(p);
        state = null;
        return;
      }
      state = null;
      server = make();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve());
      });
    },
    async close() {
      for (const p of [...pairs]) reset(p);
      if (server.listening) await closeServer();
    },
  };
}

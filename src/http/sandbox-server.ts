/**
 * The sandbox network as its own process (`mgw sandbox`): one HTTP server for the remote drivers (`/rpc`,
 * `/rpc/events`, src/sandbox/rpc-server.ts) and for the control API (`/sandbox/v1`, through the gateway's own
 * Koa app, so errors have the same envelope). The composition of that server, so it lives with http/ (the
 * sandbox itself does not depend on http/). It has no authentication: bind it to loopback or a private network.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../clock.js';
import { createApp } from './app.js';
import { requestHandler } from './handler.js';
import { silentLogger, type Logger } from '../log.js';
import { createSandboxControlRouter } from './routes/sandbox-control.js';
import { SandboxNetwork } from '../sandbox/network.js';
import { createRpcHandler } from '../sandbox/rpc-server.js';

export interface SandboxServerOptions {
  port: number;
  host?: string;
  /** JSON state file; null keeps the network in memory */
  statePath?: string | null;
  clock?: Clock;
  log?: Logger;
  /** serve this network instead of creating one (it is then not closed with the server) */
  network?: SandboxNetwork;
}

export interface SandboxServer {
  /** base URL, e.g. http://127.0.0.1:3100 */
  url: string;
  network: SandboxNetwork;
  close(): Promise<void>;
}

export async function startSandboxServer(opts: SandboxServerOptions): Promise<SandboxServer> {
  const owned = !opts.network;
  const network = opts.network ?? new SandboxNetwork({ clock: opts.clock, statePath: opts.statePath ?? null });
  const rpc = createRpcHandler(network);
  const app = createApp({ log: opts.log ?? silentLogger(), routers: [createSandboxControlRouter(network)] });
  const koa = requestHandler(app);
  const server = http.createServer((req, res) => {
    if (!rpc.handle(req, res)) koa(req, res);
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}`,
    network,
    async close() {
      rpc.closeAll();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      if (owned) network.close();
    },
  };
}

/**
 * An HTTP proxy in front of a gateway, as a browser would reach it through a load balancer, that a test can turn:
 * `pass` (requests and answers go through, an event stream too, as it comes), `drop` (every connection, open ones
 * included, is closed without an answer: the gateway cannot be reached) or a status such as 502 (every request
 * answered so by the proxy itself, open streams closed: the upstream is down behind a proxy that answers).
 * (test/helpers/tcp-proxy.ts cuts TCP as a whole; this one answers for the gateway.)
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type FrontMode = 'pass' | 'drop' | number;

export interface HttpFront {
  url: string;
  set(mode: FrontMode): void;
  close(): Promise<void>;
}

export async function startHttpFront(target: string): Promise<HttpFront> {
  const upstream = new URL(target);
  let mode: FrontMode = 'pass';
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    if (mode === 'drop') return void req.socket.destroy();
    if (typeof mode === 'number') {
      res.writeHead(mode, { 'content-type': 'text/plain', connection: 'close' });
      return void res.end(`${mode} from the proxy in front of the gateway\n`);
    }
    const out = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        res.flushHeaders();
        answer.pipe(res);
      },
    );
    out.on('error', () => req.socket.destroy());
    req.pipe(out);
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    set(next) {
      mode = next;
      // open connections (an event stream) end: the browser's next request meets the new mode
      if (next !== 'pass') for (const s of sockets) s.destroy();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * A stub HTTP server that answers from a script, for client behaviour no real gateway shows on demand
 * (a `504 INSTANCE_TIMEOUT`, a `503 QUEUE_PAUSED`). Each request is recorded with its headers and body.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StubRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}
export interface StubAnswer {
  status: number;
  body: unknown;
}
export interface StubServer {
  url: string;
  requests: StubRequest[];
  close(): Promise<void>;
}

/** `answer(n, req)` decides the answer to the n-th request (0-based); `host` the loopback address it listens on. */
export async function startStubServer(answer: (n: number, req: StubRequest) => StubAnswer, host = '127.0.0.1'): Promise<StubServer> {
  const requests: StubRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: StubRequest = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      const a = answer(requests.length, r);
      requests.push(r);
      res.writeHead(a.status, { 'content-type': 'application/json' }).end(JSON.stringify(a.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

// Reads a LoadSpec on stdin, runs it with node's http client (keep-alive, one socket per loop), prints a
// LoadResult as JSON.
import http from 'node:http';
import type { LoadSpec } from './load.js';
import { LoadTally } from './load-tally.js';
import { readSpec } from './worker-process.js';

const spec = await readSpec<LoadSpec>();
const agent = new http.Agent({ keepAlive: true, maxSockets: spec.concurrency });
const u = new URL(spec.url);
const tally = new LoadTally(spec);

function one(): Promise<void> {
  return new Promise((resolve) => {
    const { body, key } = tally.next();
    const t0 = performance.now();
    const req = http.request(
      { agent, host: u.hostname, port: u.port, path: u.pathname + u.search, method: spec.method ?? 'GET', headers: { ...spec.headers, ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}) } },
      (res) => {
        const s0 = res.statusCode ?? 0;
        if (tally.wantsSample() && !tally.isOk(s0)) {
          const parts: Buffer[] = [];
          res.on('data', (c: Buffer) => parts.push(c));
          res.on('end', () => tally.keepSample(`${s0} ${Buffer.concat(parts).toString('utf8').slice(0, 300)}`));
        } else res.resume();
        res.on('end', () => {
          const s = res.statusCode ?? 0;
          if (tally.isOk(s)) tally.answered(performance.now() - t0);
          else tally.fail(String(s));
          resolve();
        });
      },
    );
    req.on('error', (e: NodeJS.ErrnoException) => {
      tally.fail(e.code ?? e.message);
      resolve();
    });
    req.end(body);
  });
}

const result = await tally.run(async () => {
  while (performance.now() < tally.end) await one();
});
process.stdout.write(JSON.stringify(result));
agent.destroy();

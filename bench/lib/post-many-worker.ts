// Reads a PostManySpec on stdin, sends its requests, prints a PostManyResult as JSON.
import http from 'node:http';
import type { PostManyResult, PostManySpec } from './post-many.js';
import { readSpec } from './worker-process.js';

const spec = await readSpec<PostManySpec>();
const agent = new http.Agent({ keepAlive: true, maxSockets: spec.concurrency });
const u = new URL(spec.url);
const latencies: number[] = [];
let errors = 0;
let firstError: string | null = null;
let next = 0;

function one(i: number): Promise<void> {
  return new Promise((resolve) => {
    const body = spec.body.replaceAll('{{n}}', String(i));
    const t0 = performance.now();
    const req = http.request(
      { agent, host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'POST', headers: { ...spec.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => {
          const s = res.statusCode ?? 0;
          if (s >= 200 && s < 300) latencies.push(performance.now() - t0);
          else {
            errors++;
            firstError ??= `${s} ${text.slice(0, 300)}`;
          }
          resolve();
        });
      },
    );
    req.on('error', (err) => {
      errors++;
      firstError ??= err.message;
      resolve();
    });
    req.end(body);
  });
}

const t0 = performance.now();
await Promise.all(Array.from({ length: spec.concurrency }, async () => {
  while (next < spec.total) await one(next++);
}));
const elapsedMs = performance.now() - t0;
latencies.sort((a, b) => a - b);
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
const result: PostManyResult = { ok: latencies.length, errors, firstError, elapsedMs, p50: pct(0.5), p99: pct(0.99) };
process.stdout.write(JSON.stringify(result));
agent.destroy();

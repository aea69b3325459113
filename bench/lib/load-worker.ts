// Reads a LoadSpec on stdin, runs it, prints a LoadResult as JSON.
import http from 'node:http';
import type { LoadResult, LoadSpec } from './load.js';
import { readSpec } from './worker-process.js';

const spec = await readSpec<LoadSpec>();
const agent = new http.Agent({ keepAlive: true, maxSockets: spec.concurrency });
const u = new URL(spec.url);
const latencies: number[] = [];
let errors = 0;
const failures: Record<string, number> = {};
let sample: string | undefined;
const fail = (what: string) => {
  errors++;
  failures[what] = (failures[what] ?? 0) + 1;
};
let n = 0;
const ok = new Set(spec.okStatus ?? []);
const end = performance.now() + spec.durationMs;

function one(): Promise<void> {
  return new Promise((resolve) => {
    const i = n++;
    const body = spec.body?.replaceAll('{{n}}', String(i));
    const key = spec.keys && spec.keys.length > 0 ? spec.keys[i % spec.keys.length] : undefined;
    const t0 = performance.now();
    const req = http.request(
      { agent, host: u.hostname, port: u.port, path: u.pathname + u.search, method: spec.method ?? 'GET', headers: { ...spec.headers, ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}) } },
      (res) => {
        const s0 = res.statusCode ?? 0;
        if (!sample && !(s0 >= 200 && s0 < 300) && !ok.has(s0)) {
          const parts: Buffer[] = [];
          res.on('data', (c: Buffer) => parts.push(c));
          res.on('end', () => { sample ??= `${s0} ${Buffer.concat(parts).toString('utf8').slice(0, 300)}`; });
        } else res.resume();
        res.on('end', () => {
          const s = res.statusCode ?? 0;
          if ((s >= 200 && s < 300) || ok.has(s)) latencies.push(performance.now() - t0);
          else fail(String(s));
          resolve();
        });
      },
    );
    req.on('error', (e: NodeJS.ErrnoException) => {
      fail(e.code ?? e.message);
      resolve();
    });
    req.end(body);
  });
}

const t0 = performance.now();
const cpu0 = process.cpuUsage();
await Promise.all(Array.from({ length: spec.concurrency }, async () => {
  while (performance.now() < end) await one();
}));
const elapsed = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
latencies.sort((a, b) => a - b);
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
const result: LoadResult = { requests: latencies.length, errors, failures, ...(sample ? { sample } : {}), rps: latencies.length / elapsed, p50: pct(0.5), p99: pct(0.99), clientCpuUs: (cpu.user + cpu.system) / Math.max(1, latencies.length + errors) };
process.stdout.write(JSON.stringify(result));
agent.destroy();

/**
 * The load generators run in a process of their own, so the server under test does not share their event
 * loop: the parent writes a spec as JSON to the worker's stdin and reads its result as JSON from its stdout.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** Run `worker` (a file beside this one) with `spec` and resolve with what it prints. */
export function runWorker<R>(worker: string, spec: unknown): Promise<R> {
  const file = path.join(path.dirname(fileURLToPath(import.meta.url)), worker);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${worker} exited ${code}`));
      resolve(JSON.parse(out) as R);
    });
    child.stdin.end(JSON.stringify(spec));
  });
}

/** In a worker: the spec its parent wrote to stdin. */
export async function readSpec<S>(): Promise<S> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString()) as S;
}

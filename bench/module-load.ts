/**
 * What a start pays to load the gateway's code before it does anything: fresh processes, run as `npm start` runs
 * the gateway (`node --import tsx` with its V8 flags), that import src/gateway.ts; in turn, the same with
 * whatsapp-web.js required as well, which every start paid until the library was loaded on its first use (src/
 * drivers/webjs/library.ts; a node with a webjs instance pays it when that instance starts). Per process: the CPU
 * of the imports (user and system, every thread: tsx's loader works in one of its own), their wall time, the
 * CommonJS modules loaded and the RSS after. Medians of BENCH_RUNS (default 7) processes of each, in turn, so that
 * the machine's minute falls on both. Prints figures; asserts nothing.
 *
 *   npx tsx bench/module-load.ts
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median } from './lib/queue-fixture.js';
import { startFlags } from './lib/start-flags.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const GATEWAY = pathToFileURL(path.join(ROOT, 'src/gateway.ts')).href;
const LIBRARY = pathToFileURL(path.join(ROOT, 'src/drivers/webjs/library.ts')).href;

interface Load { cpuMs: number; wallMs: number; cjs: number; rssMiB: number }

function child(withLibrary: boolean): string {
  return `
    import { createRequire } from 'node:module';
    import { performance } from 'node:perf_hooks';
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await import(${JSON.stringify(GATEWAY)});
    ${withLibrary ? `(await import(${JSON.stringify(LIBRARY)})).webjsLibrary();` : ''}
    const wallMs = performance.now() - t0;
    const c = process.cpuUsage(c0);
    const cjs = Object.keys(createRequire(import.meta.url).cache).length;
    process.stdout.write(JSON.stringify({ cpuMs: (c.user + c.system) / 1000, wallMs, cjs, rssMiB: process.memoryUsage().rss / 1048576 }));
  `;
}

function load(withLibrary: boolean): Load {
  const r = spawnSync(process.execPath, [...startFlags(), '--import', 'tsx', '--input-type=module', '-e', child(withLibrary)], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`the import failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as Load;
}

// one of each first, not counted: tsx's transform cache is filled by then
load(false);
load(true);
const lazy: Load[] = [];
const eager: Load[] = [];
for (let i = 0; i < RUNS; i++) {
  lazy.push(load(false));
  eager.push(load(true));
}

const line = (xs: Load[]) => {
  const cpu = median(xs.map((x) => x.cpuMs));
  return { cpu, text: `CPU median ${cpu.toFixed(0)} ms, wall ${median(xs.map((x) => x.wallMs)).toFixed(0)} ms, ${median(xs.map((x) => x.cjs))} CommonJS modules, RSS ${median(xs.map((x) => x.rssMiB)).toFixed(0)} MiB` };
};
const a = line(lazy);
const b = line(eager);
console.log(`module load, ${RUNS} processes of each in turn (node ${process.version}, --import tsx ${startFlags().join(' ')})`);
console.log(`the gateway's imports (a start):           ${a.text}`);
console.log(`  with whatsapp-web.js required as well:    ${b.text}`);
console.log(`ratio CPU without / with whatsapp-web.js:   ${(a.cpu / b.cpu).toFixed(2)}`);

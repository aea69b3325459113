/**
 * A stop request (src/stop-signals.ts): the first signal stops gracefully; one arriving within FORCE_AFTER_MS is
 * the same request delivered twice (a terminal's Ctrl-C reaches npm and the gateway, and npm forwards it), and
 * only a later one forces the exit. Signals are emitted on `process` by hand; no signal is really sent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FORCE_AFTER_MS, loadStoppably, onStopRequest } from '../../src/stop-signals.js';

function harness() {
  let t = 1_000_000;
  const stops: string[] = [];
  let forced = 0;
  const off = onStopRequest((reason) => stops.push(reason), { env: { MGW_STOP_WITH_PARENT: '0' }, onForce: () => (forced += 1), now: () => t });
  return { stops, forced: () => forced, advance: (ms: number) => (t += ms), off };
}

test('a second SIGINT a few milliseconds after the first (Ctrl-C under npm) does not force the exit', () => {
  const h = harness();
  try {
    process.emit('SIGINT', 'SIGINT');
    h.advance(5);
    process.emit('SIGINT', 'SIGINT');
    assert.deepEqual(h.stops, ['SIGINT']);
    assert.equal(h.forced(), 0);
  } finally {
    h.off();
  }
});

test('a signal FORCE_AFTER_MS or more after the first is the user insisting: forced', () => {
  const h = harness();
  try {
    process.emit('SIGTERM', 'SIGTERM');
    h.advance(FORCE_AFTER_MS);
    process.emit('SIGINT', 'SIGINT');
    assert.deepEqual(h.stops, ['SIGTERM']);
    assert.equal(h.forced(), 1);
  } finally {
    h.off();
  }
});

test('a stop the process asks of itself counts as the first request: a signal right after it is not another stop, a later one forces', () => {
  const h = harness();
  try {
    h.off.request('fatal');
    h.off.request('fatal');
    process.emit('SIGTERM', 'SIGTERM');
    assert.deepEqual(h.stops, ['fatal']);
    assert.equal(h.forced(), 0);
    h.advance(FORCE_AFTER_MS);
    process.emit('SIGTERM', 'SIGTERM');
    assert.deepEqual(h.stops, ['fatal']);
    assert.equal(h.forced(), 1);
  } finally {
    h.off();
  }
});

test('a signal while a process loads its modules (loadStoppably) exits 0 at once, saying so; once loaded, its handlers do nothing', async () => {
  // a real process and a real SIGTERM: before this, a signal while the gateway's modules loaded (seconds under
  // tsx) killed it with the default signal, exit 143 and no line (found from the outside)
  const { spawn } = await import('node:child_process');
  const { pathToFileURL } = await import('node:url');
  const module = pathToFileURL(new URL('../../src/stop-signals.ts', import.meta.url).pathname).href;
  const code = `const { loadStoppably } = await import(${JSON.stringify(module)});
await loadStoppably('a slow module', () => new Promise((resolve) => { process.stdout.write('loading\\n'); setTimeout(resolve, 60_000); }));
process.stdout.write('loaded\\n');`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve) => child.stdout.on('data', (d: Buffer) => d.toString().includes('loading') && resolve()));
  child.kill('SIGTERM');
  const [exit, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])));
  assert.deepEqual([exit, signal], [0, null], stderr);
  assert.match(stderr, /stopped by SIGTERM while loading a slow module: nothing was started/);

  // once loaded, its handlers stay (the listeners never fall to none: see loadStoppably) but do nothing
  assert.equal(await loadStoppably('a quick module', async () => 42), 42);
  await assert.rejects(loadStoppably('a module that fails', async () => Promise.reject(new Error('no such module'))), /no such module/);
  process.emit('SIGTERM', 'SIGTERM');
  process.emit('SIGINT', 'SIGINT');
});

/**
 * A process launched through npm (npm_lifecycle_event set) whose npm is SIGKILLed: `middle` stands for npm, a
 * real process whose child runs `code` and shares its output pipes. Answers the child's pid, its output so far,
 * and a wait for the child's end (it is not this process's child: its pid is polled).
 */
async function orphanedByNpm(code: string, readyLine: string, opts: { handsOverPid?: boolean } = {}): Promise<{ pid: number; output: () => string; ended: (ms: number) => Promise<boolean> }> {
  const { spawn } = await import('node:child_process');
  // `npm start` hands its pid over (package.json: MGW_LAUNCHED_BY=$PPID) when asked to
  const handOver = opts.handsOverPid ? ', MGW_LAUNCHED_BY: String(process.pid)' : '';
  const launcher = `const c = require('node:child_process').spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', ${JSON.stringify(code)}], { stdio: 'inherit', env: { ...process.env, npm_lifecycle_event: 'start', MGW_STOP_WITH_PARENT: ''${handOver} } });
process.stdout.write('child ' + c.pid + '\\n'); setInterval(() => {}, 1000);`;
  const middle = spawn(process.execPath, ['-e', launcher], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const seen = (text: string) => new Promise<void>((resolve) => {
    const look = () => out.includes(text) && resolve();
    middle.stdout.on('data', look);
    middle.stderr.on('data', look);
    look();
  });
  middle.stdout.on('data', (d: Buffer) => (out += d.toString()));
  middle.stderr.on('data', (d: Buffer) => (out += d.toString()));
  await seen(readyLine);
  const pid = Number(/child (\d+)/.exec(out)?.[1]);
  middle.kill('SIGKILL'); // npm SIGKILLed: the child belongs to init from now on
  const alive = () => { try { process.kill(pid, 0); return true; } catch { return false; } };
  return {
    pid,
    output: () => out,
    async ended(ms) {
      for (const until = Date.now() + ms; Date.now() < until; ) {
        if (!alive()) return true;
        await new Promise((r) => setTimeout(r, 20));
      }
      if (alive()) process.kill(pid, 'SIGKILL'); // it would serve on forever
      return false;
    },
  };
}

test('npm SIGKILLed while a process it launched loads its modules: the process stops, saying so, and starts nothing', async () => {
  const { pathToFileURL } = await import('node:url');
  const module = pathToFileURL(new URL('../../src/stop-signals.ts', import.meta.url).pathname).href;
  const child = await orphanedByNpm(`const { loadStoppably } = await import(${JSON.stringify(module)});
await loadStoppably('a slow module', () => new Promise((resolve) => { process.stdout.write('loading\\n'); setTimeout(resolve, 60_000); }));
process.stdout.write('loaded\\n');`, 'loading');
  assert.ok(await child.ended(10_000), `still running: ${child.output()}`);
  assert.match(child.output(), /stopped while loading a slow module: the process that launched it exited; nothing was started/);
});

test('npm SIGKILLed before the gateway\'s modules had loaded: its stop watch, set up after them, still sees the parent gone', async () => {
  // found from the outside: the parent was read once the modules had loaded (4–5 s), by then init; never stopped
  const { pathToFileURL } = await import('node:url');
  const module = pathToFileURL(new URL('../../src/stop-signals.ts', import.meta.url).pathname).href;
  const child = await orphanedByNpm(`const { onStopRequest } = await import(${JSON.stringify(module)});
process.stdout.write('evaluated\\n');
await new Promise((resolve) => setTimeout(resolve, 1_500)); // the rest of the modules loading
onStopRequest((reason) => { process.stderr.write('stop requested: ' + reason + '\\n'); process.exit(0); }, { parentCheckMs: 20 });
setInterval(() => {}, 1_000);`, 'evaluated');
  assert.ok(await child.ended(10_000), `still running: ${child.output()}`);
  assert.match(child.output(), /stop requested: parent exited/);
});

test('npm SIGKILLed before node had read anything: the pid npm start hands over says who launched it', async () => {
  // found by the probe of the fix: npm killed within the first second, while node and tsx still started, was gone
  // before the stop module was evaluated; its pid, handed over by the start script, is read instead
  const { pathToFileURL } = await import('node:url');
  const module = pathToFileURL(new URL('../../src/stop-signals.ts', import.meta.url).pathname).href;
  const child = await orphanedByNpm(`await new Promise((resolve) => setTimeout(resolve, 1_500)); // node and tsx starting
const { onStopRequest } = await import(${JSON.stringify(module)});
process.stdout.write('handed over: ' + String(process.env.MGW_LAUNCHED_BY) + '\\n');
onStopRequest((reason) => { process.stderr.write('stop requested: ' + reason + '\\n'); process.exit(0); }, { parentCheckMs: 20 });
setInterval(() => {}, 1_000);`, 'child ', { handsOverPid: true });
  assert.ok(await child.ended(10_000), `still running: ${child.output()}`);
  assert.match(child.output(), /stop requested: parent exited/);
  assert.match(child.output(), /handed over: undefined/, 'taken out of the environment: no process it starts inherits it');
});

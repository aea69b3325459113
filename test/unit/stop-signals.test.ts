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

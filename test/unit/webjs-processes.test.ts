/**
 * Finding and killing a session's browser processes through /proc, with plain node processes standing in
 * for Chromium (the real browser is in test/integration/webjs-chromium.test.ts): matching is by the exact
 * `--user-data-dir` argument, a process tree is killed as a whole, and nothing else is touched.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Clock } from '../../src/clock.js';
import { isRunning, killSessionBrowser, pidsWithUserDataDir, processMemory, processTree, treeMemory, waitGone } from '../../src/drivers/webjs/processes.js';

const root = mkdtempSync(path.join(tmpdir(), 'webjs-procs-'));
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.pid && isRunning(c.pid)) c.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

const clock: Clock = { now: () => Date.now(), setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout) };

/** A long-running node process with `args` on its command line; with `child`, it starts one of its own. */
function start(args: string[], child = false): Promise<ChildProcess> {
  const script = child
    ? "require('child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }); setInterval(() => {}, 1000); console.log('up')"
    : "setInterval(() => {}, 1000); console.log('up')";
  const p = spawn(process.execPath, ['-e', script, '--', ...args], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
  children.push(p);
  return new Promise((resolve) => p.stdout?.once('data', () => resolve(p)));
}

test('matches the exact --user-data-dir argument only', async () => {
  const dir = path.join(root, 'session-a');
  const mine = await start([`--user-data-dir=${dir}`]);
  const prefix = await start([`--user-data-dir=${dir}-other`]);
  assert.ok(mine.pid && prefix.pid);
  assert.deepEqual(pidsWithUserDataDir(dir), [mine.pid]);
  assert.deepEqual(killSessionBrowser(dir, null), [mine.pid]);
  assert.equal(await waitGone(dir, [mine.pid], clock, 2_000), true);
  assert.equal(isRunning(prefix.pid), true, 'a neighbouring profile is not touched');
});

test('a leader pid takes its whole tree (and its process group) with it', async () => {
  const dir = path.join(root, 'session-b');
  const leader = await start([`--user-data-dir=${dir}`], true);
  assert.ok(leader.pid);
  const tree = processTree(leader.pid);
  assert.equal(tree.length, 2, 'the leader and its child');
  const memory = treeMemory(leader.pid);
  assert.equal(memory.processes, 2);
  assert.ok(memory.rssBytes > 10 * 1024 * 1024 && memory.pssBytes > 0 && memory.pssBytes <= memory.rssBytes);

  const killed = killSessionBrowser(dir, leader.pid);
  assert.deepEqual([...killed].sort(), [...tree].sort());
  assert.equal(await waitGone(dir, killed, clock, 2_000), true);
  for (const pid of tree) assert.equal(isRunning(pid), false);
});

test('without a leader pid, the processes below a match go too (chrome-headless-shell\'s children do not name the profile)', async () => {
  const dir = path.join(root, 'session-c');
  const leader = await start([`--user-data-dir=${dir}`], true);
  assert.ok(leader.pid);
  const tree = processTree(leader.pid);
  assert.equal(tree.length, 2);
  assert.deepEqual(pidsWithUserDataDir(dir), [leader.pid], 'the child does not carry the argument');

  const killed = killSessionBrowser(dir, null);
  assert.deepEqual([...killed].sort(), [...tree].sort());
  assert.equal(await waitGone(dir, killed, clock, 2_000), true);
  for (const pid of tree) assert.equal(isRunning(pid), false);
});

test('memory of a process and of a tree: RSS ≥ PSS ≥ private, summed over the tree', async () => {
  const dir = path.join(root, 'session-d');
  const leader = await start([`--user-data-dir=${dir}`], true);
  assert.ok(leader.pid);
  const own = processMemory(leader.pid);
  assert.ok(own.rssBytes >= own.pssBytes && own.pssBytes >= own.privateBytes && own.privateBytes > 0, JSON.stringify(own));
  const tree = treeMemory(leader.pid);
  assert.equal(tree.processes, 2);
  assert.ok(tree.privateBytes > own.privateBytes && tree.pssBytes > own.pssBytes);
  assert.equal(await waitGone(dir, killSessionBrowser(dir, leader.pid), clock, 2_000), true);
  assert.deepEqual(processMemory(leader.pid), { rssBytes: 0, pssBytes: 0, privateBytes: 0 }, 'an ended process holds nothing');
});

test('nothing to kill: an empty answer, and waitGone is immediate', async () => {
  const dir = path.join(root, 'session-none');
  assert.deepEqual(killSessionBrowser(dir, null), []);
  assert.equal(await waitGone(dir, [], clock, 0), true);
});

/**
 * One gateway process per DATA_DIR (src/bootstrap.ts lockDataDir). A second process on the same DATA_DIR opened
 * the first one's embedded database, removed its socket, and with a NODE_ID and a CLUSTER_SECRET of its own ran
 * beside it: both owned the demo instance and one idempotent request was sent twice. Now the second start is
 * refused before it touches anything there; a lock left by a killed process is taken over.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, realpath, rm, stat, symlink } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { dataDirInUse, lockDataDir, lockPaths } from '../../src/bootstrap.js';
import { startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { cleanEnv, freePort, startProcess } from '../helpers/gateway-process.js';

let t: TestGateway;
let scratch = '';
before(async () => {
  t = await startTestGateway({ label: 'data_dir_lock' });
  scratch = await mkdtemp(path.join(os.tmpdir(), 'mgw-lock-'));
});
after(async () => {
  await t?.stop();
  await rm(scratch, { recursive: true, force: true });
});

test('a second gateway process on a running one\'s DATA_DIR is refused before it touches anything there', async () => {
  const before = (await readdir(t.dataDir)).sort();
  const second = await startProcess({
    env: { ...cleanEnv(), DATA_DIR: t.dataDir, PORT: String(await freePort()), NODE_ID: 'another-node', CLUSTER_SECRET: 'a-cluster-secret-0123456789', LOG_LEVEL: 'warn' },
    startTimeoutMs: 60_000,
  }).then(
    (p) => ({ started: p }),
    (err: Error) => ({ refused: err.message }),
  );
  assert.ok('refused' in second, 'the second process did not start');
  assert.ok(second.refused.includes(dataDirInUse(t.dataDir)), second.refused);
  assert.deepEqual((await readdir(t.dataDir)).sort(), before, 'nothing made or removed in DATA_DIR');
  // the running one goes on
  const { apiKey } = await t.createInstance('still-running');
  const r = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'still here' });
  assert.equal(r.status, 202, r.text);
});

test('in one process: held until released, then free again', async () => {
  const dir = path.join(scratch, 'twice');
  const lock = await lockDataDir(dir);
  await assert.rejects(lockDataDir(dir), new Error(dataDirInUse(dir)));
  await lock.release();
  const again = await lockDataDir(dir);
  await again.release();
});

test('a lock left by a killed process is taken over', async () => {
  const dir = path.join(scratch, 'killed');
  const first = await lockDataDir(dir);
  await first.release();
  // a process that holds the lock's socket and is killed: its socket file stays, nobody answers on it
  const file = path.join(dir, 'run', 'gateway.lock');
  const holder = spawn(process.execPath, ['-e', "require('net').createServer().listen(process.argv[1], () => console.log('up'))", file], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
  await assert.rejects(lockDataDir(dir), new Error(dataDirInUse(dir)), 'held while the process lives');
  holder.kill('SIGKILL');
  await new Promise((resolve) => holder.once('exit', resolve));
  assert.ok((await stat(file)).isSocket(), 'the killed process left its socket file');
  const taken = await waitFor(() => lockDataDir(dir).catch(() => null), 'the lock taken over');
  await taken.release();
});

test('a DATA_DIR too deep for a socket path beside it: the lock lives in the temporary directory, and still holds', async () => {
  const dir = path.join(scratch, 'd'.repeat(60), 'e'.repeat(60));
  const lock = await lockDataDir(dir);
  await assert.rejects(lockDataDir(dir), new Error(dataDirInUse(dir)));
  // another deep DATA_DIR with the same first 107 bytes is another lock
  const sibling = await lockDataDir(`${dir}-2`);
  await sibling.release();
  await lock.release();
  await (await lockDataDir(dir)).release();
});

test('DATA_DIR/run removed while held: a second start is still refused, and the held lock binds its socket there again', async () => {
  const dir = path.join(scratch, 'run-removed');
  const lost: string[] = [];
  const lock = await lockDataDir(dir, { checkMs: 10, onLost: (m) => lost.push(m) });
  const file = path.join(dir, 'run', 'gateway.lock');
  await rm(path.join(dir, 'run'), { recursive: true, force: true });
  // (found from the outside: this let a second start open the running one's embedded database)
  await assert.rejects(lockDataDir(dir), new Error(dataDirInUse(dir)), 'the lock in the temporary directory holds');
  await waitFor(async () => (await stat(file).catch(() => null))?.isSocket(), 'the socket in run/ bound again');
  await assert.rejects(lockDataDir(dir), new Error(dataDirInUse(dir)));
  assert.deepEqual(lost, []);
  await lock.release();
  await (await lockDataDir(dir)).release();
});

test('the lock no file stands for: with run/ removed, under another TMPDIR, and for a DATA_DIR too deep for run/, a second lock is refused', { skip: process.platform !== 'linux' && 'the abstract socket namespace is Linux\'s' }, async () => {
  // found from the outside: the second socket lived in the temporary directory, another lock under another TMPDIR
  // (a service's private /tmp) or for the same deep directory reached through a bind mount (another real path)
  for (const dir of [path.join(scratch, 'beside'), path.join(scratch, 'h'.repeat(60), 'i'.repeat(60))]) {
    const lock = await lockDataDir(dir, { checkMs: 60_000 });
    const paths = lockPaths(await realpath(dir), await stat(dir));
    assert.ok(paths.some((p) => p.startsWith('\0')), `an abstract socket: ${JSON.stringify(paths)}`);
    await rm(path.join(dir, 'run'), { recursive: true, force: true });
    const tmpdir = process.env.TMPDIR;
    process.env.TMPDIR = await mkdtemp(path.join(scratch, 'other-tmp-'));
    try {
      await assert.rejects(lockDataDir(dir), new Error(dataDirInUse(dir)), dir);
    } finally {
      if (tmpdir === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmpdir;
    }
    await lock.release();
    await (await lockDataDir(dir)).release();
  }
});

test('a symlink to a DATA_DIR is the same DATA_DIR: one lock, whichever path is short enough for a socket in run/', async () => {
  const deep = path.join(scratch, 'f'.repeat(60), 'g'.repeat(60));
  const near = path.join(scratch, 'near');
  const short = path.join(scratch, 'short');
  const alias = path.join(scratch, 'alias');
  await (await lockDataDir(deep)).release(); // made
  await (await lockDataDir(near)).release();
  await symlink(deep, short);
  await symlink(near, alias);
  for (const [a, b] of [[deep, short], [short, deep], [near, alias], [alias, near]] as const) {
    const held = await lockDataDir(a);
    await assert.rejects(lockDataDir(b), new Error(dataDirInUse(b)), `${a} held, ${b} refused`);
    await held.release();
  }
});

test('a removed lock another process took meanwhile: the holder says so (two gateways on one DATA_DIR)', async () => {
  const dir = path.join(scratch, 'taken');
  const lost: string[] = [];
  const lock = await lockDataDir(dir, { checkMs: 10, onLost: (m) => lost.push(m) });
  const file = path.join(dir, 'run', 'gateway.lock');
  await rm(file, { force: true });
  const other = net.createServer();
  other.unref(); // a failure here must not keep the test process alive
  await new Promise<void>((resolve) => other.listen(file, resolve));
  await waitFor(() => lost.length > 0, 'the holder told');
  assert.match(lost[0] ?? '', /another process holds it now: two gateways may be using the same DATA_DIR/);
  await lock.release();
  assert.ok((await stat(file)).isSocket(), 'the other process\'s socket is left alone by the release');
  await new Promise<void>((resolve) => other.close(() => resolve()));
});

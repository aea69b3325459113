/**
 * One gateway process per DATA_DIR (src/bootstrap.ts lockDataDir). A second process on the same DATA_DIR opened
 * the first one's embedded database, removed its socket, and with a NODE_ID and a CLUSTER_SECRET of its own ran
 * beside it: both owned the demo instance and one idempotent request was sent twice. Now the second start is
 * refused before it touches anything there; a lock left by a killed process is taken over.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { dataDirInUse, lockDataDir } from '../../src/bootstrap.js';
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

/**
 * The first-start duties (src/bootstrap.ts): the admin token generated once, read back, never one that cannot be
 * used; a DATA_DIR that cannot be a directory refused naming the variable.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ensureDataDir, resolveAdminToken, Unshown } from '../../src/bootstrap.js';
import { BEARER_TOKEN_RULE } from '../../src/config.js';

async function inDir(f: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-bootstrap-'));
  try {
    await f(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('generated on the first start (mode 0600, a usable bearer token), then read back as it is', () =>
  inDir(async (dir) => {
    const first = await resolveAdminToken(dir, undefined);
    assert.equal(first.generated, true);
    assert.match(first.token, BEARER_TOKEN_RULE);
    assert.equal((await stat(path.join(dir, 'admin-token'))).mode & 0o777, 0o600);
    assert.deepEqual(await resolveAdminToken(dir, undefined), { token: first.token, generated: false });
    // ADMIN_TOKEN wins over the file
    assert.deepEqual(await resolveAdminToken(dir, 'from-the-environment-0123'), { token: 'from-the-environment-0123', generated: false });
  }));

test('a token written by hand that no bearer header can carry: the start fails naming the file, not the token, and keeps it', () =>
  inDir(async (dir) => {
    const file = path.join(dir, 'admin-token');
    await writeFile(file, 'Adm!n#hunter2@probe:2026\n');
    await assert.rejects(resolveAdminToken(dir, undefined), (err: Error) => {
      assert.ok(err.message.includes(file), err.message);
      assert.match(err.message, /A-Z a-z 0-9/);
      assert.ok(!err.message.includes('hunter2'), 'the token is not echoed');
      return true;
    });
    assert.equal(await readFile(file, 'utf8'), 'Adm!n#hunter2@probe:2026\n', 'not overwritten');
  }));

test('a token too short to keep is replaced by a generated one', () =>
  inDir(async (dir) => {
    await writeFile(path.join(dir, 'admin-token'), 'short\n');
    const r = await resolveAdminToken(dir, undefined);
    assert.equal(r.generated, true);
    assert.match(r.token, BEARER_TOKEN_RULE);
  }));

test('a DATA_DIR that is a file, or lies under one, is refused naming DATA_DIR; an existing directory is fine', () =>
  inDir(async (dir) => {
    const file = path.join(dir, 'not-a-dir');
    await writeFile(file, 'x');
    for (const p of [file, path.join(file, 'below')]) {
      await assert.rejects(ensureDataDir(p), (err: Error) => {
        assert.equal(err.message, `DATA_DIR ${p} is not a directory (a file is in its way): set DATA_DIR to a directory this process may write`);
        return true;
      });
    }
    await ensureDataDir(dir);
    const fresh = path.join(dir, 'a', 'b');
    await ensureDataDir(fresh);
    assert.equal((await stat(fresh)).isDirectory(), true);
  }));

test('a generated admin token is shown again by every start until one has shown it (a first start that failed before its banner)', () =>
  inDir(async (dir) => {
    const first = await resolveAdminToken(dir, undefined, await Unshown.read(dir));
    assert.equal(first.generated, true);
    // the start failed: nothing said it was shown
    const again = await Unshown.read(dir);
    assert.deepEqual(await resolveAdminToken(dir, undefined, again), { token: first.token, generated: true });
    assert.equal((await stat(path.join(dir, 'unshown.json'))).mode & 0o777, 0o600);
    assert.ok(!(await readFile(path.join(dir, 'unshown.json'), 'utf8')).includes(first.token), 'the file names what, never the secret');
    again.shown({ adminToken: true, demo: false });
    assert.deepEqual(await resolveAdminToken(dir, undefined, await Unshown.read(dir)), { token: first.token, generated: false });
  }));

test('what a start did not show stays to be shown (ADMIN_TOKEN set on that start; a demo it could not finish)', () =>
  inDir(async (dir) => {
    const unshown = await Unshown.read(dir);
    await resolveAdminToken(dir, undefined, unshown);
    unshown.set({ demoInstanceId: 'd1', demoKeyIds: ['7'] });
    unshown.shown({ adminToken: false, demo: true });
    const later = await Unshown.read(dir);
    assert.equal(later.adminToken, true);
    // its key is shown, its link stays noted until a start finds it made
    assert.deepEqual(later.demoKeyIds, []);
    assert.equal(later.demoInstanceId, 'd1');
  }));

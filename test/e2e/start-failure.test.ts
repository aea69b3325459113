/**
 * A start that fails says which setting to look at: DATABASE_URL (never its password) or PORT. The errors
 * are real ones (a refused PostgreSQL connection, a port in use), and the first two cases run the gateway as
 * a process, as a user starts it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startFailure } from '../../src/run-main.js';
import { cleanEnv, freePort } from '../helpers/gateway-process.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SECRET = 'hunter2-Secret-pw';

function runGateway(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdout.resume();
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stderr })));
}

test('a bad variable: exit 2 and the variable named with what it accepts', async () => {
  const r = await runGateway({ PORT: '70000' });
  assert.equal(r.code, 2);
  assert.equal(r.stderr.trim(), 'invalid configuration: PORT must be an integer from 0 to 65535');
});

test('a HOST that is neither an IP address nor a host name: exit 2 before anything is made, the value not echoed', async () => {
  // found from the outside: HOST='bad host' started the embedded PostgreSQL, generated the admin token and created
  // the demo instance, then failed at the bind with exit 1 and the value in the message
  const dir = path.join(await mkdtemp(path.join(os.tmpdir(), 'mgw-badhost-')), 'data');
  try {
    const r = await runGateway({ HOST: 'bad host', DATA_DIR: dir, PORT: '0' });
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim(), 'invalid configuration: HOST must be a host name or an IP address (e.g. 127.0.0.1, 0.0.0.0, localhost)');
    assert.equal(existsSync(dir), false, 'the data directory is not even created');
  } finally {
    await rm(path.dirname(dir), { recursive: true, force: true });
  }
});

test('an unreachable DATABASE_URL: named, its password never shown', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-startfail-'));
  try {
    const r = await runGateway({ DATABASE_URL: `postgres://mgw:${SECRET}@127.0.0.1:${await freePort()}/mgw`, DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'fatal' });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^gateway failed to start: cannot use the PostgreSQL server of DATABASE_URL: .*ECONNREFUSED/m);
    assert.ok(!r.stderr.includes(SECRET));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('startFailure: a pg error is attributed to DATABASE_URL with the password masked; a bound port to PORT', async () => {
  const port = await freePort();
  const url = `postgres://mgw:${encodeURIComponent(SECRET)}@127.0.0.1:${port}/mgw`;
  const client = new pg.Client({ connectionString: url });
  const err = await client.connect().then(() => null, (e: unknown) => e);
  assert.ok(err instanceof Error);
  // a driver message that carries the password (as some do for a bad URL) is masked
  err.message = `${err.message} (${SECRET})`;
  const msg = startFailure(err, { DATABASE_URL: url, PORT: 3000, HOST: '127.0.0.1' });
  assert.match(msg, /^cannot use the PostgreSQL server of DATABASE_URL: /);
  assert.ok(!msg.includes(SECRET), msg);
  // sslmode=require against a server without TLS: pg's message names neither (found from the outside)
  const tls = process.env.TEST_DATABASE_URL ? new URL(process.env.TEST_DATABASE_URL) : null;
  if (tls) {
    tls.searchParams.set('sslmode', 'no-verify');
    const noTls = await new pg.Client({ connectionString: tls.toString() }).connect().then(() => null, (e: unknown) => e);
    if (noTls) assert.match(startFailure(noTls, { DATABASE_URL: tls.toString(), PORT: 3000, HOST: '127.0.0.1' }), /^cannot use the PostgreSQL server of DATABASE_URL: .*SSL/);
  }

  const busy = net.createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
  const taken = (busy.address() as net.AddressInfo).port;
  const second = net.createServer();
  const inUse = await new Promise<unknown>((r) => second.once('error', r).listen(taken, '127.0.0.1'));
  await new Promise<void>((r) => busy.close(() => r()));
  assert.equal(startFailure(inUse, { DATABASE_URL: undefined, PORT: taken, HOST: '127.0.0.1' }), `PORT ${taken} on HOST 127.0.0.1 is in use: set PORT to a free port (0 for any free port)`);
  // a HOST that names no address (found from the outside: the bare resolver error)
  const unresolvable = await new Promise<unknown>((r) => net.createServer().once('error', r).listen(0, 'nosuch.invalid'));
  assert.match(startFailure(unresolvable, { DATABASE_URL: undefined, PORT: 0, HOST: 'nosuch.invalid' }), /^HOST nosuch\.invalid does not resolve to an address \([A-Z_]+\): set HOST/);
  // without DATABASE_URL a connection error is told as it is (the embedded store is ours)
  assert.equal(startFailure(new Error('boom'), { DATABASE_URL: undefined, PORT: 1, HOST: 'h' }), 'boom');
  // found by the outside start probe: each of these was blamed on PORT, or printed as [object Object]
  const notHere = await new Promise<unknown>((r) => net.createServer().once('error', r).listen(0, '192.0.2.1'));
  assert.equal(startFailure(notHere, { DATABASE_URL: undefined, PORT: 0, HOST: '192.0.2.1' }), 'HOST 192.0.2.1 is not an address of this machine (EADDRNOTAVAIL): set HOST to one of its addresses (0.0.0.0: all of them)');
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-sf-'));
  try {
    const lock = path.join(dataDir, 'run', 'gateway.lock');
    const noDir = await new Promise<unknown>((r) => net.createServer().once('error', r).listen(lock));
    assert.match(startFailure(noDir, { DATABASE_URL: undefined, PORT: 0, HOST: '127.0.0.1', DATA_DIR: dataDir }), new RegExp(`^DATA_DIR ${dataDir} cannot be used: E[A-Z]+ on ${lock} .*: give this user a DATA_DIR it can write$`));
    const mkdirFailed = Object.assign(new Error(`EACCES: permission denied, mkdir '${dataDir}/run'`), { code: 'EACCES', syscall: 'mkdir', path: `${dataDir}/run` });
    assert.match(startFailure(mkdirFailed, { DATABASE_URL: undefined, PORT: 0, HOST: '127.0.0.1', DATA_DIR: dataDir }), /^DATA_DIR .* cannot be used: EACCES on /);
    // a file elsewhere is not DATA_DIR's
    const elsewhere = Object.assign(new Error("ENOENT: no such file or directory, open '/nowhere/sql'"), { code: 'ENOENT', syscall: 'open', path: '/nowhere/sql' });
    assert.equal(startFailure(elsewhere, { DATABASE_URL: undefined, PORT: 0, HOST: '127.0.0.1', DATA_DIR: dataDir }), elsewhere.message);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
  assert.equal(startFailure({ errno: 28 }, { DATABASE_URL: undefined, PORT: 0, HOST: 'h' }), '{"errno":28}');
  assert.equal(startFailure({ message: 'disk full' }, { DATABASE_URL: undefined, PORT: 0, HOST: 'h' }), 'disk full');
});

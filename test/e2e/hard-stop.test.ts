/**
 * The hard-stop limit of a graceful stop (STOP_TIMEOUT_MS, src/run-main.ts), on the gateway as its own process
 * against a real PostgreSQL: a stop that has not finished by then exits 1 with one error line naming the stage
 * it was still waiting on and how long the stop took; a stop stuck on a promise that holds nothing (node would
 * otherwise exit by itself, with 0, as if the stop had succeeded) exits 1 the same way; a second signal while
 * the stop waits (the operator insists) exits 130 at once with one error line naming the stage; a clean stop
 * exits 0 without either line.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startSandboxServer, type SandboxServer } from '../../src/http/sandbox-server.js';
import { createTestDb, NEEDS_SERVER, type TestDb } from '../helpers/db.js';
import { startSandboxedGateway, type RunningProcess } from '../helpers/gateway-process.js';

const ADMIN = 'hard-stop-admin-token-0123456789';
let sandbox: SandboxServer;
const dbs: TestDb[] = [];
const dirs: string[] = [];
const running: RunningProcess[] = [];

before(async () => {
  sandbox = await startSandboxServer({ port: 0, host: '127.0.0.1', statePath: null });
});
after(async () => {
  for (const gw of running) await gw.kill('SIGKILL');
  await sandbox.close();
  for (const db of dbs) await db.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/**
 * A gateway on a database of its own: a node whose stop did not get to leave the cluster stays listed as live
 * for a while, and a next one alone on the same database would be refused as a second node.
 */
async function startGateway(env: Record<string, string>, preload: string[] = []): Promise<{ gw: RunningProcess; db: TestDb }> {
  const db = await createTestDb('hardstop');
  dbs.push(db);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-hardstop-'));
  dirs.push(dataDir);
  const gw = await startSandboxedGateway({ dataDir, databaseUrl: db.url ?? '', sandboxUrl: sandbox.url, adminToken: ADMIN, env, preload });
  running.push(gw);
  return { gw, db };
}

interface LogLine {
  level: number;
  msg: string;
  stage?: unknown;
  elapsedMs?: unknown;
  limitMs?: unknown;
}

/** The JSON log lines of a process's output whose message matches `what` (default: a hard stop's). */
function hardStopLines(out: string, what = /hard stop/i): LogLine[] {
  const lines: LogLine[] = [];
  for (const l of out.split('\n')) {
    if (!l.startsWith('{')) continue;
    const parsed = JSON.parse(l) as LogLine;
    if (what.test(parsed.msg)) lines.push(parsed);
  }
  return lines;
}

/**
 * `fn` while another session holds the nodes table: leaving the cluster (and any lease round) waits on it for
 * its statement timeout (4 s).
 */
async function withNodesLocked(db: TestDb, fn: () => Promise<void>): Promise<void> {
  const holder = new pg.Client({ connectionString: db.url ?? '' });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE nodes IN ACCESS EXCLUSIVE MODE');
    await fn();
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    await holder.end();
  }
}

/** The one line of `out` whose message matches `what`, at error level, naming the cluster stage in its message too. */
function oneClusterStageLine(out: string, what?: RegExp): LogLine {
  const lines = hardStopLines(out, what);
  assert.equal(lines.length, 1, out);
  const [line] = lines;
  assert.ok(line);
  assert.equal(line.level, 50, 'at error level');
  assert.match(String(line.stage), /^cluster: /, `the stage it was waiting on:\n${out}`);
  assert.ok(line.msg.includes(String(line.stage)), 'the message names the stage too');
  assert.doesNotMatch(out, new RegExp(ADMIN), 'no secret in the output');
  return line;
}

/** SIGTERM, then how it ended and after how long. */
async function stop(gw: RunningProcess): Promise<{ code: number | null; ms: number }> {
  const t0 = Date.now();
  const { code } = await gw.kill('SIGTERM');
  return { code, ms: Date.now() - t0 };
}

test('a stop held up past STOP_TIMEOUT_MS (its cluster stage waits on a locked table) exits 1 with one error line naming the stage', NEEDS_SERVER, async () => {
  const { gw, db } = await startGateway({ STOP_TIMEOUT_MS: '1000' });
  // leaving the cluster waits on the lock for its statement timeout (4 s), longer than the limit
  await withNodesLocked(db, async () => {
    const { code } = await stop(gw);
    const out = gw.output();
    assert.equal(code, 1, `exit code 1 after a hard stop:\n${out}`);
    const line = oneClusterStageLine(out);
    assert.equal(line.limitMs, 1000);
    // at the limit (node's timers may fire a millisecond early by the wall clock: seen 999), not when the stop
    // would have finished by itself (after the 4 s statement timeout)
    assert.ok(typeof line.elapsedMs === 'number' && line.elapsedMs >= 990 && line.elapsedMs < 3_000, `how long the stop took: ${String(line.elapsedMs)}`);
  });
});

test('a stop stuck on a promise that nothing keeps alive does not end with 0: exit 1 at the limit, naming the stage', async () => {
  const { gw } = await startGateway({ STOP_TIMEOUT_MS: '2000' }, ['test/helpers/stuck-pool-end.ts']);
  const { code } = await stop(gw);
  assert.equal(code, 1, `exit code 1, not 0 as if the stop had succeeded:\n${gw.output()}`);
  const [line, ...more] = hardStopLines(gw.output());
  assert.equal(more.length, 0, gw.output());
  assert.ok(line, `a hard-stop line:\n${gw.output()}`);
  assert.match(String(line.stage), /^database: /);
});

test('a second signal while the stop waits exits 130 at once with one error line naming the stage (before: 130 without a word)', NEEDS_SERVER, async () => {
  const { gw, db } = await startGateway({ STOP_TIMEOUT_MS: '20000' });
  await withNodesLocked(db, async () => {
    gw.proc.kill('SIGTERM');
    // past FORCE_AFTER_MS: a signal that soon is the same request delivered twice (src/stop-signals.ts), not an
    // operator insisting; the stop waits on the lock for its statement timeout (4 s) meanwhile
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(gw.proc.exitCode, null, `still stopping:\n${gw.output()}`);
    const { code } = await gw.kill('SIGINT');
    const out = gw.output();
    assert.equal(code, 130, `exit code 130 on a second signal:\n${out}`);
    const line = oneClusterStageLine(out, /forced stop/i);
    assert.ok(typeof line.elapsedMs === 'number' && line.elapsedMs >= 1_400 && line.elapsedMs < 4_000, `how long the stop had run: ${String(line.elapsedMs)}`);
    assert.deepEqual(hardStopLines(out), [], 'not a hard stop');
  });
});

test('a clean stop exits 0 well before the limit, without a hard-stop line', async () => {
  const { gw } = await startGateway({});
  const { code, ms } = await stop(gw);
  assert.equal(code, 0, gw.output());
  assert.ok(ms < 15_000, `a clean stop is not held up by the hard-stop timer (${ms} ms):\n${gw.output()}`);
  assert.deepEqual(hardStopLines(gw.output()), []);
  assert.deepEqual(hardStopLines(gw.output(), /forced stop/i), []);
});

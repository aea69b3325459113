/**
 * The container's start, without Docker: `npm run build` (the Dockerfile's build stage), then a directory laid
 * out as the runtime stage's COPY lines lay out /app (dist/, sql/, package*.json; node_modules linked), then the
 * runtime stage's CMD, read from docker/Dockerfile itself, with its ENV, in that directory as its WORKDIR. So
 * the Dockerfile and this test cannot drift: a file the compiled code reads at run time that the image lacks,
 * a CMD that needs tsx, or a build that does not emit what the CMD runs fails here.
 * The gateway must answer /health (also through the HEALTHCHECK's own command), create an instance, link it on
 * the embedded sandbox network, send a message through it, and stop on SIGTERM with exit code 0.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { waitFor } from '../helpers/gateway.js';
import { callGateway as call, cleanEnv, startProcess, type RunningProcess } from '../helpers/gateway-process.js';
import { readDockerfile, copiesOf, envOf, execForm, last, type Stage } from '../helpers/dockerfile.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DOCKERFILE = path.join(ROOT, 'docker', 'Dockerfile');
const ADMIN = 'dist-start-admin-token-0123456789abcdef';
const stages = readDockerfile(DOCKERFILE);
const runtime = stages[stages.length - 1] as Stage;

let app = '';
let dataDir = '';
let db: TestDb | null = null;
let child: RunningProcess | null = null;

before(async () => {
  app = await mkdtemp(path.join(os.tmpdir(), 'mgw-app-'));
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-dist-data-'));
  // without a server the gateway uses its embedded PostgreSQL in DATA_DIR, as the image does without DATABASE_URL;
  // not migrated here: the compiled code must find sql/ and migrate by itself
  if (process.env.TEST_DATABASE_URL) db = await createTestDb('dist_start', { migrate: false });
});
after(async () => {
  await child?.kill('SIGKILL');
  await db?.close();
  await rm(app, { recursive: true, force: true });
  await rm(dataDir, { recursive: true, force: true });
});

/** Lay out `app` as the runtime stage's COPY lines lay out its WORKDIR; the build output goes to its dist/. */
function layOut(): void {
  for (const copy of copiesOf(runtime)) {
    const dest = path.resolve(app, copy.dest);
    if (copy.flags.from) {
      // the two stage outputs: the production node_modules (here: the installed one) and the build's dist/
      if (copy.dest === './node_modules') symlinkSync(path.join(ROOT, 'node_modules'), dest, 'dir');
      else if (copy.dest === './dist') buildInto(dest);
      else assert.fail(`COPY --from=${copy.flags.from} … ${copy.dest}: teach this test what that stage makes`);
      continue;
    }
    const intoDir = copy.dest.endsWith('/') || copy.sources.length > 1;
    for (const source of copy.sources) {
      const target = intoDir ? path.join(dest, path.basename(source)) : dest;
      mkdirSync(path.dirname(target), { recursive: true });
      cpSync(path.join(ROOT, source), target, { recursive: true });
    }
  }
}

/** The build stage's last RUN is `npm run build`: run it here, its output redirected into `outDir`. */
function buildInto(outDir: string): void {
  const build = stages.find((s) => s.name === 'build');
  assert.ok(build, 'the Dockerfile has a build stage');
  assert.equal(last(build, 'RUN')?.args, 'npm run build', 'the build stage ends in npm run build');
  const r = spawnSync('npm', ['run', 'build', '--', '--outDir', outDir], { cwd: ROOT, env: cleanEnv(), encoding: 'utf8' });
  assert.equal(r.status, 0, `npm run build succeeds:\n${r.stdout}\n${r.stderr}`);
}

/** The HEALTHCHECK's own command, run as Docker runs it inside the container (the image's ENV, PORT as given). */
function healthcheck(port: number): number | null {
  const hc = last(runtime, 'HEALTHCHECK');
  assert.ok(hc, 'the runtime stage has a HEALTHCHECK');
  const argv = execForm(hc.args.slice(hc.args.indexOf('CMD ') + 4));
  assert.equal(argv[0], 'node', 'the health check needs nothing but node');
  const r = spawnSync(process.execPath, argv.slice(1), { env: { ...cleanEnv(), ...envOf(runtime), PORT: String(port) }, timeout: 20_000 });
  return r.status;
}

test('the image start without Docker: build, the CMD of docker/Dockerfile from dist/, /health, a message through the sandbox, SIGTERM exits 0', async () => {
  const cmd = execForm(last(runtime, 'CMD')?.args ?? '[]');
  assert.equal(cmd[0], 'node', `the CMD runs node: ${cmd.join(' ')}`);
  assert.ok(!cmd.some((a) => /tsx/.test(a)), 'the CMD needs no tsx');
  layOut();

  const gw = await startProcess({
    args: cmd.slice(1),
    cwd: app,
    env: {
      ...cleanEnv(),
      ...envOf(runtime),
      // what a test machine must change: a free port on loopback, its own data directory and database
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      ADMIN_TOKEN: ADMIN,
      LOG_LEVEL: 'info',
      ...(db?.url ? { DATABASE_URL: db.url } : {}),
    },
    startTimeoutMs: 60_000,
  });
  child = gw;
  const url = gw.url;
  const port = Number(new URL(url).port);

  const health = await fetch(`${url}/health`);
  assert.equal(health.status, 200);
  const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  assert.equal(((await health.json()) as { version: string }).version, version, 'package.json found from dist/');
  assert.equal(healthcheck(port), 0, 'the HEALTHCHECK command passes while the gateway runs');

  const created = await call(url, ADMIN, 'POST', '/admin/v1/instances', {
    name: 'dist', driver: 'sandbox', settings: { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = String((created.body.data.instance as { id: string }).id);
  const apiKey = String(created.body.data.apiKey);
  const linked = await call(url, ADMIN, 'POST', `/sandbox/v1/instances/${id}/link`, { phoneNumber: '4915100000777' });
  assert.equal(linked.status, 200, JSON.stringify(linked.body));
  await waitFor(async () => (await call(url, apiKey, 'GET', '/api/status')).body.data.connected === true, 'connected', 6_000);

  const sent = await call(url, apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'from dist' });
  assert.equal(sent.status, 202, JSON.stringify(sent.body));
  const jobId = String(sent.body.data.jobId);
  await waitFor(async () => (await call(url, apiKey, 'GET', `/api/v2/messages/${jobId}`)).body.data.state === 'sent', 'the job sent', 6_000);
  const ledger = await call(url, ADMIN, 'GET', `/sandbox/v1/instances/${id}/ledger`);
  const bodies = (ledger.body.data.items as Array<{ body?: unknown }>).map((e) => e.body);
  assert.deepEqual(bodies.filter((b) => b === 'from dist'), ['from dist'], 'the network received it once');

  const stopped = await gw.kill('SIGTERM');
  const out = gw.output();
  assert.equal(stopped.code, 0, `SIGTERM stops the gateway gracefully:\n${out.slice(-2000)}`);
  assert.match(out, /"msg":"stopping: finishing in-flight dispatches"/);
  assert.notEqual(healthcheck(port), 0, 'the HEALTHCHECK command fails once the gateway is gone');
  const logLines = out.split('\n').filter((l) => l.startsWith('{'));
  assert.ok(logLines.length > 0, 'the gateway logged, so the next check means something');
  assert.equal(logLines.filter((l) => l.includes(ADMIN) || l.includes(apiKey)).length, 0, 'no log line carries a secret');
});

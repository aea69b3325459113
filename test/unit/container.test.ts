/**
 * What the container promises, read from docker/Dockerfile, docker/docker-compose.yml, .dockerignore and
 * package.json (no Docker here): the Node LTS image that "engines" admits, compiled JavaScript (the build stage
 * copies what tsconfig.build.json compiles), production dependencies only, files owned by `node` and the process
 * run as `node`, the V8 flags of npm start in its NODE_OPTIONS, one init process, a health check without curl (the same command in compose), restarts, no
 * demo instance and no secret written into compose, a stop grace period longer than the gateway's hard-stop limit, and
 * a build context without node_modules, data or .git.
 * test/e2e/dist-start.test.ts runs the build, the CMD and the HEALTHCHECK themselves.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { flagsOfStart, startFlags } from '../../bench/lib/start-flags.js';
import { loadConfig } from '../../src/config.js';
import { readDockerfile, all, last, copiesOf, envOf, execForm, flagsOf, type Stage } from '../helpers/dockerfile.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');
const stages = readDockerfile(path.join(ROOT, 'docker', 'Dockerfile'));
const runtime = stages[stages.length - 1] as Stage;
const compose = read('docker/docker-compose.yml');
const pkg = JSON.parse(read('package.json')) as { engines?: { node?: string }; scripts?: Record<string, string> };

/** The first Node version "engines" admits (a ">=N" range), and the Node LTS line the image is built on. */
const LTS_MAJOR = 26; // Active LTS since 2026-10-28 (Node.js release schedule); 24 went to maintenance 2026-10-20

test('every stage is on the current Node LTS line, and package.json engines admits it and Node 20', () => {
  for (const s of stages) assert.match(s.image, new RegExp(`^node:${LTS_MAJOR}-bookworm-slim$`), `stage ${s.name ?? '?'} on node:${LTS_MAJOR}`);
  const min = /^>=\s*(\d+)/.exec(pkg.engines?.node ?? '')?.[1];
  assert.ok(min, 'engines.node is a ">=N" range');
  assert.ok(Number(min) <= 20 && LTS_MAJOR >= Number(min), `engines ${pkg.engines?.node} admits Node 20 and ${LTS_MAJOR}`);
});

test('compiled JavaScript: the build stage copies what tsconfig.build.json compiles and runs npm run build; the CMD needs no tsx', () => {
  const build = stages.find((s) => s.name === 'build');
  assert.ok(build);
  assert.equal(pkg.scripts?.build, 'tsc -p tsconfig.build.json');
  const copied = copiesOf(build).flatMap((c) => c.sources);
  const tsconfig = JSON.parse(read('tsconfig.build.json')) as { include: string[] };
  for (const dir of tsconfig.include) assert.ok(copied.includes(dir), `the build stage copies ${dir}/`);
  for (const f of ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json']) assert.ok(copied.includes(f), `the build stage copies ${f}`);
  assert.equal(last(build, 'RUN')?.args, 'npm run build');
  const cmd = execForm(last(runtime, 'CMD')?.args ?? '[]');
  assert.deepEqual(cmd, ['node', 'dist/src/main.js']);
  for (const ins of runtime.instructions) assert.ok(!/\btsx\b/.test(ins.args), `runtime line ${ins.line} does not use tsx`);
});

test('the runtime stage holds production dependencies, dist/, sql/ and package*.json only, owned by node, run as node', () => {
  const deps = stages.find((s) => s.name === 'deps');
  assert.ok(deps);
  assert.match(all(deps, 'RUN').map((r) => r.args).join('\n'), /npm ci --omit=dev --ignore-scripts/);
  const copies = copiesOf(runtime);
  for (const c of copies) assert.equal(c.flags.chown, 'node:node', `COPY … ${c.dest} has --chown=node:node`);
  const fromContext = copies.filter((c) => !c.flags.from).flatMap((c) => c.sources).sort();
  assert.deepEqual(fromContext, ['.puppeteerrc.cjs', 'package-lock.json', 'package.json', 'sql']);
  assert.deepEqual(copies.filter((c) => c.flags.from).map((c) => `${c.flags.from}→${c.dest}`), ['deps→./node_modules', 'build→./dist']);
  assert.equal(last(runtime, 'USER')?.args, 'node');
  const userLine = last(runtime, 'USER')?.line ?? Infinity;
  assert.ok(userLine < (last(runtime, 'CMD')?.line ?? 0), 'USER node comes before the CMD');
  assert.equal(envOf(runtime).DATA_DIR, '/data');
  assert.equal(envOf(runtime).DEMO_INSTANCE, 'false');
});

test('the container runs node with the V8 flags npm start gives it, in NODE_OPTIONS (an operator\'s own replaces them)', () => {
  const flags = flagsOfStart(pkg.scripts?.start ?? '');
  assert.ok(flags.length > 0, 'npm start puts its flags in front of the caller\'s NODE_OPTIONS');
  assert.deepEqual(flags, startFlags(), 'the benchmarks run the gateway with the same');
  assert.deepEqual((envOf(runtime).NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean), flags);
});

test('the start flags are read past the assignments in front of NODE_OPTIONS, and none from a script without them', () => {
  const tail = 'NODE_OPTIONS="--a=1 --b $NODE_OPTIONS" exec node --import tsx src/main.ts';
  assert.deepEqual(flagsOfStart(tail), ['--a=1', '--b']);
  assert.deepEqual(flagsOfStart(`MGW_LAUNCHED_BY=$PPID ${tail}`), ['--a=1', '--b']);
  assert.deepEqual(flagsOfStart(`A=1 B_2= ${tail}`), ['--a=1', '--b']);
  assert.deepEqual(flagsOfStart('node --import tsx src/main.ts'), []);
  assert.deepEqual(flagsOfStart(`echo ${tail}`), [], 'a command in front is not an assignment');
  assert.deepEqual(flagsOfStart(`A="x y" ${tail}`), [], 'a quoted value is not read as one');
});

test('one init process: tini as the ENTRYPOINT, and no init: true in compose', () => {
  assert.deepEqual(execForm(last(runtime, 'ENTRYPOINT')?.args ?? '[]'), ['/usr/bin/tini', '--']);
  assert.match(all(runtime, 'RUN').map((r) => r.args).join('\n'), /apt-get install [^\n]*\btini\b/);
  assert.doesNotMatch(compose, /^\s*init:/m);
});

test('the HEALTHCHECK needs no curl, and compose checks with the same command', () => {
  const hc = last(runtime, 'HEALTHCHECK');
  assert.ok(hc);
  const { flags, rest } = flagsOf(hc.args);
  assert.ok(flags['start-period'] && flags.timeout && flags.interval, 'interval, timeout and start period are set');
  assert.ok(rest.startsWith('CMD '));
  const argv = execForm(rest.slice(4));
  assert.deepEqual(argv.slice(0, 2), ['node', '-e']);
  assert.match(argv[2] ?? '', /\/health/);
  for (const ins of runtime.instructions) assert.doesNotMatch(ins.args, /\b(curl|wget)\b/, `runtime line ${ins.line} needs no curl or wget`);
  const composeTest = /^\s*test: (\["CMD", "node".*\])$/m.exec(compose)?.[1];
  assert.ok(composeTest, 'compose has a node health check for the gateway');
  assert.deepEqual(execForm(composeTest), ['CMD', ...argv], 'compose and the Dockerfile check the same way');
});

test('compose: restart unless-stopped, no demo instance, secrets only from env files', () => {
  const servicesPart = compose.slice(compose.indexOf('\nservices:'), compose.indexOf('\nvolumes:'));
  const services = servicesPart.split(/^ {2}(?=\w[\w-]*:\s*$)/m).slice(1);
  assert.deepEqual(services.map((s) => s.split(':')[0]), ['postgres', 'gateway']);
  for (const s of services) assert.match(s, /^\s+restart: unless-stopped$/m, `${s.split(':')[0]} restarts unless stopped`);
  assert.match(compose, /^\s+DEMO_INSTANCE: "false"$/m);
  assert.match(compose, /env_file: \[gateway\.env\]/);
  assert.match(compose, /env_file: \[postgres\.env\]/);
  assert.doesNotMatch(compose, /^\s+(ADMIN_TOKEN|POSTGRES_PASSWORD|PGPASSWORD):/m, 'no secret set in compose itself');
  assert.doesNotMatch(compose, /postgres:\/\/[^@\s]*:[^@\s]*@/, 'no password in DATABASE_URL');
  assert.match(read('docker/.gitignore'), /^\*\.env$/m, 'the filled-in env files are not committed');
  for (const f of ['docker/gateway.env.example', 'docker/postgres.env.example']) {
    const settings = read(f).split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
    assert.ok(settings.length > 0);
    for (const l of settings) assert.match(l, /^[A-Z_]+=$/, `${f}: ${l.split('=')[0]} holds no value`);
  }
});

/** `35s`, `1m30s`, `500ms` (compose's durations) in ms. */
function durationMs(d: string): number {
  const parts = [...d.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us)/g)];
  assert.equal(parts.map((p) => p[0]).join(''), d, `a compose duration: ${d}`);
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1, us: 0.001 };
  return parts.reduce((ms, p) => ms + Number(p[1]) * (unit[p[2] ?? ''] ?? NaN), 0);
}

/**
 * `docker stop` sends SIGTERM and SIGKILLs after the grace period, 10 s unless told: below the gateway's own
 * hard-stop limit, so a slow stop would be killed without its log line. Every gateway service of both compose
 * files waits longer than STOP_TIMEOUT_MS (its default: the compose files set none), and so does the README's
 * `docker run`.
 */
test('compose and docker run give the gateway\'s graceful stop longer than its STOP_TIMEOUT_MS before a SIGKILL', () => {
  const limitMs = loadConfig({}).STOP_TIMEOUT_MS;
  for (const f of ['docker/docker-compose.yml', 'docker/docker-compose.cluster.yml']) {
    const text = read(f);
    assert.doesNotMatch(text, /^\s+STOP_TIMEOUT_MS:/m, `${f} keeps the default limit`);
    const periods = [...text.matchAll(/^\s+stop_grace_period: (\S+)$/gm)].map((m) => m[1] ?? '');
    assert.equal(periods.length, 1, `${f}: one stop_grace_period (the gateway's; the cluster's nodes share it)`);
    for (const p of periods) assert.ok(durationMs(p) > limitMs, `${f}: stop_grace_period ${p} is longer than ${limitMs} ms`);
  }
  assert.match(read('docker/docker-compose.cluster.yml'), /^x-gateway: &gateway\n(?: {2}.*\n)*? {2}stop_grace_period: /m, 'in the nodes\' shared part');
  const run = /^docker run .*$/m.exec(read('README.md'))?.[0] ?? '';
  const stopTimeout = /--stop-timeout (\d+)/.exec(run)?.[1];
  assert.ok(stopTimeout && Number(stopTimeout) * 1_000 > limitMs, `README's docker run sets --stop-timeout above ${limitMs} ms: ${run}`);
});

test('.dockerignore keeps node_modules, data, .git, builds, test leftovers and env files out of the context', () => {
  const lines = new Set(read('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#')));
  for (const p of ['node_modules', 'data', '.git', 'dist', '.tmp', 'bench/out', '*.log', '**/*.env', '.env']) assert.ok(lines.has(p), `.dockerignore lists ${p}`);
});

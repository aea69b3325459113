/**
 * What the container promises, read from docker/Dockerfile, docker/docker-compose.yml, .dockerignore and
 * package.json (no Docker here): the Node LTS image that "engines" admits, compiled JavaScript (the build stage
 * copies what tsconfig.build.json compiles), production dependencies only, files owned by `node` and the process
 * run as `node`, the V8 flags of npm start in its NODE_OPTIONS, one init process, a health check without curl (the same command in compose), restarts, no
 * demo instance and no secret written into compose, and a build context without node_modules, data or .git.
 * test/e2e/dist-start.test.ts runs the build, the CMD and the HEALTHCHECK themselves.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { flagsOfStart, startFlags } from '../../bench/lib/start-flags.js';
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

test('.dockerignore keeps node_modules, data, .git, builds, test leftovers and env files out of the context', () => {
  const lines = new Set(read('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#')));
  for (const p of ['node_modules', 'data', '.git', 'dist', '.tmp', 'bench/out', '*.log', '**/*.env', '.env']) assert.ok(lines.has(p), `.dockerignore lists ${p}`);
});

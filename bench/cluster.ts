/**
 * Several nodes on one PostgreSQL (issue 15), measured from the outside with real gateway processes, the
 * sandbox network in this process and a real PostgreSQL:
 *
 * 1. failover: SIGKILL the owner of an instance, time until another node serves it again (GET /api/status
 *    connected through a surviving node); the killed node is restarted between kills. p50/p99 over KILLS.
 * 2. acceptance throughput of v2 send-message spread over INSTANCES instances, through every node round robin,
 *    with 1, 2 and 3 nodes, as a ratio to one node (measured in this one run).
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/cluster.ts
 *   (BENCH_KILLS=20, BENCH_MS=6000, BENCH_CONCURRENCY=32, BENCH_INSTANCES=12, LEASE_TTL_MS=3000)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startSandboxServer } from '../src/http/sandbox-server.js';
import { createTestDb } from '../test/helpers/db.js';
import { freePort, requestGateway, startSandboxedGateway, type RunningProcess } from '../test/helpers/gateway-process.js';
import { startFlags } from './lib/start-flags.js';

if (!process.env.TEST_DATABASE_URL) {
  console.error('bench/cluster.ts needs TEST_DATABASE_URL (the nodes share one PostgreSQL server)');
  process.exit(2);
}
const KILLS = Number(process.env.BENCH_KILLS ?? 20);
const DURATION = Number(process.env.BENCH_MS ?? 6_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const INSTANCES = Number(process.env.BENCH_INSTANCES ?? 12);
const LEASE_TTL_MS = Number(process.env.LEASE_TTL_MS ?? 3_000);
const ADMIN = 'bench-cluster-admin-0123456789';
const SECRET = 'bench-cluster-secret-0123456789';
const SETTINGS = { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null };

interface Node {
  id: string;
  port: number;
  dataDir: string;
  proc: RunningProcess | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const url = (n: Node) => `http://127.0.0.1:${n.port}`;
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
};

const sandbox = await startSandboxServer({ port: 0, host: '127.0.0.1', statePath: null });
const db = await createTestDb('bench-cluster');
const nodes: Node[] = [];
for (const id of ['b1', 'b2', 'b3']) nodes.push({ id, port: await freePort(), dataDir: await mkdtemp(path.join(os.tmpdir(), `mgw-bench-${id}-`)), proc: null });

async function start(n: Node): Promise<void> {
  n.proc = await startSandboxedGateway(
    { port: n.port, dataDir: n.dataDir, databaseUrl: db.url ?? '', sandboxUrl: sandbox.url, adminToken: ADMIN,
      // with npm start's V8 flags, as an operator runs a node
      env: { NODE_ID: n.id, CLUSTER_SECRET: SECRET, LEASE_TTL_MS: String(LEASE_TTL_MS), LOG_LEVEL: 'error', NODE_OPTIONS: startFlags().join(' ') } },
    { tailChars: 4_000, startTimeoutMs: 60_000 },
  );
}

const json = (n: Node, token: string, method: string, route: string, body?: unknown) => requestGateway(url(n), token, method, route, body, 30_000);

async function owners(): Promise<Map<string, string>> {
  const { rows } = await db.pool.query<{ instance_id: string; node_id: string }>('SELECT instance_id, node_id FROM instance_leases WHERE expires_at > now()');
  return new Map(rows.map((r) => [r.instance_id, r.node_id]));
}

async function until(f: () => Promise<boolean>, maxMs: number): Promise<boolean> {
  const end = Date.now() + maxMs;
  while (Date.now() < end) {
    if (await f().catch(() => false)) return true;
    await sleep(50);
  }
  return false;
}

const live = () => nodes.filter((n) => n.proc);
const connected = async (n: Node, key: string) => (await json(n, key, 'GET', '/api/status')).body.data?.connected === true;

try {
  await start(nodes[0] as Node);
  const insts: { id: string; key: string }[] = [];
  for (let i = 0; i < INSTANCES; i++) {
    const r = await json(nodes[0] as Node, ADMIN, 'POST', '/admin/v1/instances', { name: `b${i}`, driver: 'sandbox', settings: SETTINGS });
    const id = String((r.body.data?.instance as { id: string }).id);
    insts.push({ id, key: String(r.body.data?.apiKey) });
    sandbox.network.link(id, { phoneNumber: `4915550300${String(i).padStart(3, '0')}` });
  }

  // ---- acceptance with 1, 2, 3 nodes
  const rates: number[] = [];
  // requests that failed in the runs so far: a ratio to a run with failures is not a ratio of rates
  let failed = 0;
  for (let count = 1; count <= 3; count++) {
    if (count > 1) await start(nodes[count - 1] as Node);
    const members = nodes.slice(0, count);
    await until(async () => {
      const o = await owners();
      const ids = new Set(members.map((n) => n.id));
      if (!insts.every((i) => ids.has(o.get(i.id) ?? ''))) return false;
      if (count > 1 && new Set(o.values()).size < count) return false;
      for (const i of insts) if (!(await connected(members[0] as Node, i.key))) return false;
      return true;
    }, 90_000);
    let done = 0;
    let errors = 0;
    let seq = 0;
    const lat: number[] = [];
    const end = Date.now() + DURATION;
    await Promise.all(Array.from({ length: CONCURRENCY }, async (_, w) => {
      while (Date.now() < end) {
        const k = seq++;
        const inst = insts[k % insts.length] as { id: string; key: string };
        const n = members[(k + w) % members.length] as Node;
        const t0 = performance.now();
        const r = await json(n, inst.key, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: `b ${count} ${k}`, ttlSeconds: 86_400, notBefore: new Date(Date.now() + 86_400_000 - 3_600_000).toISOString() }).catch(() => null);
        lat.push(performance.now() - t0);
        if (r && r.status === 202) done++;
        else errors++;
      }
    }));
    const rps = done / (DURATION / 1000);
    rates.push(rps);
    const ratio = errors === 0 && failed === 0 ? (rps / (rates[0] as number)).toFixed(2) : 'not measured: requests failed';
    if (errors > 0) failed += errors;
    console.log(`acceptance with ${count} node(s): ${rps.toFixed(0)} req/s  p50 ${pct(lat, 50).toFixed(1)} ms  p99 ${pct(lat, 99).toFixed(1)} ms  errors ${errors}  ratio to 1 node ${ratio}`);
  }

  // ---- failover: kill the owner of one instance, time until another node serves it
  const inst = insts[0] as { id: string; key: string };
  const failovers: number[] = [];
  for (let k = 1; k <= KILLS; k++) {
    const owner = (await owners()).get(inst.id);
    const victim = nodes.find((n) => n.id === owner && n.proc);
    if (!victim?.proc) {
      await sleep(500);
      continue;
    }
    await victim.proc.kill('SIGKILL');
    victim.proc = null;
    const killed = Date.now();
    const other = live()[0] as Node;
    const ok = await until(() => connected(other, inst.key), 60_000);
    const ms = Date.now() - killed;
    if (ok) failovers.push(ms);
    console.log(`kill ${k}/${KILLS}: ${victim.id} → served again after ${ok ? `${ms} ms` : 'more than 60 s'}`);
    await start(victim);
    await until(async () => (await owners()).size === INSTANCES, 30_000);
  }
  console.log(`failover (LEASE_TTL_MS ${LEASE_TTL_MS}): p50 ${pct(failovers, 50)} ms  p99 ${pct(failovers, 99)} ms  max ${Math.max(...failovers)} ms over ${failovers.length} kills (bound: lease + a round + a start)`);
} finally {
  for (const n of nodes) await n.proc?.kill('SIGKILL').catch(() => undefined);
  await sandbox.close();
  await db.close();
  for (const n of nodes) await rm(n.dataDir, { recursive: true, force: true });
}

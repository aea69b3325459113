/**
 * Two gateway nodes in this process on one real PostgreSQL (CLUSTER_SECRET, leases of 2 s), one simulated clock
 * for both (leases run on real time), the sandbox network in a server of its own. Node `a` is reached by the
 * other through a TCP proxy (its NODE_URL) that a test can cut (`proxyA.cut('refuse' | 'blackhole')`); node `b`
 * directly: for what one node does or shows about an instance the other runs (the console's tests). Everything
 * started is stopped when the test ends by one clean-up in an explicit order: the nodes still running (`b`, then
 * `a`), then the proxy, the sandbox server, the database and the data directories. node:test runs `t.after` hooks
 * in the order they were registered (not last-registered first), so hooks registered one per resource dropped the
 * database (WITH FORCE) and closed the sandbox and the proxy before any gateway stopped, and stopped `a` before `b`.
 */
import type { TestContext } from 'node:test';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/log.js';
import { startSandboxServer } from '../../src/http/sandbox-server.js';
import { simulatedClock } from '../../src/clock.js';
import { createTestDb, type TestDb } from './db.js';
import { ADMIN_TOKEN, waitFor } from './gateway.js';
import { freePort } from './gateway-process.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

export interface TwoNodes {
  clock: ReturnType<typeof simulatedClock>;
  db: TestDb;
  sandbox: Awaited<ReturnType<typeof startSandboxServer>>;
  /** between node `b` and node `a` */
  proxyA: TcpProxy;
  /** the running nodes by id (a test that stops one takes it out) */
  nodes: Map<string, Gateway>;
  a: Gateway;
  b: Gateway;
  /** an operator call to node `b`, with the admin token */
  admin(method: string, route: string, body?: unknown): Promise<{ status: number; text: string; body: { data?: Record<string, unknown>; error?: string; code?: string } }>;
  /** the node holding the instance's live lease, or null */
  owner(instanceId: string): Promise<string | null>;
  /** a sandbox instance created through node `b`, linked as `phone`, moved to `node` and running connected there; its id */
  linkedOn(node: string, name: string, phone: string): Promise<string>;
  /** the same, with its API key; `settings` as created */
  linked(node: string, name: string, phone: string, settings?: Record<string, unknown>): Promise<{ id: string; apiKey: string }>;
}

/** `label` names the database and the data directories. */
export async function twoNodes(t: TestContext, label: string): Promise<TwoNodes> {
  const clock = simulatedClock();
  // one clean-up, in this order, whatever order node:test runs its hooks in (registration order)
  const cleanUp: (() => Promise<unknown>)[] = [];
  const nodes = new Map<string, Gateway>();
  t.after(async () => {
    // the nodes still running, the last started first (a test that stopped one took it out of `nodes`)
    for (const gw of [...nodes.values()].reverse()) await gw.stop().catch(() => undefined);
    for (const close of cleanUp.reverse()) await close();
  });
  const db = await createTestDb(label);
  cleanUp.push(() => db.close());
  const sandbox = await startSandboxServer({ port: 0, host: '127.0.0.1', statePath: null, clock });
  cleanUp.push(() => sandbox.close());
  const portA = await freePort();
  const proxyA = await startTcpProxy({ host: '127.0.0.1', port: portA });
  cleanUp.push(() => proxyA.close());
  const secret = `${label}-cluster-secret-0123456789`;
  const startNode = async (id: string, env: Record<string, string>) => {
    const dir = await mkdtemp(path.join(os.tmpdir(), `mgw-${label}-${id}-`));
    cleanUp.push(() => rm(dir, { recursive: true, force: true }));
    const gw = await startGateway({
      config: loadConfig({
        PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir, ADMIN_TOKEN, DEMO_INSTANCE: 'false', LOG_LEVEL: 'fatal',
        CLUSTER_SECRET: secret, NODE_ID: id, LEASE_TTL_MS: '2000', SANDBOX: sandbox.url, ...env,
      }),
      database: db.config,
      clock,
      log: silentLogger(),
    });
    nodes.set(id, gw);
    return gw;
  };
  const a = await startNode('a', { PORT: String(portA), NODE_URL: `http://127.0.0.1:${proxyA.port}` });
  const b = await startNode('b', {});
  const admin: TwoNodes['admin'] = async (method, route, body) => {
    const r = await fetch(`${b.url}${route}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await r.text();
    return { status: r.status, text, body: JSON.parse(text) as { data?: Record<string, unknown>; error?: string; code?: string } };
  };
  const owner = async (id: string): Promise<string | null> =>
    (await db.pool.query<{ node_id: string }>('SELECT node_id FROM instance_leases WHERE instance_id = $1 AND expires_at > now()', [id])).rows[0]?.node_id ?? null;
  const linked: TwoNodes['linked'] = async (node, name, phone, settings) => {
    const created = await admin('POST', '/admin/v1/instances', { name, driver: 'sandbox', ...(settings ? { settings } : {}) });
    if (created.status !== 201) throw new Error(`creating ${name}: ${created.status} ${created.text}`);
    const id = (created.body.data?.instance as { id: string }).id;
    sandbox.network.link(id, { phoneNumber: phone });
    const moved = await admin('POST', `/admin/v1/instances/${id}/move`, { node });
    if (moved.status !== 200 && moved.status !== 202) throw new Error(`moving ${name} to ${node}: ${moved.status} ${moved.text}`);
    await waitFor(async () => (await owner(id)) === node && (nodes.get(node) as Gateway).actors.view(id).connected, `${name} connected on ${node}`, 4_000);
    return { id, apiKey: created.body.data?.apiKey as string };
  };
  const linkedOn = async (node: string, name: string, phone: string) => (await linked(node, name, phone)).id;
  return { clock, db, sandbox, proxyA, nodes, a, b, admin, owner, linkedOn, linked };
}

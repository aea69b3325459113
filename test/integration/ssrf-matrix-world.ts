/**
 * The world of the SSRF matrix tests (ssrf-matrix.test.ts, ssrf-matrix-probe.test.ts): a whole gateway over
 * real HTTP, and the proof that a refused URL caused no connection.
 *
 * Proof of "without a connection": a loopback canary listens on every loopback address (`::`, dual-stack) at
 * the port each refused URL names, a second one on 127.0.0.1 at the stand-in's port (where a name rebound to
 * loopback would land), and both count accepted TCP connections (must stay 0); and every outbound TCP
 * connection attempt of this process is observed through `net.client.socket` / `connectionAttempt`: none
 * may go anywhere but PostgreSQL, the gateway itself and the designated stand-in (127.0.0.2).
 *
 * No DNS here: the process-wide resolver the fetch uses is replaced (`setNetworkDefaults`), and 127.0.0.2 is
 * exempted so that the stand-in (ssrf-matrix-standin.ts) can play a public host.
 */
import assert from 'node:assert/strict';
import dc from 'node:diagnostics_channel';
import net from 'node:net';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { setNetworkDefaults, type ResolvedAddress } from '../../src/media/ssrf.js';
import { nameAnswers, type Case } from './ssrf-matrix-cases.js';
import { createStandin } from './ssrf-matrix-standin.js';

export const STANDIN = '127.0.0.2';
export const PHONE = '4915112345678';

// ---- every outbound connection attempt of this process
const attempts: string[] = [];
const allowedEndpoints = new Set<string>();
dc.subscribe('net.client.socket', (message) => {
  const { socket } = message as { socket: net.Socket };
  socket.on('connectionAttempt', (address: string, port: number) => attempts.push(`${address.replace(/^::ffff:/, '')}:${port}`));
});

// ---- names, answered without DNS; `dynamic` overrides the fixed table (rebinding tests flip it)
const dynamic = new Map<string, ResolvedAddress[]>();
async function resolver(host: string): Promise<ResolvedAddress[]> {
  const name = host.toLowerCase().replace(/\.$/, '');
  const fixed = dynamic.get(name) ?? nameAnswers[name];
  if (fixed) return fixed;
  throw Object.assign(new Error(`no test answer for ${name}`), { code: 'ENOTFOUND' });
}

const listen = (server: net.Server, host: string, port = 0) =>
  new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve((server.address() as net.AddressInfo).port));
  });

export interface JobView {
  state: string;
  resultCode: string | null;
  errorMessage: string | null;
}

export interface MatrixWorld {
  g: TestGateway;
  apiKey: string;
  instanceId: string;
  canaryPort: number;
  standinPort: number;
  /** a port on the stand-in's address where nothing listens */
  closedPort: number;
  /** `METHOD path` of every request the stand-in saw */
  standinRequests: string[];
  dynamic: Map<string, ResolvedAddress[]>;
  /** the cases with `{port}` aimed at the canary */
  at(cases: Case[]): Case[];
  standinUrl(path: string): string;
  redirectTo(target: string): string;
  assertNoInternals(text: string, c: Case): void;
  assertSilence(what: string): void;
  /** a v2 send-media that must be accepted (202), then its job once it left queued/scheduled/sending */
  sendAndSettle(mediaUrl: string): Promise<JobView>;
  settle(jobId: string): Promise<JobView>;
  stop(): Promise<void>;
}

export async function startMatrixWorld(label: string): Promise<MatrixWorld> {
  let canaryHits = 0;
  const canaryServer = () =>
    net.createServer((s) => {
      canaryHits++;
      s.destroy();
    });
  const canary = canaryServer();
  const canaryPort = await listen(canary, '::').catch(() => listen(canary, '127.0.0.1'));
  const standinRequests: string[] = [];
  const standin = createStandin(standinRequests);
  const standinPort = await listen(standin, STANDIN);
  const rebindCanary = canaryServer();
  await listen(rebindCanary, '127.0.0.1', standinPort);
  const closed = net.createServer();
  const closedPort = await listen(closed, STANDIN);
  await new Promise((r) => closed.close(r));
  const restoreNetwork = setNetworkDefaults({ resolver, allowAddress: (a) => a === STANDIN });

  const g = await startTestGateway({ label });
  const created = await g.createInstance('ssrf', { settings: { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null } });
  // what the gateway legitimately connects to: PostgreSQL (seen so far), itself, the stand-in
  for (const a of attempts) allowedEndpoints.add(a);
  allowedEndpoints.add(`${new URL(g.url).hostname}:${new URL(g.url).port}`);
  allowedEndpoints.add(`${STANDIN}:${standinPort}`);
  allowedEndpoints.add(`${STANDIN}:${closedPort}`);

  const standinUrl = (path: string) => `http://media.test:${standinPort}${path}`;
  const settle = async (jobId: string): Promise<JobView> => {
    for (let i = 0; i < 2_000; i++) {
      const job = (await g.api(created.apiKey, 'GET', `/api/v2/messages/${jobId}`)).body.data as unknown as JobView;
      if (!['queued', 'scheduled', 'sending'].includes(job.state)) return job;
      await new Promise((res) => setTimeout(res, 5));
    }
    throw new Error(`job ${jobId} never settled`);
  };
  return {
    g,
    apiKey: created.apiKey,
    instanceId: created.instance.id,
    canaryPort,
    standinPort,
    closedPort,
    standinRequests,
    dynamic,
    at: (cases) => cases.map((c) => ({ ...c, url: c.url.replaceAll('{port}', String(canaryPort)) })),
    standinUrl,
    redirectTo: (target) => standinUrl(`/r?to=${encodeURIComponent(target)}`),
    assertNoInternals(text, c) {
      // a name's resolved address is the server's business: it never appears unless the caller wrote it
      for (const leak of c.resolvesTo ?? []) assert.ok(!text.includes(leak), `${c.label}: answer reveals ${leak}: ${text}`);
      assert.doesNotMatch(text, /ERR_MGW|at .*\.ts:\d+|SsrfRefusedError|node:internal/, `${c.label}: internals in ${text}`);
    },
    assertSilence(what) {
      assert.equal(canaryHits, 0, `${what}: the canaries accepted ${canaryHits} connection(s)`);
      assert.deepEqual(
        attempts.filter((a) => !allowedEndpoints.has(a)),
        [],
        `${what}: connection attempts outside the allowed endpoints`,
      );
    },
    async sendAndSettle(mediaUrl) {
      const r = await g.api(created.apiKey, 'POST', '/api/v2/send-media', { phone: PHONE, mediaUrl });
      assert.equal(r.status, 202, `${mediaUrl}: ${r.text}`);
      return settle(String(r.body.data?.jobId));
    },
    settle,
    async stop() {
      await g.stop();
      restoreNetwork();
      canary.close();
      rebindCanary.close();
      standin.close();
    },
  };
}

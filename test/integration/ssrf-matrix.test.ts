/**
 * The SSRF matrix, against a whole gateway over real HTTP (issue 13): every URL the gateway would fetch on
 * someone's behalf — `mediaUrl` of v2 and v1 send-media (at acceptance and again at dispatch) and webhook URLs
 * (admin PUT and delivery time) — is refused when it reaches, or could reach, anything but a public address.
 *
 * Proof of "without a connection": a loopback canary listens on every loopback address (`::`, dual-stack) at
 * the port each refused URL names and counts accepted TCP connections (must stay 0); and every outbound TCP
 * connection attempt of this process is observed through `net.client.socket` / `connectionAttempt`: none
 * may go anywhere but PostgreSQL, the gateway itself and the designated stand-in below.
 *
 * No DNS here: the process-wide resolver the fetch uses is replaced (`setNetworkDefaults`), and one loopback
 * address (127.0.0.2) is exempted so that a designated server can stand in for a public host; the redirect,
 * hop-count and size rules are exercised through it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import dc from 'node:diagnostics_channel';
import net from 'node:net';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { setNetworkDefaults, type ResolvedAddress } from '../../src/media/ssrf.js';
import { loopbackSpellings, nameAnswers, privateTargets, refusedSchemes, type Case } from './ssrf-matrix-cases.js';

const STANDIN = '127.0.0.2';
let g: TestGateway;
let apiKey: string;
let instanceId: string;
let canary: net.Server;
let canaryPort: number;
let canaryHits = 0;
let standin: net.Server;
let standinPort: number;
const standinPaths: string[] = [];
let restoreNetwork: () => void;

// ---- every outbound connection attempt of this process
const attempts: string[] = [];
const allowedEndpoints = new Set<string>();
dc.subscribe('net.client.socket', (message) => {
  const { socket } = message as { socket: net.Socket };
  socket.on('connectionAttempt', (address: string, port: number) => attempts.push(`${address.replace(/^::ffff:/, '')}:${port}`));
});
const strayAttempts = () => attempts.filter((a) => !allowedEndpoints.has(a));

// ---- names, answered without DNS; `rebinding` flips to loopback once the acceptance check has seen it
const dynamic = new Map<string, ResolvedAddress[]>();
async function resolver(host: string): Promise<ResolvedAddress[]> {
  const name = host.toLowerCase().replace(/\.$/, '');
  const fixed = dynamic.get(name) ?? nameAnswers[name];
  if (fixed) return fixed;
  throw Object.assign(new Error(`no test answer for ${name}`), { code: 'ENOTFOUND' });
}

/** A raw HTTP/1.1 stand-in for a public host: every answer is written by hand (redirects, lengths, framing). */
function standinAnswer(socket: net.Socket, path: string): void {
  const u = new URL(path, 'http://x');
  const send = (head: string, body: Buffer | string = ''): void => {
    socket.end(Buffer.concat([Buffer.from(`${head}\r\nConnection: close\r\n\r\n`), Buffer.from(body)]));
  };
  if (u.pathname === '/ok.png') return send('HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 4', 'PNG!');
  if (u.pathname === '/r') return send(`HTTP/1.1 302 Found\r\nLocation: ${u.searchParams.get('to') ?? '/'}\r\nContent-Length: 0`);
  const hop = /^\/hop\/(\d+)$/.exec(u.pathname);
  if (hop) {
    const left = Number(hop[1]);
    return left === 0 ? standinAnswer(socket, '/ok.png') : send(`HTTP/1.1 302 Found\r\nLocation: /hop/${left - 1}\r\nContent-Length: 0`);
  }
  if (u.pathname === '/declared-17mib') {
    // says 17 MiB and sends a little: the length alone must refuse it, unread
    socket.write(`HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: ${17 * 1024 * 1024}\r\n\r\n`);
    socket.write(Buffer.alloc(1024));
    return;
  }
  if (u.pathname === '/chunked-17mib') {
    socket.write('HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nTransfer-Encoding: chunked\r\n\r\n');
    const block = Buffer.alloc(256 * 1024, 0x41);
    let sent = 0;
    const pump = () => {
      while (sent < 17 * 1024 * 1024 && !socket.destroyed) {
        sent += block.length;
        if (!socket.write(Buffer.concat([Buffer.from(`${block.length.toString(16)}\r\n`), block, Buffer.from('\r\n')]))) return void socket.once('drain', pump);
      }
      if (!socket.destroyed) socket.end('0\r\n\r\n');
    };
    return pump();
  }
  if (u.pathname === '/length-and-chunked') {
    // a body larger than its declared length, smuggled as chunks behind a small Content-Length
    return send('HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 4\r\nTransfer-Encoding: chunked', `100000\r\n${'A'.repeat(0x100000)}\r\n0\r\n\r\n`);
  }
  if (u.pathname === '/two-lengths') {
    return send('HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 4\r\nContent-Length: 17825792', 'PNG!');
  }
  send('HTTP/1.1 404 Not Found\r\nContent-Length: 0');
}

const listen = (server: net.Server, host: string) =>
  new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve((server.address() as net.AddressInfo).port));
  });

before(async () => {
  canary = net.createServer((s) => {
    canaryHits++;
    s.destroy();
  });
  canaryPort = await listen(canary, '::').catch(() => listen(canary, '127.0.0.1'));
  standin = net.createServer((socket) => {
    let head = '';
    socket.on('error', () => undefined);
    socket.on('data', (c: Buffer) => {
      if (head.includes('\r\n\r\n')) return;
      head += c.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      const path = head.split(' ')[1] ?? '/';
      standinPaths.push(path);
      standinAnswer(socket, path);
    });
  });
  standinPort = await listen(standin, STANDIN);
  restoreNetwork = setNetworkDefaults({ resolver, allowAddress: (a) => a === STANDIN });

  g = await startTestGateway({ label: 'ssrfmatrix' });
  const created = await g.createInstance('ssrf', { settings: { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null } });
  apiKey = created.apiKey;
  instanceId = created.instance.id;
  // what the gateway legitimately connects to: PostgreSQL (seen so far), itself, the stand-in
  for (const a of attempts) allowedEndpoints.add(a);
  allowedEndpoints.add(`${new URL(g.url).hostname}:${new URL(g.url).port}`);
  allowedEndpoints.add(`${STANDIN}:${standinPort}`);
});

after(async () => {
  await g?.stop();
  restoreNetwork?.();
  canary.close();
  standin.close();
});

/** Every case of the matrix aims at the canary's port. */
const at = (cases: Case[]) => cases.map((c) => ({ ...c, url: c.url.replaceAll('{port}', String(canaryPort)) }));
const ACCEPTANCE_CASES = () => at([...loopbackSpellings, ...privateTargets, ...refusedSchemes]);

function assertNoInternals(text: string, c: Case): void {
  // a name's resolved address is the server's business: it never appears unless the caller wrote it
  for (const leak of c.resolvesTo ?? []) assert.ok(!text.includes(leak), `${c.label}: answer reveals ${leak}: ${text}`);
  assert.doesNotMatch(text, /ERR_MGW|at .*\.ts:\d+|SsrfRefusedError|node:internal/, `${c.label}: internals in ${text}`);
}

function assertSilence(what: string): void {
  assert.equal(canaryHits, 0, `${what}: the canary accepted ${canaryHits} connection(s)`);
  assert.deepEqual(strayAttempts(), [], `${what}: connection attempts outside the allowed endpoints`);
}

describe('at acceptance: refused with 400 (v2), the frozen v1 refusal, 400 on webhook PUT; no connection', () => {
  test('v2 POST /api/v2/send-media', async () => {
    for (const c of ACCEPTANCE_CASES()) {
      const r = await g.api(apiKey, 'POST', '/api/v2/send-media', { phone: '4915112345678', mediaUrl: c.url });
      assert.equal(r.status, 400, `${c.label} (${c.url}): ${r.text}`);
      assert.equal(r.body.code, 'VALIDATION_FAILED', c.label);
      assert.equal(r.body.data?.field, 'mediaUrl', c.label);
      assertNoInternals(r.text, c);
    }
    assertSilence('v2 send-media');
  });

  test('v1 POST /api/send-media: v1 answers a refused mediaUrl as its frozen validation failure, nothing queued', async () => {
    for (const c of ACCEPTANCE_CASES()) {
      const r = await g.api(apiKey, 'POST', '/api/send-media', { phone: '4915112345678', mediaUrl: c.url });
      assert.equal(r.status, 500, `${c.label} (${c.url}): ${r.text}`);
      assert.deepEqual(Object.keys(r.body), ['success', 'error'], c.label);
      assert.match(String(r.body.error), /mediaUrl/, c.label);
      assertNoInternals(r.text, c);
    }
    const items = await g.api(apiKey, 'GET', '/api/v2/queue/items');
    assert.equal(items.status, 200, items.text);
    assert.doesNotMatch(items.text, /wq_/, 'nothing was queued');
    assertSilence('v1 send-media');
  });

  test('admin PUT /admin/v1/instances/:id/webhook', async () => {
    for (const c of ACCEPTANCE_CASES()) {
      const r = await g.admin('PUT', `/admin/v1/instances/${instanceId}/webhook`, { url: c.url, secret: 'a-webhook-secret-of-32-characters' });
      assert.equal(r.status, 400, `${c.label} (${c.url}): ${r.text}`);
      assert.equal(r.body.code, 'VALIDATION_FAILED', c.label);
      assert.equal(r.body.data?.field, 'url', c.label);
      assertNoInternals(r.text, c);
      assert.ok(!r.text.includes('a-webhook-secret'), 'the secret is never echoed');
    }
    assert.equal((await g.admin('GET', `/admin/v1/instances/${instanceId}/webhook`)).status, 404, 'nothing was stored');
    assertSilence('webhook PUT');
  });
});

// ---- dispatch time: accepted (the stand-in is public to the gateway), refused when fetched
interface JobView {
  state: string;
  resultCode: string | null;
  errorMessage: string | null;
}

async function sendAndSettle(mediaUrl: string): Promise<JobView> {
  const r = await g.api(apiKey, 'POST', '/api/v2/send-media', { phone: '4915112345678', mediaUrl });
  assert.equal(r.status, 202, `${mediaUrl}: ${r.text}`);
  const jobId = String(r.body.data?.jobId);
  for (let i = 0; i < 2_000; i++) {
    const v = await g.api(apiKey, 'GET', `/api/v2/messages/${jobId}`);
    const job = v.body.data as unknown as JobView;
    if (!['queued', 'scheduled', 'sending'].includes(job.state)) return job;
    await new Promise((res) => setTimeout(res, 5));
  }
  throw new Error(`job for ${mediaUrl} never settled`);
}

const standinUrl = (path: string) => `http://media.test:${standinPort}${path}`;
const redirectTo = (target: string) => standinUrl(`/r?to=${encodeURIComponent(target)}`);

describe('at dispatch: the fetch itself refuses; the job fails MEDIA_DOWNLOAD_FAILED; no connection', () => {
  test('control: the stand-in is reachable, 3 redirect hops are followed', async () => {
    assert.equal((await sendAndSettle(standinUrl('/ok.png'))).state, 'sent');
    assert.equal((await sendAndSettle(standinUrl('/hop/3'))).state, 'sent');
    assertSilence('control');
  });

  test('a redirect to any loopback spelling, private range, private-resolving name, or other scheme', async () => {
    for (const c of at([...loopbackSpellings, ...privateTargets, ...refusedSchemes])) {
      const job = await sendAndSettle(redirectTo(c.url));
      assert.equal(job.state, 'failed', `${c.label} (${c.url}): ${JSON.stringify(job)}`);
      assert.equal(job.resultCode, 'MEDIA_DOWNLOAD_FAILED', c.label);
      assert.match(String(job.errorMessage), /^mediaUrl /, c.label);
      assertNoInternals(String(job.errorMessage), c);
    }
    assertSilence('redirects');
  });

  test('DNS rebinding: public at acceptance, loopback when fetched', async () => {
    dynamic.set('rebind.test', [{ address: STANDIN, family: 4 }]);
    const r = await g.api(apiKey, 'POST', '/api/v2/send-media', { phone: '4915112345678', mediaUrl: `http://rebind.test:${canaryPort}/a.png` });
    assert.equal(r.status, 202, r.text);
    dynamic.set('rebind.test', [{ address: '127.0.0.1', family: 4 }]);
    const jobId = String(r.body.data?.jobId);
    let job: JobView | null = null;
    for (let i = 0; i < 2_000 && (!job || ['queued', 'scheduled', 'sending'].includes(job.state)); i++) {
      job = (await g.api(apiKey, 'GET', `/api/v2/messages/${jobId}`)).body.data as unknown as JobView;
      await new Promise((res) => setTimeout(res, 5));
    }
    assert.equal(job?.state, 'failed', JSON.stringify(job));
    assert.match(String(job?.errorMessage), /public address/);
    assert.ok(!String(job?.errorMessage).includes('127.0.0.1'));
    dynamic.delete('rebind.test');
    assertSilence('rebinding');
  });

  test('more than 3 hops: refused, the 5th URL never requested', async () => {
    const before = standinPaths.length;
    const job = await sendAndSettle(standinUrl('/hop/4'));
    assert.equal(job.state, 'failed');
    assert.match(String(job.errorMessage), /redirects more than 3 times/);
    assert.deepEqual(standinPaths.slice(before), ['/hop/4', '/hop/3', '/hop/2', '/hop/1']);
  });

  test('sizes: Content-Length above 16 MiB, a body growing past 16 MiB, a body larger than its declared length', async () => {
    for (const [path, why] of [
      ['/declared-17mib', /exceeds 16777216 bytes/],
      ['/chunked-17mib', /exceeds 16777216 bytes/],
      ['/length-and-chunked', /could not be fetched/],
      ['/two-lengths', /could not be fetched/],
    ] as const) {
      const job = await sendAndSettle(standinUrl(path));
      assert.equal(job.state, 'failed', `${path}: ${JSON.stringify(job)}`);
      assert.equal(job.resultCode, 'MEDIA_DOWNLOAD_FAILED');
      assert.match(String(job.errorMessage), why, path);
    }
    assertSilence('sizes');
  });
});

describe('webhook delivery time: a URL that turned private is refused at connect, the canary silent', () => {
  interface Delivery {
    attemptLog: { error: string | null }[];
  }
  async function firstAttemptError(): Promise<string> {
    const sent = await g.admin('POST', `/admin/v1/instances/${instanceId}/webhook/test`, {});
    assert.equal(sent.status, 202, sent.text);
    for (let i = 0; i < 2_000; i++) {
      const list = await g.admin('GET', `/admin/v1/instances/${instanceId}/webhook/deliveries`);
      const items = ((list.body.data as { items?: Delivery[] } | undefined)?.items ?? []) as Delivery[];
      const error = items[0]?.attemptLog[0]?.error;
      if (error) return error;
      await new Promise((res) => setTimeout(res, 5));
    }
    throw new Error('no delivery attempt recorded');
  }

  test('a name that resolved public at PUT and loopback at delivery', async () => {
    dynamic.set('hook.test', [{ address: STANDIN, family: 4 }]);
    const put = await g.admin('PUT', `/admin/v1/instances/${instanceId}/webhook`, { url: `http://hook.test:${canaryPort}/hook`, secret: 'a-webhook-secret-of-32-characters' });
    assert.equal(put.status, 200, put.text);
    dynamic.set('hook.test', [{ address: '127.0.0.1', family: 4 }]);
    const error = await firstAttemptError();
    assert.match(error, /non-public address \(loopback\)/);
    assert.ok(!error.includes('127.0.0.1') && !error.includes('hook.test'), error);
    assertSilence('webhook rebinding');
  });

  test('a stored loopback literal (a row from before the checks) is refused before any connection', async () => {
    await g.db.pool.query('UPDATE webhooks SET url = $2 WHERE instance_id = $1', [instanceId, `http://[::ffff:127.0.0.1]:${canaryPort}/hook`]);
    const error = await firstAttemptError();
    assert.match(error, /must point to a public address/);
    assertSilence('stored literal');
  });
});

/**
 * The seeded fuzzer over every route of the gateway (issue 13, "Keep them closed"), shared by the short run in
 * `npm test` (test/integration/fuzz.test.ts) and `npm run fuzz` (scripts/fuzz.ts). The routes come from the
 * gateway's own route table (`gw.routes`); requests are real HTTP against a real gateway on real PostgreSQL and
 * the sandbox network, with linked instances so that handlers really run. Every answer is checked
 * (test/helpers/fuzz-checks.ts), and the gateway's log must hold nothing at error level.
 *
 * Request i of a run is a pure function of (seed, i): `FUZZ_SEED=<seed> FUZZ_ONLY=<i>` replays it alone.
 */
import { startTestGateway, waitFor, type TestGateway } from './gateway.js';
import { rngFor } from './fuzz-values.js';
import { buildRequest, routeDeck, send, type FuzzAnswer, type FuzzRequest } from './fuzz-request.js';
import { checkAnswer, replayLine } from './fuzz-checks.js';
import type { FuzzWorld } from './fuzz-routes.js';

export interface FuzzOptions {
  seed: number;
  requests: number;
  concurrency: number;
  /** run only this request index (replay) */
  only?: number;
  timeoutMs?: number;
  /** called every `progressEvery` requests */
  onProgress?: (done: number) => void;
  progressEvery?: number;
  /** checked before each request: true ends the run early (the summary covers what was sent) */
  stopRequested?: () => boolean;
}

export interface FuzzViolation {
  index: number;
  route: string;
  status: number;
  kind: string;
  detail: string;
  replay: string;
}

export interface FuzzSummary {
  seed: number;
  /** requests generated (indices), and HTTP requests sent (a request sent several times at once counts each) */
  generated: number;
  requests: number;
  seconds: number;
  byStatus: Record<string, number>;
  byFamily: Record<string, Record<string, number>>;
  /** status and code per route (printed with FUZZ_VERBOSE=1) */
  byRoute: Record<string, Record<string, number>>;
  /** the 5xx answers the invariants allow (SPEC.md server-side codes, v1's frozen answers), by status and code */
  allowed5xx: Record<string, number>;
  violations: FuzzViolation[];
  /** log records at error level or above, with the requests that may have caused them */
  errorLogs: string[];
}

export interface FuzzRig {
  t: TestGateway;
  world: FuzzWorld;
  logLines: string[];
  stop(): Promise<void>;
}

/** The seed: FUZZ_SEED when set, else one derived from the time (printed, so a failure can be replayed). */
export function seedFromEnv(): number {
  const raw = process.env.FUZZ_SEED;
  if (raw !== undefined && raw !== '') {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new Error(`FUZZ_SEED must be an integer from 0 to ${0xffffffff}`);
    return n;
  }
  return (Date.now() ^ (process.pid << 8)) >>> 0;
}

const FAST = { quietHours: null, minDelayMs: 0, maxDelayMs: 0, maxPerHour: null, maxPer24h: null };

/** A gateway with three linked instances, a waiting and a sent job, an inbound message, a group and a media. */
export async function startFuzzRig(label: string): Promise<FuzzRig> {
  const logLines: string[] = [];
  const t = await startTestGateway({ label, logLines, env: { INTERACTION_RATE_POINTS: '100000000', LEGACY_SYNC_TIMEOUT_MS: '5000' } });
  try {
    const [a, b, c] = [await t.createInstance('fuzza', { settings: FAST }), await t.createInstance('fuzzb', { settings: FAST }), await t.createInstance('fuzzc', { settings: FAST })];
    const d = await t.createInstance('fuzzd', { link: false });
    const recipient = '4915112340001';
    const later = new Date(Date.now() + 6 * 3_600_000).toISOString();
    const waiting = await t.api(a.apiKey, 'POST', '/api/v2/send-message', { phone: recipient, message: 'waits', notBefore: later });
    const sent = await t.api(a.apiKey, 'POST', '/api/v2/send-message', { phone: recipient, message: 'goes out' });
    const sentJob = String(sent.body.data?.jobId);
    const sentMsg = await waitFor(async () => {
      const r = await t.api(a.apiKey, 'GET', `/api/v2/messages/${sentJob}`);
      return r.body.data?.state === 'sent' ? String(r.body.data.messageId) : null;
    }, 'the first message sent');
    const inbound = await t.admin('POST', `/sandbox/v1/instances/${a.instance.id}/messages`, { from: recipient, body: 'hello' });
    const png = Buffer.from('89504e470d0a1a0a0000', 'hex').toString('base64');
    const mediaMsg = await t.admin('POST', `/sandbox/v1/instances/${a.instance.id}/messages`, { from: recipient, type: 'media', media: { mimetype: 'image/png', data: png, filename: 'in.png' } });
    const spareMsg = await t.admin('POST', `/sandbox/v1/instances/${a.instance.id}/messages`, { from: recipient, body: 'may go' });
    const newGroup = () => t.admin('POST', `/sandbox/v1/instances/${a.instance.id}/groups`, { from: recipient, title: 'fuzz', participants: [b.phone], instanceAdmin: true });
    const [group, spareGroup] = [await newGroup(), await newGroup()];
    const upload = async () => {
      const form = new FormData();
      form.append('file', new Blob([Buffer.from('89504e470d0a1a0a0000', 'hex')], { type: 'image/png' }), 'a.png');
      const r = await fetch(`${t.url}/api/v2/media`, { method: 'POST', headers: { authorization: `Bearer ${a.apiKey}` }, body: form });
      const body = (await r.json()) as { data?: { mediaId?: string } };
      if (r.status !== 201 || !body.data?.mediaId) throw new Error('fuzz setup: media upload failed');
      return body.data.mediaId;
    };
    const [mediaId, spareMedia] = [await upload(), await upload()];
    for (const [what, ok] of [
      ['waiting job', waiting.status === 202],
      ['inbound message', inbound.status === 201 && spareMsg.status === 201 && mediaMsg.status === 201],
      ['group', group.status === 201 && spareGroup.status === 201],
    ] as const) {
      if (!ok) throw new Error(`fuzz setup: ${what} failed`);
    }
    const webhookSecret = 'fuzz-webhook-secret-0123456789abcdef';
    const world: FuzzWorld = {
      a: { id: a.instance.id, key: a.apiKey, phone: a.phone },
      b: { id: b.instance.id, key: b.apiKey, phone: b.phone },
      c: { id: c.instance.id, key: c.apiKey, phone: c.phone },
      d: { id: d.instance.id },
      recipient,
      victimPhone: '4915550001234',
      waitingJob: String(waiting.body.data?.jobId),
      sentJob,
      sentMsg,
      inboundMsg: String(inbound.body.data?.messageId),
      spareMsg: String(spareMsg.body.data?.messageId),
      mediaMsg: String(mediaMsg.body.data?.messageId),
      groupId: String(group.body.data?.groupId),
      spareGroup: String(spareGroup.body.data?.groupId),
      mediaId,
      spareMedia,
      adminToken: t.adminToken,
      webhookSecret,
      secrets: [t.adminToken, a.apiKey, b.apiKey, c.apiKey, d.apiKey, webhookSecret],
    };
    logLines.splice(0);
    return { t, world, logLines, stop: () => t.stop() };
  } catch (err) {
    await t.stop();
    throw err;
  }
}

const LEVEL_ERROR = 50;

/** Log records at error level and above since the last call (the lines are taken out of `lines`). */
function errorRecords(lines: string[]): Array<{ msg: string; method?: string; path?: string; err?: string }> {
  const out: Array<{ msg: string; method?: string; path?: string; err?: string }> = [];
  for (const line of lines.splice(0)) {
    for (const one of line.split('\n')) {
      if (one.trim() === '') continue;
      let rec: { level?: number; msg?: string; method?: string; path?: string; err?: { message?: string } };
      try {
        rec = JSON.parse(one) as typeof rec;
      } catch {
        continue;
      }
      if ((rec.level ?? 0) < LEVEL_ERROR) continue;
      out.push({ msg: String(rec.msg), ...(rec.method ? { method: rec.method } : {}), ...(rec.path ? { path: rec.path } : {}), ...(rec.err?.message ? { err: rec.err.message } : {}) });
    }
  }
  return out;
}

export async function runFuzz(rig: FuzzRig, opts: FuzzOptions): Promise<FuzzSummary> {
  const { t, world } = rig;
  const draw = routeDeck(t.gw.routes);
  const started = Date.now();
  const summary: FuzzSummary = { seed: opts.seed, generated: 0, requests: 0, seconds: 0, byStatus: {}, byFamily: {}, byRoute: {}, allowed5xx: {}, violations: [], errorLogs: [] };
  const recent: FuzzRequest[] = [];
  const secrets = [...world.secrets];
  const indices = opts.only !== undefined ? [opts.only] : Array.from({ length: opts.requests }, (_v, i) => i);
  let next = 0;
  const scanLog = () => {
    for (const rec of errorRecords(rig.logLines)) {
      const suspects = recent.filter((r) => rec.path !== undefined && r.method === rec.method && r.url.split('?')[0] === rec.path);
      summary.errorLogs.push(
        `${rec.msg}${rec.err ? `: ${rec.err}` : ''}${rec.path ? ` (${rec.method} ${rec.path})` : ''}` +
          (suspects.length > 0 ? `\n    request #${suspects[0]?.index}: ${replayLine(t.url, suspects[0] as FuzzRequest)}` : ''),
      );
    }
  };
  const worker = async () => {
    while (next < indices.length && !opts.stopRequested?.()) {
      const index = indices[next++] as number;
      const req = buildRequest(rngFor(opts.seed, index), index, world, draw);
      recent.push(req);
      if (recent.length > 4 * opts.concurrency + 50) recent.shift();
      const answers = await Promise.all(Array.from({ length: req.repeat }, () => send(t.url, req, opts.timeoutMs ?? 30_000, opts.concurrency)));
      for (const answer of answers) record(req, answer);
      summary.generated += 1;
      if (opts.onProgress && summary.generated % (opts.progressEvery ?? 10_000) === 0) opts.onProgress(summary.generated);
      if (summary.generated % 100 === 0) scanLog();
    }
  };
  const record = (req: FuzzRequest, answer: FuzzAnswer) => {
    const index = req.index;
    {
      summary.requests += 1;
      const status = answer.error !== undefined ? 'no answer' : String(answer.status);
      summary.byStatus[status] = (summary.byStatus[status] ?? 0) + 1;
      const fam = (summary.byFamily[req.route.family] ??= {});
      const bucket = answer.error !== undefined ? 'none' : `${String(answer.status)[0]}xx`;
      fam[bucket] = (fam[bucket] ?? 0) + 1;
      const code = answer.error === undefined ? codeOf(answer.text) : '';
      const per = (summary.byRoute[`${req.route.method} ${req.route.path}`] ??= {});
      per[`${status}${code ? ` ${code}` : ''}`] = (per[`${status}${code ? ` ${code}` : ''}`] ?? 0) + 1;
      const found = checkAnswer(req, answer, secrets);
      // a key handed out by create or rotate is a secret from then on: no later answer may carry it
      if (answer.status === 201 && req.route.auth === 'admin') for (const k of answer.text.match(/wapi_[A-Za-z0-9-]+_[A-Za-z0-9_-]+/g) ?? []) secrets.push(k);
      if (answer.status >= 500 && found.length === 0) {
        const k = `${answer.status} ${code || firstWords(answer.text)} on ${req.route.path}`;
        summary.allowed5xx[k] = (summary.allowed5xx[k] ?? 0) + 1;
      }
      for (const v of found) {
        summary.violations.push({ index, route: `${req.route.method} ${req.route.path}`, status: answer.status, kind: v.kind, detail: v.detail, replay: replayLine(t.url, req) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency, indices.length) }, worker));
  scanLog();
  summary.seconds = (Date.now() - started) / 1000;
  return summary;
}

function codeOf(text: string): string {
  const m = /"code":"([A-Z_]+)"/.exec(text.slice(0, 4096));
  return m?.[1] ?? '';
}
function firstWords(text: string): string {
  const m = /"error":"([^"]{0,60})/.exec(text.slice(0, 4096));
  return m ? JSON.stringify(m[1]) : '';
}

/** The summary as printed by `npm run fuzz` and by a failing test. */
export function formatSummary(s: FuzzSummary, maxViolations = 20): string {
  const lines = [
    `fuzz seed ${s.seed} (replay: FUZZ_SEED=${s.seed}; one request: FUZZ_SEED=${s.seed} FUZZ_ONLY=<index>)`,
    `requests ${s.requests} (${s.generated} generated, some sent several times at once) in ${s.seconds.toFixed(1)} s (${Math.round(s.requests / Math.max(s.seconds, 0.001))}/s)`,
    `by status: ${Object.entries(s.byStatus).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${v}`).join(' ')}`,
    'by route family:',
    ...Object.entries(s.byFamily).sort(([a], [b]) => a.localeCompare(b)).map(([f, c]) => `  ${f.padEnd(18)} ${Object.entries(c).sort().map(([k, v]) => `${k}=${v}`).join(' ')}`),
    `5xx the invariants allow: ${Object.keys(s.allowed5xx).length === 0 ? 'none' : ''}`,
    ...Object.entries(s.allowed5xx).sort().map(([k, v]) => `  ${v} × ${k}`),
    `violations: ${s.violations.length}; error-level log records: ${s.errorLogs.length}`,
  ];
  if (process.env.FUZZ_VERBOSE) {
    lines.push('by route:');
    for (const [r, c] of Object.entries(s.byRoute).sort()) lines.push(`  ${r}: ${Object.entries(c).sort().map(([k, v]) => `${k}=${v}`).join(' ')}`);
  }
  const byKind = new Map<string, FuzzViolation[]>();
  for (const v of s.violations) byKind.set(`${v.kind} on ${v.route}`, [...(byKind.get(`${v.kind} on ${v.route}`) ?? []), v]);
  for (const [kind, list] of [...byKind.entries()].slice(0, maxViolations)) {
    const v = list[0] as FuzzViolation;
    lines.push(`  ${list.length} × ${kind}: ${v.status} ${v.detail}`, `    request #${v.index}: ${v.replay}`);
  }
  for (const e of s.errorLogs.slice(0, maxViolations)) lines.push(`  log: ${e}`);
  return lines.join('\n');
}

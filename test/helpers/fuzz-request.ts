/**
 * One fuzz request: built from a route of the route table and the request's own generator (route, credential,
 * path parameters, query, body, headers, encoding, size), sent over a real socket, read back with a cap.
 */
import http from 'node:http';
import { gzipSync, deflateSync, brotliCompressSync } from 'node:zlib';
import type { RouteInfo } from '../../src/http/router.js';
import { junkBodyBytes, junkParam, junkString, mutateBody, queryString, toJsonText, type Rng } from './fuzz-values.js';
import { knownQuery, plausibleParam, template, weightOf, type FuzzWorld } from './fuzz-routes.js';

export interface FuzzRequest {
  index: number;
  route: RouteInfo;
  method: string;
  /** path and query, as sent */
  url: string;
  headers: Record<string, string>;
  body: Buffer | null;
  /** sent this many times at once (races of identical requests) */
  repeat: number;
  /** what was done to the request, for the summary and the replay */
  notes: string[];
}

export interface FuzzAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** the body as text, at most ANSWER_CAP bytes of it */
  text: string;
  /** the body was longer than the cap: only its start is in `text` */
  truncated?: boolean;
  /** set when no answer arrived (socket error or timeout) */
  error?: string;
}

const ANSWER_CAP = 1 << 20;
const TEN_MB = 10 * 1024 * 1024;

/** The routes with cumulative weights, so that a route is drawn in O(log n). */
export function routeDeck(routes: readonly RouteInfo[]): (rng: Rng) => RouteInfo {
  const cumulative: number[] = [];
  let sum = 0;
  for (const r of routes) cumulative.push((sum += weightOf(r)));
  return (rng) => {
    const x = rng.next() * sum;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cumulative[mid] as number) > x) hi = mid;
      else lo = mid + 1;
    }
    return routes[lo] as RouteInfo;
  };
}

function credential(rng: Rng, w: FuzzWorld, route: RouteInfo, notes: string[], clean: boolean): string | null {
  const right = route.auth === 'admin' ? `Bearer ${w.adminToken}` : route.auth === 'instance' ? `Bearer ${rng.chance(0.9) ? w.a.key : w.b.key}` : null;
  if (clean || rng.chance(0.88)) return right;
  const wrong = rng.pick([
    null,
    'Bearer',
    'Bearer ',
    `bearer ${w.a.key}`,
    `BEARER ${w.adminToken}`,
    `Bearer  ${w.a.key}`,
    `Bearer ${w.a.key} `,
    `Bearer ${w.a.key}x`,
    `Bearer ${w.adminToken}`,
    `Bearer ${w.c.key}`,
    'Bearer wapi_fuzz_AAAAAAAAAAAAAAAAAAAAAAAA',
    `Basic ${Buffer.from(`x:${w.a.key}`).toString('base64')}`,
    `Bearer ${'x'.repeat(4000)}`,
    `Bearer wapi_${junkString(rng).replace(/[^\x20-\x7e]/g, '')}`,
    `Bearer ${encodeURIComponent(w.a.key)}%00`,
  ]);
  notes.push('credential varied');
  return wrong;
}

function pathOf(rng: Rng, w: FuzzWorld, route: RouteInfo, notes: string[], clean: boolean): string {
  return route.path.replace(/:([A-Za-z]+)/g, (_m, name: string) => {
    const plausible = plausibleParam(rng, w, route, name);
    if (clean || rng.chance(0.8)) return encodeURIComponent(plausible);
    const junk = junkParam(rng, plausible);
    notes.push(`param ${name} mutated`);
    return capEncoded(junk.encoded ? junk.value : encodeURIComponent(junk.value), 4_000);
  });
}

/**
 * Node's HTTP parser answers a request line and headers above 16 KB itself (431, no body) before the app sees
 * them; the fuzzer stays below that and cuts long encoded values at a whole escape.
 */
function capEncoded(s: string, max: number): string {
  return s.length <= max ? s : s.slice(0, max).replace(/%[0-9A-Fa-f]?$/, '');
}

function bodyOf(rng: Rng, w: FuzzWorld, route: RouteInfo, notes: string[], clean: boolean): Buffer | null {
  const method = route.method;
  const bodyless = method === 'GET' || method === 'HEAD';
  if (bodyless && (clean || !rng.chance(0.03))) return null;
  if (route.family === 'v2-media' && method === 'POST') return multipart(rng, notes);
  if (clean) return Buffer.from(toJsonText(template(rng, w, route) ?? {}));
  if (rng.chance(0.005)) {
    // near the 10 MB limit, under and over
    const target = TEN_MB + rng.int(-300, 300);
    const head = toJsonText(template(rng, w, route) ?? {}).replace(/}$/, '');
    const filler = Math.max(0, target - head.length - 20);
    notes.push(`body of about ${target} bytes`);
    return Buffer.from(`${head}${head.length > 1 ? ',' : ''}"padding":"${'a'.repeat(filler)}"}`);
  }
  if (rng.chance(0.06)) {
    notes.push('junk body');
    return junkBodyBytes(rng);
  }
  const t = template(rng, w, route) ?? {};
  if (rng.chance(0.35)) return Buffer.from(toJsonText(t));
  notes.push('body mutated');
  return Buffer.from(toJsonText(mutateBody(rng, t)));
}

function multipart(rng: Rng, notes: string[]): Buffer {
  const boundary = 'fuzzboundary';
  const file = rng.chance(0.8) ? Buffer.from('89504e470d0a1a0a', 'hex') : Buffer.alloc(0);
  const parts = [
    `--${boundary}\r\nContent-Disposition: form-data; name="${rng.pick(['file', 'file', 'files', ''])}"; filename="${rng.pick(['a.png', '', '../../etc/passwd', 'é.png', 'a\u0000.png'])}"\r\nContent-Type: image/png\r\n\r\n`,
    file.toString('latin1'),
    `\r\n--${boundary}\r\nContent-Disposition: form-data; name="mimetype"\r\n\r\n${rng.pick(['image/png', 'x', ''])}\r\n`,
    rng.chance(0.9) ? `--${boundary}--\r\n` : '',
  ];
  notes.push('multipart');
  return Buffer.from(parts.join(''), 'latin1');
}

function contentType(rng: Rng, route: RouteInfo, notes: string[]): string | null {
  if (route.family === 'v2-media' && route.method === 'POST' && rng.chance(0.85)) return 'multipart/form-data; boundary=fuzzboundary';
  if (rng.chance(0.85)) return 'application/json';
  notes.push('content-type varied');
  return rng.pick([null, '', 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', 'application/json; charset=utf-8', 'application/JSON', 'application/vnd.fuzz+json', 'multipart/form-data; boundary=x', 'application/json; charset="UTF-8"', 'application/jsonx', '*/*']);
}

function encode(rng: Rng, body: Buffer, headers: Record<string, string>, notes: string[]): Buffer {
  if (!rng.chance(0.07)) return body;
  const kind = rng.int(0, 9);
  const name = ['gzip', 'deflate', 'br', 'gzip', 'deflate', 'br', 'compress', 'gzip, gzip', 'identity', 'x-gzip'][kind] as string;
  headers['content-encoding'] = name;
  notes.push(`content-encoding ${name}${kind >= 3 && kind <= 5 ? ' (bad bytes)' : ''}`);
  if (kind === 0 || kind === 9) return gzipSync(body);
  if (kind === 1) return deflateSync(body);
  if (kind === 2) return brotliCompressSync(body);
  if (kind === 3 && rng.chance(0.3)) return gzipSync(Buffer.from(`{"a":"${' '.repeat(TEN_MB + 100)}"}`)); // inflates past the limit
  if (kind >= 3 && kind <= 5) return Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08]), body]);
  return body;
}

/** Request `index` of the run: a pure function of its generator and the world. */
export function buildRequest(rng: Rng, index: number, w: FuzzWorld, draw: (rng: Rng) => RouteInfo): FuzzRequest {
  const route = draw(rng);
  const notes: string[] = [];
  const headers: Record<string, string> = {};
  // a third of the requests are what a correct client sends, so that handlers run to their end
  const clean = rng.chance(0.33);
  if (clean) notes.push('clean');
  const auth = credential(rng, w, route, notes, clean);
  if (auth !== null) headers.authorization = auth;
  const path = pathOf(rng, w, route, notes, clean);
  const query = queryString(rng, knownQuery(route), clean);
  const url = path.length + query.length > 12_000 ? `${path}?${capEncoded(query.slice(1), 12_000 - path.length)}` : `${path}${query}`;
  let body = bodyOf(rng, w, route, notes, clean);
  if (body) {
    const ct = clean ? (route.family === 'v2-media' ? 'multipart/form-data; boundary=fuzzboundary' : 'application/json') : contentType(rng, route, notes);
    if (ct !== null) headers['content-type'] = ct;
    if (!clean) body = encode(rng, body, headers, notes);
    if (!clean && rng.chance(0.05)) notes.push('chunked');
  }
  if (!clean && rng.chance(0.08)) {
    headers['x-idempotency-key'] = rng.pick(['fuzz-key-00000001', 'short', 'x'.repeat(129), 'a b c d e f g h', 'fuzz/key/0000001', `\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9`, '', 'fuzz-key-00000002']);
    notes.push('idempotency header');
  }
  // another method on the route's path (405 in the envelope, or another route of the same path)
  const method = !clean && rng.chance(0.03) ? rng.pick(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'PROPFIND', 'TRACE']) : route.method;
  if (method !== route.method) notes.push(`method ${method}`);
  const repeat = rng.chance(0.02) ? rng.int(2, 5) : 1;
  if (repeat > 1) notes.push(`sent ${repeat} times at once`);
  return { index, route, method, url, headers, body: method === 'HEAD' || method === 'TRACE' ? null : body, repeat, notes };
}

const agentCache = new Map<number, http.Agent>();

export function send(base: string, req: FuzzRequest, timeoutMs: number, concurrency: number): Promise<FuzzAnswer> {
  let agent = agentCache.get(concurrency);
  if (!agent) agentCache.set(concurrency, (agent = new http.Agent({ keepAlive: true, maxSockets: concurrency })));
  const u = new URL(base);
  return new Promise((resolve) => {
    const headers: Record<string, string | number> = { ...req.headers };
    // a few bodies go out chunked (no Content-Length), as streaming clients send them
    if (req.body) {
      if (req.notes.includes('chunked')) headers['transfer-encoding'] = 'chunked';
      else headers['content-length'] = req.body.length;
    }
    const r = http.request({ host: u.hostname, port: u.port, method: req.method, path: req.url, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8'), ...(size > ANSWER_CAP ? { truncated: true } : {}) });
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= ANSWER_CAP) chunks.push(c);
        // an event stream never ends on its own: its first event is the answer
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          res.destroy();
          done();
        }
      });
      res.on('end', done);
      res.on('error', (err) => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: '', error: String(err) }));
    });
    r.setTimeout(timeoutMs, () => r.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    r.on('error', (err) => resolve({ status: 0, headers: {}, text: '', error: String(err) }));
    r.end(req.body ?? undefined);
  });
}

/**
 * The invariants every fuzz answer must keep (SPEC.md "Response envelope", "Errors", "v1 send outcomes"):
 * no 5xx for a client's input except the server-side conditions SPEC.md names (and v1's frozen answers on its
 * send routes), every answer JSON in the envelope (binary downloads, 204 and the debug event stream aside), no
 * internals (stack traces, file paths, SQL, driver or runtime error texts), no known secret echoed.
 */
import type { FuzzAnswer, FuzzRequest } from './fuzz-request.js';

/** 5xx a client may see, each only with its codes (SPEC.md "Errors"). */
const SERVER_SIDE: Record<number, readonly string[]> = {
  502: ['INSTANCE_UNREACHABLE'],
  503: ['INSTANCE_OFFLINE', 'QUEUE_STORE_UNAVAILABLE', 'QUEUE_PAUSED'],
  504: ['INSTANCE_TIMEOUT', 'QUEUE_WAIT_TIMEOUT'],
  507: ['MEDIA_STORE_UNAVAILABLE'],
};

/** v1 keeps its frozen shapes: `{success:false, error}` with or without a code. */
const V1_PATHS = new Set(['/api/send-message', '/api/send-media', '/api/send-bulk', '/api/check-number/:phone', '/api/status', '/api/qr']);
const V1_SEND = /^\/api\/send-(message|media|bulk)$/;

const INTERNALS: Array<[RegExp, string]> = [
  [/\n\s+at [^\n]*(\(|:\d+:\d+)/, 'stack trace'],
  [/\/work\/|node_modules|file:\/\/|\.ts:\d+|\.js:\d+/, 'file path'],
  [/\b(TypeError|ReferenceError|RangeError|SyntaxError|URIError)\b/, 'JavaScript error name'],
  [/Cannot read propert|is not a function|is not iterable|undefined is not|Maximum call stack/, 'runtime error text'],
  [/\b(SELECT\s.+\sFROM|INSERT INTO|UPDATE\s+\w+\s+SET|DELETE FROM)\b/i, 'SQL text'],
  [/violates (unique|foreign key|check|not-null) constraint|invalid input syntax for|out of range for type|unsupported Unicode escape|duplicate key value|relation "\w+"|column "\w+"|syntax error at or near|current transaction is aborted/, 'PostgreSQL error text'],
];

export interface Violation {
  kind: string;
  detail: string;
}

function isBinaryDownload(req: FuzzRequest, a: FuzzAnswer): boolean {
  const ct = String(a.headers['content-type'] ?? '');
  return a.status === 200 && /\/media(\/|$)/.test(req.route.path) && req.route.method === 'GET' && !ct.startsWith('application/json');
}

function isEventStream(req: FuzzRequest, a: FuzzAnswer): boolean {
  return a.status === 200 && (req.route.path === '/debug/actors/stream' || req.route.path === '/console/events') && String(a.headers['content-type'] ?? '').startsWith('text/event-stream');
}

/**
 * Documents that are not API answers: the API reference (a 200 of /openapi.json is the OpenAPI document
 * itself, /docs with its script the docs page) and /metrics (Prometheus' text format); their refusals are in
 * the envelope like any other.
 */
function isReferenceDocument(req: FuzzRequest, a: FuzzAnswer): boolean {
  // GET /metrics answers Prometheus' text format
  if (a.status === 200 && req.route.path === '/metrics') return String(a.headers['content-type'] ?? '').startsWith('text/plain');
  // the operator console's page, style and script
  if (a.status === 200 && req.route.family === 'console' && req.route.method === 'GET' && req.route.path !== '/console/session') {
    return /^(text\/html|text\/css|application\/javascript)/.test(String(a.headers['content-type'] ?? ''));
  }
  if (a.status !== 200 || req.route.family !== 'openapi') return false;
  const ct = String(a.headers['content-type'] ?? '');
  if (req.route.path === '/openapi.json') return ct.startsWith('application/json') && a.text.startsWith('{"openapi":"3.1');
  return ct.startsWith('text/html') || ct.includes('javascript');
}

/** Everything wrong with one answer (empty when it keeps every invariant). */
export function checkAnswer(req: FuzzRequest, a: FuzzAnswer, secrets: readonly string[]): Violation[] {
  const out: Violation[] = [];
  if (a.error !== undefined) return [{ kind: 'no answer', detail: a.error }];
  const v1 = V1_PATHS.has(req.route.path);
  for (const s of secrets) if (s && a.text.includes(s)) out.push({ kind: 'secret echoed', detail: `${s.slice(0, 6)}… in the answer` });
  // a published bundle names its own build paths; it is a static file of a package, not an error text
  if (isReferenceDocument(req, a)) return out;
  for (const [re, what] of INTERNALS) if (re.test(a.text)) out.push({ kind: 'internals', detail: `${what}: ${excerpt(a.text, re)}` });
  if (req.method === 'HEAD') {
    if (a.status >= 500) out.push({ kind: `${a.status}`, detail: 'HEAD answered with a 5xx' });
    return out;
  }
  if (a.status === 204 || isBinaryDownload(req, a) || isEventStream(req, a) || isReferenceDocument(req, a)) return out;

  let body: unknown;
  const ct = String(a.headers['content-type'] ?? '');
  if (!ct.startsWith('application/json')) out.push({ kind: 'not JSON', detail: `${a.status} content-type ${ct || '(none)'}: ${a.text.slice(0, 120)}` });
  // an answer above the read cap (a long sandbox ledger) is checked by its start only
  if (a.truncated) {
    if (!a.text.startsWith('{"success":')) out.push({ kind: 'envelope', detail: `long answer not in the envelope: ${a.text.slice(0, 120)}` });
    if (a.status >= 500) out.push({ kind: `${a.status}`, detail: a.text.slice(0, 160) });
    return out;
  }
  try {
    body = JSON.parse(a.text);
  } catch {
    out.push({ kind: 'not JSON', detail: `${a.status}: ${a.text.slice(0, 120)}` });
    return out;
  }
  const b = (body ?? {}) as Record<string, unknown>;
  const success = b.success;
  const code = typeof b.code === 'string' ? b.code : undefined;
  const v1Frozen = v1 && success === false && typeof b.error === 'string';
  if (success === true) {
    // SPEC.md "Health object": the health object is itself the body
    if (!('data' in b) && req.route.path !== '/health') out.push({ kind: 'envelope', detail: 'success without data' });
    if (a.status >= 400) out.push({ kind: 'envelope', detail: `success:true with ${a.status}` });
  } else if (success === false) {
    if (typeof b.error !== 'string') out.push({ kind: 'envelope', detail: 'error is not a string' });
    if (!v1Frozen && (code === undefined || !('data' in b))) out.push({ kind: 'envelope', detail: `error without code or data: ${a.text.slice(0, 120)}` });
    if (a.status < 400) out.push({ kind: 'envelope', detail: `success:false with ${a.status}` });
  } else out.push({ kind: 'envelope', detail: `no success field: ${a.text.slice(0, 120)}` });

  if (a.status >= 500) {
    const allowed = SERVER_SIDE[a.status];
    const named = allowed !== undefined && code !== undefined && allowed.includes(code);
    const v1Send = V1_SEND.test(req.route.path) && v1Frozen && [500, 503, 504].includes(a.status) && !/internal error/i.test(String(b.error));
    if (!named && !v1Send) out.push({ kind: `${a.status}`, detail: `${code ?? '(no code)'}: ${String(b.error ?? a.text).slice(0, 160)}` });
  }
  return out;
}

function excerpt(text: string, re: RegExp): string {
  const m = re.exec(text);
  const at = m?.index ?? 0;
  return JSON.stringify(text.slice(Math.max(0, at - 60), at + 80));
}

/** The request as a shell command, bodies above 2 KB described instead of written out. */
export function replayLine(base: string, req: FuzzRequest): string {
  const h = Object.entries(req.headers).map(([k, v]) => `-H ${JSON.stringify(`${k}: ${v.length > 200 ? `${v.slice(0, 200)}…(${v.length} chars)` : v}`)}`);
  let body = '';
  if (req.body) {
    const printable = req.body.length <= 2048 && !req.headers['content-encoding'] && /^[\x09\x0a\x0d\x20-\x7e\u00a0-\uffff]*$/.test(req.body.toString('utf8'));
    body = printable ? ` --data-binary ${JSON.stringify(req.body.toString('utf8'))}` : ` --data-binary @<${req.body.length} bytes: ${req.notes.join(', ')}>`;
  }
  const url = req.url.length > 400 ? `${req.url.slice(0, 400)}…(${req.url.length} chars)` : req.url;
  return `curl -X ${req.method} ${h.join(' ')}${body} ${JSON.stringify(`${base}${url}`)}`;
}

/**
 * How `mgw` talks to a running gateway: its address and the operator token from the environment, one call to
 * the operator API (/admin/v1) answering the envelope, and the helpers every verb answers with: a refusal
 * prints the envelope and exits 1, a success prints a table or text (or the envelope with `--json`).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { BEARER_TOKEN_RULE, BEARER_TOKEN_TEXT, ConfigError, loadSettings, type Config } from '../config.js';
import { UsageError, type Parsed } from './args.js';
import { maskWebhookUrl } from '../webhooks/config.js';

/**
 * A variable `mgw` reads that the gateway reads too, through the gateway's own checks (src/config.ts
 * loadSettings): the same default, the same values accepted, and for a bad one a usage error (exit 2, as the
 * gateway's start exits 2) naming the variable and what it accepts, never its value (ADMIN_TOKEN is a secret).
 * Before, `mgw` built its address from PORT as written, so PORT="80 ", PORT=80/x and an empty PORT went to port
 * 80 (the gateway refuses the first two and listens on 3000 for the last), and an ADMIN_TOKEN a bearer token
 * cannot hold was sent as it was: one with a line break was printed back whole in fetch's error.
 */
function setting<K extends 'PORT' | 'HOST' | 'DATA_DIR' | 'ADMIN_TOKEN'>(key: K, env: NodeJS.ProcessEnv, hint = ''): Config[K] {
  try {
    return loadSettings([key], env)[key];
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(`mgw: ${err.variable} ${err.reason}${hint}`);
    throw err;
  }
}

/** What a usage error about the gateway's address ends with. */
const OR_MGW_URL = " (or set MGW_URL to the gateway's address)";
/** Addresses a server listens on for every interface: the gateway is reached on loopback then. */
const EVERY_INTERFACE = new Set(['0.0.0.0', '::', '[::]']);
/**
 * A host name (labels of letters, digits and `-`), an IPv4 address, or an IPv6 literal with or without its
 * brackets: what mgw puts between `http://` and `:$PORT`. Anything else could make the URL another one (found
 * from the outside: HOST='127.0.0.1/evil?' sent the admin token to port 80 under /evil, and HOST='a@b' made `a`
 * the URL's user).
 */
const REACHABLE_HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?|\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$/;

/**
 * The gateway's address: MGW_URL, else http://$HOST:$PORT, with HOST and PORT read as the gateway reads them (not
 * at all when MGW_URL is set): the address the gateway listens on in the same environment. A HOST of every
 * interface (`0.0.0.0`, `::`) is reached on 127.0.0.1; before, `mgw` always went to 127.0.0.1, so a gateway
 * listening on one other address of the machine could not be reached without MGW_URL. A usage error names the
 * variable without echoing it: an address with a user or password is refused (the token goes as a bearer token,
 * and the password was printed back in the error). Found from the outside, as was `PORT=abc` answering only
 * "Invalid URL". PORT=0 lets the gateway choose its port, which only its start banner tells: MGW_URL is needed
 * then. MGW_URL may end in a path (a gateway behind a proxy under a prefix): the routes go below it.
 */
export function gatewayUrl(env: NodeJS.ProcessEnv = process.env): URL {
  const given = env.MGW_URL || undefined;
  if (given === undefined) {
    const port = setting('PORT', env, OR_MGW_URL);
    if (port === 0) throw new UsageError('mgw: PORT is 0, a port the gateway chooses at its start: set MGW_URL to the address it printed');
    const host = setting('HOST', env, OR_MGW_URL);
    const refused = () => new UsageError(`mgw: HOST must be a host name or an IP address for mgw to reach the gateway there${OR_MGW_URL}`);
    if (!EVERY_INTERFACE.has(host) && !REACHABLE_HOST.test(host)) throw refused();
    const reached = EVERY_INTERFACE.has(host) ? '127.0.0.1' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
    let url: URL;
    try {
      url = new URL(`http://${reached}:${port}`);
    } catch {
      throw refused();
    }
    // the URL is the host and port given, nothing else (a path, a user), whatever the parser made of the text
    if (url.username !== '' || url.password !== '' || url.pathname !== '/' || url.search !== '' || url.hash !== '') throw refused();
    return url;
  }
  // taken as written, as the gateway takes its URLs (src/config.ts): URL would drop the blanks silently
  if (given.trim() !== '' && given !== given.trim()) throw new UsageError('mgw: MGW_URL must be an http:// or https:// address, without blanks around it');
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new UsageError('mgw: MGW_URL is not a URL (e.g. http://127.0.0.1:3000)');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('mgw: MGW_URL must be an http:// or https:// address');
  if (url.username !== '' || url.password !== '') {
    throw new UsageError('mgw: MGW_URL must not carry a user or password (the admin token is sent as a bearer token)');
  }
  return url;
}

/**
 * ADMIN_TOKEN (checked as the gateway checks it), else the token the gateway wrote to $DATA_DIR/admin-token. A
 * file whose token a bearer token cannot hold is refused as the gateway's start refuses it, without its text.
 */
async function adminToken(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const given = setting('ADMIN_TOKEN', env);
  if (given !== undefined) return given;
  const file = path.join(setting('DATA_DIR', env), 'admin-token');
  let token: string;
  try {
    token = (await readFile(file, 'utf8')).trim();
  } catch {
    throw new Error(`no ADMIN_TOKEN set and ${file} not readable`);
  }
  if (!BEARER_TOKEN_RULE.test(token)) throw new Error(`the admin token in ${file} ${BEARER_TOKEN_TEXT}`);
  return token;
}

/**
 * The gateway's address as a message names it: scheme, host, port and path (a prefix of a gateway behind a
 * proxy), without a trailing slash. Never a user or password (the origin has none; MGW_URL may not carry them
 * anyway), nor a query or fragment of MGW_URL, which no route is sent with; a segment of the path that reads as
 * a token (a proxy whose prefix is its secret) is shown `***`, as a webhook receiver's is (maskWebhookUrl).
 */
export function shownBase(base: URL): string {
  return maskWebhookUrl(`${base.origin}${base.pathname}`).replace(/\/+$/, '');
}

/**
 * How long mgw waits for the gateway's answer, its body included: every route answers within its own deadlines
 * (30 s at most); a peer that accepts the connection and never answers held mgw for 300 s (undici's own), which
 * then said it could not reach the gateway (found from the outside).
 */
export const ANSWER_WITHIN_MS = 60_000;

/** MGW_TIMEOUT_MS (ms, 1 to 3,600,000), else ANSWER_WITHIN_MS; a bad value is a usage error naming it. */
export function answerWithinMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.MGW_TIMEOUT_MS;
  if (raw === undefined || raw === '') return ANSWER_WITHIN_MS;
  const ms = /^\d{1,7}$/.test(raw) ? Number(raw) : NaN;
  if (!(ms >= 1 && ms <= 3_600_000)) throw new UsageError('mgw: MGW_TIMEOUT_MS must be a whole number of milliseconds from 1 to 3600000');
  return ms;
}

/** Failures before a request reaches the gateway: nothing was sent, nothing done. */
const CONNECT_FAILURES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT', 'ERR_TLS_CERT_ALTNAME_INVALID', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'CERT_HAS_EXPIRED']);

/**
 * fetch of a gateway route (`/admin/v1/…`, `/health`) below the gateway's address, with a connection failure
 * named by that address, its path included (and its cause): the origin alone did not tell an operator whose
 * MGW_URL has a wrong prefix which address was tried.
 */
export async function request(route: string, init: RequestInit, base: URL = gatewayUrl()): Promise<Response> {
  const within = answerWithinMs();
  try {
    // a redirect is not the gateway's answer (found from the outside: a POST followed as a GET printed a list and
    // exited 0, nothing created; a 307 to another origin carried a webhook's secret there): envelopeOf refuses it
    return await fetch(routeUrl(route, base), { ...init, redirect: 'manual', signal: AbortSignal.timeout(within) });
  } catch (err) {
    if (err instanceof Error && err.name === 'TimeoutError') {
      throw new Error(`the gateway at ${shownBase(base)} did not answer ${init.method ?? 'GET'} ${route} within ${within} ms (MGW_TIMEOUT_MS): what it did is not known; look before trying again`);
    }
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
    const code = typeof cause === 'object' && cause !== null && 'code' in cause && typeof cause.code === 'string' ? cause.code : null;
    const why = code ?? (cause instanceof Error ? cause.message : String(cause));
    // the connection broke once the request was on its way (not refused, not unresolved): the gateway may have
    // acted (found from the outside: a rotate-key whose answer was lost said "cannot reach", the old key revoked)
    if (code !== null && !CONNECT_FAILURES.has(code)) {
      throw new Error(`the connection to the gateway at ${shownBase(base)} broke before its answer to ${init.method ?? 'GET'} ${route} (${why}): what it did is not known; look before trying again`);
    }
    throw new Error(`cannot reach the gateway at ${shownBase(base)} (${why}); is it running? set MGW_URL to its address`);
  }
}

export interface Envelope {
  ok: boolean;
  body: unknown;
}

/**
 * The URL of a gateway route (`/admin/v1/…`, `/health`) below the gateway's address, its path included: a route
 * resolved against MGW_URL alone dropped the path of a gateway behind a proxy (`https://ops.example/mgw`).
 */
export function routeUrl(route: string, base: URL = gatewayUrl()): URL {
  return new URL(`${base.pathname.replace(/\/+$/, '')}${route}`, base.origin);
}

export async function call(method: string, route: string, body?: unknown): Promise<Envelope> {
  const base = gatewayUrl(); // an address error first, as before, then the token's
  const res = await request(route, {
    method,
    headers: { authorization: `Bearer ${await adminToken()}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  }, base);
  return { ok: res.ok, body: await envelopeOf(res, `${method} ${route}`, base) };
}

/**
 * The gateway's JSON envelope (an object with a boolean `success`) of an answer; anything else (a proxy's HTML page,
 * a body cut short, another server's JSON) is an error naming what came: found from the outside, an answer of
 * another server, or a `create` whose answer was cut after the instance was made, exited 0 as if it had worked.
 */
export async function envelopeOf(res: Response, what: string, base: URL): Promise<Record<string, unknown>> {
  const text = await res.text().catch((err: unknown) => {
    throw new Error(`the answer to ${what} from ${shownBase(base)} was cut short (HTTP ${res.status}, ${err instanceof Error ? err.message : String(err)}): what the gateway did is not known; look before trying again`);
  });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (!isRecord(json) || typeof json.success !== 'boolean') {
    const type = res.headers.get('content-type')?.split(';')[0]?.trim();
    throw new Error(`the answer to ${what} from ${shownBase(base)} is not the gateway's (HTTP ${res.status}${type ? `, ${type}` : ''}${json === undefined ? ', not JSON' : ', no envelope'}): is MGW_URL the gateway's address? what it did is not known`);
  }
  return json;
}

export const print = (v: unknown) => console.log(JSON.stringify(v, null, 2));
export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A refusal: the envelope on stdout, exit 1. Otherwise `show` the data (or the envelope with --json). */
export function answer(e: Envelope, p: Parsed, show?: (data: unknown) => string): void {
  // a refusal is the envelope's to say as much as the status's (a 200 with success:false exited 0)
  if (!e.ok || (isRecord(e.body) && e.body.success === false)) {
    process.exitCode = 1;
    print(e.body);
    return;
  }
  if (p.flags.json === true || !show) return print(e.body);
  process.stdout.write(show(isRecord(e.body) ? e.body.data : undefined));
}

/** The `items` of a list answer, each a record. */
export const items = (data: unknown): Record<string, unknown>[] =>
  (isRecord(data) && Array.isArray(data.items) ? data.items : []).filter(isRecord);
export const str = (v: unknown): string | null => (v === null || v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v));

export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${what} is not valid JSON`);
  }
}

/** The operator route of one instance (and below it). */
export const inst = (id: string | undefined, rest = ''): string => `/admin/v1/instances/${encodeURIComponent(id ?? '')}${rest}`;
export const arg = (p: Parsed, name: string): string => p.args[name] ?? '';

/** Ask before a delete; without a terminal only `--yes` (or `-y`) goes ahead. */
export async function confirm(p: Parsed, verb: string, what: string): Promise<void> {
  if (p.flags.yes === true || p.flags.y === true) return;
  if (!process.stdin.isTTY) throw new UsageError(`mgw ${verb}: refusing to ${what} without confirmation: stdin is not a terminal; pass --yes`);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const reply = (await rl.question(`${what}? type 'yes' to go ahead: `)).trim().toLowerCase();
    if (reply !== 'yes' && reply !== 'y') throw new UsageError(`mgw ${verb}: not confirmed, nothing deleted`);
  } finally {
    rl.close();
  }
}

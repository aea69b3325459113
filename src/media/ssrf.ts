/**
 * SSRF-safe URL handling for URLs the gateway fetches on someone's behalf (`mediaUrl`, webhook targets).
 *
 * Two checks, because one is not enough:
 * - `assertPublicUrl`, at acceptance: scheme, IP literals and the host's current DNS answers. It gives the
 *   caller an early 400 but proves nothing about later: DNS may answer differently a second later (rebinding).
 * - `safeFetch`, at dispatch (and, `headersOnly`, for the acceptance probe of probe.ts): every hop's URL passes
 *   `checkUrlSyntax` (scheme, IP literals), and names are resolved by the agent's checked lookup at connect
 *   time (agent.ts), so the address connected to is the one checked. Redirects are followed by hand, each hop
 *   re-checked, at most `maxRedirects`; a refused redirect target says so ("redirects to …", `redirected`).
 *
 * Refusals are `400 VALIDATION_FAILED` naming the field (`mediaUrl` or `url`). Error texts never contain the
 * URL: it may carry credentials or a signed query string.
 */
import fetch, { type Response } from 'node-fetch';
import { Readable } from 'node:stream';
import { DomainError } from '../errors.js';
import { systemClock, type Clock } from '../clock.js';
import { ipLiteralOf, type AddressClass } from './address.js';
import {
  createSafeAgent,
  describeClass,
  LOOKUP_DEADLINE_MS,
  LOOKUP_TIMEOUT_CODE,
  refusalOf,
  resolverOf,
  SSRF_REFUSED_CODE,
  type AddressPolicy,
  type ResolvedAddress,
  type Resolver,
  type SafeAgent,
} from './agent.js';
import { readCapped, type ByteSource } from './capped.js';
import { mimeEssence } from './mimetype.js';
import { percentDecoded } from '../percent.js';

export { createSafeAgent, createCheckedLookup, setNetworkDefaults, systemResolver } from './agent.js';
export type { AddressPolicy, Resolver, ResolvedAddress, SafeAgent, SafeAgentOptions } from './agent.js';

export interface UrlCheckOptions extends AddressPolicy {
  resolver?: Resolver;
  /** the request field named in errors (`mediaUrl`, `url`); default `mediaUrl` */
  field?: string;
}

export function urlRefused(field: string, reason: string, data: Record<string, unknown> = {}): DomainError {
  return new DomainError('VALIDATION_FAILED', `${field} ${reason}`, { field, ...data });
}

/** `redirected`: the refused target is a redirect's, not the URL the caller gave. */
const nonPublic = (field: string, c: AddressClass | null, redirected = false) =>
  urlRefused(
    field,
    `${redirected ? 'redirects to a non-public address' : 'must point to a public address'}${c ? ` (target is ${describeClass(c)})` : ''}`,
    { reason: c?.kind ?? 'non_public', ...(redirected ? { redirected: true } : {}) },
  );

const LOCAL_NAMES = /^(localhost|localhost\.localdomain|ip6-localhost|ip6-loopback)$|\.localhost$/;


/**
 * What can be judged without DNS: parseable, http(s), has a host, and an IP-literal host is public. WHATWG
 * parsing has already turned 2130706433, 0x7f.0.0.1, 0177.0.0.1 and 127.1 into 127.0.0.1.
 */
export function checkUrlSyntax(raw: string, opts: UrlCheckOptions = {}): URL {
  const field = opts.field ?? 'mediaUrl';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw urlRefused(field, 'is not a valid URL', { reason: 'invalid_url' });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw urlRefused(field, 'must use http or https', { reason: 'scheme' });
  }
  // credentials go out decoded (Basic authorization): a `%` not followed by two hex digits could never be sent
  if (percentDecoded(url.username) === null || percentDecoded(url.password) === null) {
    throw urlRefused(field, 'has a user name or password that is not valid percent-encoding (write % as %25)', { reason: 'invalid_url' });
  }
  // `localhost..` is `localhost` to many resolvers: every trailing dot goes, an empty label inside is refused
  const host = url.hostname.toLowerCase().replace(/\.+$/, '');
  if (host === '') throw urlRefused(field, 'has no host', { reason: 'invalid_url' });
  if (host.includes('..')) throw urlRefused(field, 'has an empty label in its host name', { reason: 'invalid_url' });
  const literal = ipLiteralOf(host);
  if (literal !== null) {
    const refused = refusalOf(literal, opts);
    if (refused) throw nonPublic(field, refused);
  } else if (!opts.allowPrivate && LOCAL_NAMES.test(host)) {
    throw nonPublic(field, { kind: 'loopback', public: false, family: null });
  }
  return url;
}

/**
 * Acceptance-time check: syntax, and every address the host resolves to right now is public. Returns the
 * parsed URL. Passing it does not make a later fetch safe; `safeFetch` checks again at connect time.
 */
export async function assertPublicUrl(raw: string, opts: UrlCheckOptions = {}): Promise<URL> {
  const field = opts.field ?? 'mediaUrl';
  const url = checkUrlSyntax(raw, opts);
  if (opts.allowPrivate || ipLiteralOf(url.hostname) !== null) return url;
  let answers: ResolvedAddress[];
  try {
    answers = await resolverOf(opts.resolver)(url.hostname);
  } catch (err) {
    if ((err as { code?: unknown }).code === LOOKUP_TIMEOUT_CODE) throw urlRefused(field, `host did not resolve within ${LOOKUP_DEADLINE_MS} ms`, { reason: 'unresolvable' });
    answers = [];
  }
  if (answers.length === 0) throw urlRefused(field, 'host does not resolve', { reason: 'unresolvable' });
  for (const a of answers) {
    const refused = refusalOf(a.address, opts);
    if (refused) throw nonPublic(field, refused);
  }
  return url;
}

/** A redirect's target, judged like a given URL but named as a redirect's in the refusal. */
function checkRedirectTarget(next: URL, opts: UrlCheckOptions): URL {
  try {
    return checkUrlSyntax(next.href, opts);
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    const field = opts.field ?? 'mediaUrl';
    const reason = typeof err.data.reason === 'string' ? err.data.reason : 'invalid_redirect';
    const said = err.message.startsWith(`${field} `) ? err.message.slice(field.length + 1) : err.message;
    const PUBLIC = 'must point to a public address';
    const text =
      reason === 'scheme'
        ? 'redirects to a URL that is not http or https'
        : said.startsWith(PUBLIC)
          ? `redirects to a non-public address${said.slice(PUBLIC.length)}`
          : `redirects to a URL that ${said}`;
    throw urlRefused(field, text, { ...err.data, redirected: true });
  }
}

export interface SafeFetchOptions extends UrlCheckOptions {
  /** body ceiling: a larger Content-Length is refused unread, a body that grows past it is cut */
  maxBytes: number;
  /** default 3; the redirect after the last allowed one is refused */
  maxRedirects?: number;
  timeoutMs: number;
  signal?: AbortSignal;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** a shared agent (webhook delivery, keep-alive); it must carry the same policy. Default: one per call */
  agent?: SafeAgent;
  clock?: Clock;
  /** stop after the final answer's headers: its body is dropped unread (a probe); `body` is then empty */
  headersOnly?: boolean;
}

export interface SafeFetchResult {
  status: number;
  /** lower-case names */
  headers: Record<string, string>;
  body: Buffer;
  /** the last hop's URL, without credentials */
  finalUrl: string;
  /** Content-Type without parameters, lower-case; null when absent */
  mimetype: string | null;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const SENSITIVE = ['authorization', 'cookie', 'cookie2', 'proxy-authorization'];

/** Credentials move from the URL into a header: node-fetch refuses them in URLs and echoes URLs in errors. */
function splitCredentials(url: URL): { target: URL; authorization: string | null } {
  if (url.username === '' && url.password === '') return { target: url, authorization: null };
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  const target = new URL(url.href);
  target.username = '';
  target.password = '';
  return { target, authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` };
}

/** The answer's `type/subtype` (mimetype.ts), null when it names none. */
const essence = (contentType: string | null) => (contentType === null ? null : mimeEssence(contentType) || null);

function discard(res: Response): void {
  if (res.body instanceof Readable) res.body.destroy();
}

/**
 * Fetch a URL with the SSRF rules above, a byte ceiling and a deadline. Non-2xx answers are returned, not
 * thrown; refusals, unreachable hosts, timeouts and oversized bodies throw `400 VALIDATION_FAILED`.
 */
export async function safeFetch(raw: string, opts: SafeFetchOptions): Promise<SafeFetchResult> {
  const field = opts.field ?? 'mediaUrl';
  const maxRedirects = opts.maxRedirects ?? 3;
  const clock = opts.clock ?? systemClock;
  let refused: AddressClass | null = null;
  let redirected = false;
  const agent =
    opts.agent ??
    createSafeAgent({
      resolver: opts.resolver,
      allowPrivate: opts.allowPrivate,
      allowAddress: opts.allowAddress,
      keepAlive: false,
      onRefused: (c) => (refused = c),
    });
  const controller = new AbortController();
  let timedOut = false;
  const timer = clock.setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, opts.timeoutMs);
  const onCallerAbort = () => controller.abort();
  if (opts.signal?.aborted) controller.abort();
  opts.signal?.addEventListener('abort', onCallerAbort, { once: true });

  const translate = (err: unknown): unknown => {
    if (err instanceof DomainError) return err;
    if (opts.signal?.aborted) return opts.signal.reason ?? err;
    if (timedOut) return urlRefused(field, `did not answer within ${opts.timeoutMs} ms`, { reason: 'timeout' });
    const code = err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : null;
    if (code === SSRF_REFUSED_CODE) return nonPublic(field, refused, redirected);
    return urlRefused(field, `could not be fetched${code ? ` (${code})` : ''}`, { reason: 'unreachable', ...(code ? { errorCode: code } : {}) });
  };

  try {
    let url = checkUrlSyntax(raw, opts);
    let method = (opts.method ?? 'GET').toUpperCase();
    let body = opts.body;
    let headers: Record<string, string> = { ...opts.headers };
    for (let hop = 0; ; hop++) {
      const { target, authorization } = splitCredentials(url);
      const sent: Record<string, string> = { ...headers };
      if (authorization) sent.authorization = authorization;
      const res = await fetch(target.href, {
        method,
        headers: sent,
        body,
        redirect: 'manual',
        compress: false,
        agent: (u: URL) => agent.forUrl(u),
        signal: controller.signal,
      });

      const location = REDIRECTS.has(res.status) ? res.headers.get('location') : null;
      if (location !== null) {
        discard(res);
        if (hop >= maxRedirects) {
          throw urlRefused(field, `redirects more than ${maxRedirects} times`, { reason: 'too_many_redirects' });
        }
        let next: URL;
        try {
          next = new URL(location, target);
        } catch {
          throw urlRefused(field, 'redirects to an invalid URL', { reason: 'invalid_redirect' });
        }
        next = checkRedirectTarget(next, opts);
        redirected = true;
        if (next.origin !== target.origin) {
          headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !SENSITIVE.includes(k.toLowerCase())));
        }
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
          if (method !== 'HEAD') method = 'GET';
          body = undefined;
          headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !/^content-/i.test(k)));
        }
        url = next;
        continue;
      }

      const tooLarge = (declared = '') =>
        urlRefused(field, `response exceeds ${opts.maxBytes} bytes${declared}`, { reason: 'too_large', maxBytes: opts.maxBytes });
      const declared = res.headers.get('content-length');
      if (declared !== null && Number(declared) > opts.maxBytes) {
        discard(res);
        throw tooLarge(` (Content-Length: ${Number(declared)})`);
      }
      if (opts.headersOnly) discard(res);
      const bytes = res.body && !opts.headersOnly ? await readCapped(res.body as ByteSource, opts.maxBytes, () => tooLarge()) : Buffer.alloc(0);
      return {
        status: res.status,
        headers: Object.fromEntries(res.headers.entries()),
        body: bytes,
        finalUrl: target.href,
        mimetype: essence(res.headers.get('content-type')),
      };
    }
  } catch (err) {
    controller.abort();
    throw translate(err);
  } finally {
    clock.clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onCallerAbort);
    if (!opts.agent) agent.destroy();
  }
}

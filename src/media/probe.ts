/**
 * The acceptance-time probe of a `mediaUrl` (SPEC.md "Media endpoints": validated when the request is accepted
 * and again at dispatch). It asks the target the question dispatch will ask, without taking the bytes:
 *
 * - a HEAD through `safeFetch` (every hop's connected address checked by the agent's lookup, so no connection
 *   to a non-public address is ever opened; at most 3 redirects, each target checked);
 * - when HEAD answers 4xx/5xx, the same question again as a GET whose body is never read (dropped after the
 *   headers): servers that do not implement HEAD answer 405/501, and URLs signed for GET only (presigned
 *   object-store links) answer 403 to a HEAD. The GET's answer is the verdict, as it is the one dispatch gets;
 * - refused with `400 VALIDATION_FAILED` (`data.field` = the field, `data.reason` says which rule): a redirect
 *   to a non-public target or to another scheme, more than 3 hops, a declared `Content-Length` above the cap,
 *   an answer other than 2xx (`data.status`), and a target that cannot be reached within the deadline
 *   ("could not be reached: …"): a send whose media cannot be fetched now would fail at dispatch anyway.
 *
 * The deadline (10 s by default, well inside the send routes' 60 s) is one for the whole probe, HEAD and GET
 * together, in real time: it measures sockets, and a simulated runtime clock must not decide it (tests inject
 * their own clock here). Passing the probe proves nothing about later: dispatch fetches with its own checks.
 */
import { systemClock, type Clock } from '../clock.js';
import { DomainError } from '../errors.js';
import { safeFetch, urlRefused, type UrlCheckOptions } from './ssrf.js';

export const PROBE_TIMEOUT_MS = 10_000;

export interface ProbeOptions extends UrlCheckOptions {
  /** a declared Content-Length above this is refused (MEDIA_MAX_BYTES) */
  maxBytes: number;
  /** default 3 */
  maxRedirects?: number;
  /** default PROBE_TIMEOUT_MS, for HEAD and the GET fallback together */
  timeoutMs?: number;
  /** default: real time */
  clock?: Clock;
}

export interface ProbeResult {
  /** the request that gave the verdict */
  method: 'HEAD' | 'GET';
  status: number;
  /** the declared length of the final answer, when it declared one */
  contentLength: number | null;
  mimetype: string | null;
}

/** Friendly words for the socket-level failures a caller can act on; anything else is named by its code. */
const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: 'the connection was refused',
  ECONNRESET: 'the connection was reset',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
  ENOTFOUND: 'the host does not resolve',
  ETIMEDOUT: 'the connection timed out',
  EPIPE: 'the connection was closed',
};

function describeUnreachable(code: string | null): string {
  if (code === null) return 'the connection failed';
  if (code.startsWith('HPE_')) return `the answer is not valid HTTP (${code})`;
  return UNREACHABLE[code] ? `${UNREACHABLE[code]} (${code})` : `the connection failed (${code})`;
}

/** safeFetch's "could not be fetched" and "did not answer" become "could not be reached: …" at acceptance. */
function asReachability(err: unknown, field: string, timeoutMs: number): unknown {
  if (!(err instanceof DomainError)) return err;
  const reason = err.data.reason;
  if (reason === 'timeout') {
    return urlRefused(field, `could not be reached: no answer within ${timeoutMs} ms`, { reason: 'timeout' });
  }
  if (reason === 'unreachable') {
    const code = typeof err.data.errorCode === 'string' ? err.data.errorCode : null;
    return urlRefused(field, `could not be reached: ${describeUnreachable(code)}`, err.data);
  }
  return err;
}

/** Probe `raw` as described above; resolves when dispatch could fetch it as things stand now. */
export async function probeMediaUrl(raw: string, opts: ProbeOptions): Promise<ProbeResult> {
  const field = opts.field ?? 'mediaUrl';
  const clock = opts.clock ?? systemClock;
  const timeoutMs = opts.timeoutMs ?? PROBE_TIMEOUT_MS;
  const deadline = clock.now() + timeoutMs;
  const ask = async (method: 'HEAD' | 'GET'): Promise<ProbeResult> => {
    try {
      const res = await safeFetch(raw, {
        resolver: opts.resolver,
        allowPrivate: opts.allowPrivate,
        allowAddress: opts.allowAddress,
        field,
        method,
        headersOnly: true,
        maxBytes: opts.maxBytes,
        maxRedirects: opts.maxRedirects ?? 3,
        timeoutMs: Math.max(1, deadline - clock.now()),
        clock,
      });
      const declared = res.headers['content-length'];
      const contentLength = declared !== undefined && /^\d+$/.test(declared) ? Number(declared) : null;
      return { method, status: res.status, contentLength, mimetype: res.mimetype };
    } catch (err) {
      throw asReachability(err, field, timeoutMs);
    }
  };

  let verdict = await ask('HEAD');
  if (verdict.status >= 400) verdict = await ask('GET');
  if (verdict.status < 200 || verdict.status > 299) {
    throw urlRefused(field, `answered HTTP ${verdict.status}`, { reason: 'http_status', status: verdict.status });
  }
  return verdict;
}

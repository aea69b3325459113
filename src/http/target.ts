/**
 * The checks of a request's target before any family, so before any guard: a bad target is 400 VALIDATION_FAILED
 * on every route, on a path no route has and without a credential alike. `refuseMalformedTarget`: the Host header,
 * an encoded NUL in the path or query, a malformed percent escape in the query; `refuseMalformedPath` (the next
 * link): a malformed percent escape in the path, named by the route parameter it is in.
 */
import type { Context, Middleware, Next } from 'koa';
import { validationFailed } from '../errors.js';
import { percentDecoded } from '../percent.js';
import { headerCount } from './headers.js';
import { layersOf, type LayerLike } from './layers.js';
import type { RouteFamily } from './router.js';

/**
 * A path or query carrying an encoded NUL can reach no store or driver: 400 before routing. So is a query with a
 * malformed percent escape (`refuseMalformedQuery`), and an HTTP/1.1 request without a Host header (RFC 9112
 * §3.2), which Node would answer itself outside the envelope: the gateway's server leaves that check to this link
 * (src/http/client-error.ts). Before every family, so before any guard: a bad target is 400 on every route, on
 * a path no route has and without a credential alike, as a malformed path is (refuseMalformedPath,
 * the next link).
 */
export function refuseMalformedTarget(ctx: Context, next: Next): Promise<void> {
  if (ctx.req.headers.host === undefined && ctx.req.httpVersion === '1.1') throw validationFailed('host', 'an HTTP/1.1 request must carry a Host header');
  // RFC 9112 3.2: more than one Host, or one that is no host[:port], is a 400 (Node keeps the first of several)
  const host = ctx.req.headers.host;
  if (host !== undefined) {
    if (headerCount(ctx.req.rawHeaders, 'host') > 1) throw validationFailed('host', 'a request must carry one Host header');
    if (!validHost(host)) throw validationFailed('host', 'the Host header must be a host name or address, with a port from 0 to 65535 if any');
  }
  if (/%00/i.test(ctx.path)) throw validationFailed('path', 'the path must not contain NUL characters');
  const query = ctx.querystring;
  // a query without `%` (nearly every request) can hold neither: one search
  if (query.includes('%')) refuseMalformedQuery(query);
  return next();
}

/**
 * A query with an encoded NUL, or with a malformed percent escape (`%ZZ`, a cut UTF-8 sequence `%E0%A4%A`, bytes
 * that are no UTF-8, a `%` at the end): 400 VALIDATION_FAILED. Koa reads the query with URLSearchParams, which
 * leaves a malformed escape as written and turns bytes that are no UTF-8 into U+FFFD, so a route saw a value the
 * client did not mean (the sandbox's ledger read `since=%ZZ` as no bound), or refused an unknown parameter by
 * echoing its raw name. `data.field` names the parameter whose value holds the escape, as the routes read its
 * name (`+` a blank, escapes decoded), when that name decodes; else `query`. The message is one of two fixed
 * texts: nothing of the client's text is echoed in it (the envelope masks a secret in `data.field` as in any
 * answer that echoes client text, src/http/envelope.ts).
 */
function refuseMalformedQuery(query: string): void {
  if (/%00/i.test(query)) throw validationFailed('query', 'the query must not contain NUL characters');
  // escapes cannot spell a character across a `&` or `=`: the whole decodes exactly when each name and value does
  if (percentDecoded(query) !== null) return;
  const field = malformedQueryParameter(query);
  throw validationFailed(
    field ?? 'query',
    `${field === undefined ? 'the query' : 'the value of the query parameter named in data.field'} is not valid percent-encoding: a % must be followed by two hex digits, and the escapes must spell UTF-8 (a % itself is written %25)`,
  );
}

/**
 * The decoded name of the first parameter of `query` (split as URLSearchParams splits it) whose name or value does
 * not decode, when that name decodes and is not empty; undefined when the escape is in a name or the name is empty.
 */
function malformedQueryParameter(query: string): string | undefined {
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=');
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    const name = percentDecoded(rawName.replaceAll('+', ' '));
    if (name === null) return undefined;
    if (eq >= 0 && percentDecoded(pair.slice(eq + 1)) === null) return name === '' ? undefined : name;
  }
  return undefined;
}

/** `host[:port]` as RFC 9110 4.2.3 writes it: a name or IPv4 address, or an IPv6 literal in brackets; a port of 0-65535. */
function validHost(value: string): boolean {
  const m = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]*)(?::(\d{0,5}))?$/.exec(value);
  return m !== null && (m[1] === undefined || m[1] === '' || Number(m[1]) <= 65_535);
}

/** Whether percent-decoding `text` fails: a `%` without two hex digits, or escapes that spell no UTF-8. */
const malformedEscape = (text: string): boolean => percentDecoded(text) === null;

/**
 * A path with a malformed percent escape (`%ZZ`, `%E0%A4%A`) is bad input: 400 VALIDATION_FAILED before any family
 * (so before a guard, as a NUL in the path is: refuseMalformedTarget), naming the route parameter
 * the escape is in when a route's pattern matches the path, else `path`. @koa/router decodes a parameter
 * "safely": a malformed one reached the route as written, as an id nothing has (404), and a path no route
 * matched was 404 too. Nothing of the path is echoed. A path without `%` costs one search.
 */
export function refuseMalformedPath(families: readonly RouteFamily[]): Middleware {
  const layers = families.flatMap((f) => layersOf(f.router)).filter((l) => l.methods.length > 0);
  return function malformedPath(ctx, next) {
    const path = ctx.path;
    if (!path.includes('%') || !malformedEscape(path)) return next();
    // the routes of the request's method first: the parameter is named as the route that takes the request names it
    const field = malformedParameter(layers, path, ctx.method) ?? malformedParameter(layers, path, null);
    throw validationFailed(
      field ?? 'path',
      `${field === undefined ? 'the path' : `the path parameter ${field}`} is not valid percent-encoding: a % must be followed by two hex digits, and the escapes must spell UTF-8`,
    );
  };
}

/**
 * The parameter whose raw text does not decode, of the first route matching `path` (of `method`, or of any method
 * when null) that has one; undefined if none.
 */
function malformedParameter(layers: readonly LayerLike[], path: string, method: string | null): string | undefined {
  for (const layer of layers) {
    if (layer.paramNames.length === 0 || (method !== null && !layer.methods.includes(method)) || !layer.match(path)) continue;
    const raw = layer.captures(path);
    const i = raw.findIndex((text) => text !== undefined && malformedEscape(text));
    const name = i < 0 ? undefined : layer.paramNames[i]?.name;
    if (name !== undefined) return name;
  }
  return undefined;
}

/**
 * How routes are declared and mounted. Every router is case-sensitive and strict (no trailing-slash or
 * case variants of a path), and belongs to a *family* that carries its authentication: the family's guard is
 * the first link of each of its routes' chains (auth → validate → handler) and runs only for a request that
 * matched one of its routes. A request that matches no route is answered 404 (or 405 with the allowed methods
 * when the path exists with other methods) before any handler or guard runs. No path switch decides who may
 * enter, so no spelling of a path can reach a handler without its family's guard.
 */
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { DomainError, validationFailed } from '../errors.js';
import { entriesFieldOf } from './body.js';
import { dispatcher } from './dispatch.js';
import { layersOf } from './layers.js';

/** Who may call a family's routes: nobody needs a credential, an instance API key, or the admin token. */
export type AuthKind = 'none' | 'instance' | 'admin' | 'cluster';

export interface RouteFamily {
  /** a short name for the route table (e.g. `v2-send`) */
  name: string;
  auth: AuthKind;
  /** the middleware that enforces `auth` (null only for `none`) */
  guard: Middleware | null;
  router: Router;
  /** `json` (default): the body is parsed as JSON after the guard; `stream`: the routes read it themselves */
  body?: 'json' | 'stream';
  /**
   * The most bytes a JSON body of the family may hold after inflating (413 beyond); default the API's 10 MB. A
   * family open to everyone whose bodies are small says so: found from the outside, the console's sign-in
   * (no credential needed) parsed 10 MB bodies, 30 KB gzipped, holding the event loop 1.4-3.4 s each.
   */
  bodyLimit?: number;
  /**
   * The link after the JSON body is read, before the route: what the guard checked that the time a body takes
   * can change (an API key rotated meanwhile, src/http/auth.ts `requireKeyStillValid`). A `stream` family's
   * routes check it themselves once they have read their body.
   */
  afterBody?: Middleware;
  /**
   * `refused`: every route of the family declares what it takes with `takes()` (checked when the app is built,
   * so no route can forget it), and a query parameter or body field it does not take is 400 VALIDATION_FAILED
   * naming it. Left out: the routes ignore what they do not read (the send routes, the reads, v1).
   */
  unknownInputs?: 'refused';
}

/** What a route takes besides its path, declared with the route by `takes()`. */
export interface Takes {
  /** the query parameters the route reads (default none); any other is refused */
  query?: readonly string[];
  /**
   * true: the route reads a JSON body and its own schema (a superstruct `object`) refuses fields it does not know;
   * false (default): it reads none, so a body with any field is refused (none, or `{}`, is no body)
   */
  body?: boolean;
  /**
   * A request this route passes on to a later route of the same path (a network message id on a job route):
   * not checked here, the route that takes it checks it by its own declaration.
   */
  passes?: (ctx: Context) => boolean;
}

/** The declarations made by `takes()`, found again in the routes' chains by `assertDeclared`. */
const DECLARATIONS = new WeakSet<Middleware>();

/**
 * The first link of a route's chain in a family whose unknown inputs are refused: it refuses a query parameter
 * the route does not read, and on a route without a body any body field, before the handler runs (so before an
 * interaction is counted or anything is asked of the instance). A parameter given twice, or a bad value, is left
 * to the route, which names what it accepts.
 */
export function takes(spec: Takes = {}): Middleware {
  const known = new Set(spec.query ?? []);
  const declared: Middleware = (ctx, next) => {
    if (spec.passes?.(ctx)) return next();
    for (const name of Object.keys(ctx.query)) {
      if (!known.has(name)) throw validationFailed(name, `${name} is not allowed here (unknown query parameter${known.size === 0 ? '; this route takes none' : `; it takes ${[...known].join(', ')}`})`);
    }
    if (!spec.body) {
      const body: unknown = ctx.request.body;
      if (Array.isArray(body)) throw validationFailed('body', 'this route takes no body: send none, or {}');
      const first = body !== null && typeof body === 'object' ? Object.keys(body)[0] : undefined;
      if (first !== undefined) throw validationFailed(first, `${first} is not allowed here (unknown field; this route takes no body)`);
    }
    return next();
  };
  DECLARATIONS.add(declared);
  return declared;
}

/**
 * One mounted route, as the route table lists it: the matrix, the fuzzer and the OpenAPI document are generated
 * from it.
 */
export interface RouteInfo {
  family: string;
  auth: AuthKind;
  method: string;
  /** the path pattern, e.g. `/api/v2/messages/:jobId` */
  path: string;
  /**
   * The family's `body`: `json`, the JSON body reader runs before the route on every method but GET, HEAD and
   * OPTIONS, whether or not the route reads a body (a body not typed JSON is 415, broken JSON 400, too much
   * 413); `stream`, the route reads its body itself.
   */
  body: 'json' | 'stream';
  /** the family's `unknownInputs`: `refused`, an unknown query parameter or body field is 400 (`takes()`) */
  unknownInputs: 'refused' | 'ignored';
}

/** A router with the project's matching rules: case-sensitive, no trailing-slash variants. */
export function createRouter(prefix?: string): Router {
  return new Router({ ...(prefix ? { prefix } : {}), sensitive: true, strict: true });
}

/** The rule every mounted router must keep; checked when the app is built so a lax router cannot slip in. */
function assertStrict(family: string, router: Router): void {
  const opts = router.opts as { sensitive?: boolean; strict?: boolean };
  if (opts.sensitive !== true || opts.strict !== true) {
    throw new Error(`router of family ${family} must be created with createRouter() (case-sensitive and strict)`);
  }
  // a strict router with a prefix turns a route '/' into '<prefix>/', which no client spells
  const slashed = layersOf(router).find((l) => l.methods.length > 0 && typeof l.path === 'string' && l.path.length > 1 && l.path.endsWith('/'));
  if (slashed) throw new Error(`route ${String(slashed.path)} of family ${family} ends with '/'`);
}

/** A family that refuses unknown inputs: each of its routes declares them (`takes()`), or the app is not built. */
function assertDeclared(family: RouteFamily): void {
  if (family.unknownInputs !== 'refused') return;
  const undeclared = layersOf(family.router).find((l) => l.methods.length > 0 && !l.stack.some((m) => DECLARATIONS.has(m)));
  if (undeclared) {
    throw new Error(`route ${undeclared.methods.join('/')} ${String(undeclared.path)} of family ${family.name} must declare what it takes with takes()`);
  }
}

/** The routes of the families, one row per method (HEAD, implied by GET, left out). */
export function routeTable(families: readonly RouteFamily[]): RouteInfo[] {
  const rows: RouteInfo[] = [];
  for (const f of families) {
    for (const layer of layersOf(f.router)) {
      for (const method of layer.methods) {
        if (method === 'HEAD') continue;
        rows.push({ family: f.name, auth: f.auth, method, path: String(layer.path), body: f.body ?? 'json', unknownInputs: f.unknownInputs ?? 'ignored' });
      }
    }
  }
  return rows;
}

/** Where a path pattern's first parameter, wildcard, group or escape begins (path-to-regexp syntax). */
const PATTERN_SYNTAX = /[:*{}()[\]+?!\\]/;

/**
 * The literal starts of a router's routes: every path one of its routes matches starts with one of them (the
 * routers are case-sensitive and match the raw path). A route given as a RegExp has none (''), so every path may match.
 */
export function literalPrefixes(router: Router): string[] {
  const all = layersOf(router)
    .filter((l) => l.methods.length > 0)
    .map((l) => {
      if (typeof l.path !== 'string') return '';
      const i = l.path.search(PATTERN_SYNTAX);
      return i < 0 ? l.path : l.path.slice(0, i);
    });
  // '/api/v2/messages' makes '/api/v2/messages/' redundant
  return [...new Set(all)].filter((p, _, ps) => !ps.some((q) => q !== p && p.startsWith(q)));
}

/**
 * The JSON body reader of a family: `entriesAt` names the field whose entries the request's route takes one
 * by one (src/http/body.ts `entriesApart`), when it declared one.
 */
export type JsonBodyReader = (entriesAt?: (ctx: Context) => string | undefined, limitBytes?: number) => Middleware;

/** The routes of a router that declared entries taken one by one, and the field of each. */
function entriesAtOf(router: Router): ((ctx: Context) => string | undefined) | undefined {
  const declared = layersOf(router).flatMap((layer) => {
    const field = layer.methods.length > 0 ? entriesFieldOf(layer.stack) : undefined;
    return field === undefined ? [] : [{ layer, field }];
  });
  if (declared.length === 0) return undefined;
  return (ctx) => declared.find((d) => d.layer.methods.includes(ctx.method) && d.layer.match(ctx.path))?.field;
}

/**
 * The family's routes behind its guard: guard → body → after the body → route (validate → handler). The guard and the body
 * reader run only when one of the family's routes matched, so nothing is read for an unknown path.
 */
function guarded(family: RouteFamily, jsonBody: JsonBodyReader): Middleware {
  assertStrict(family.name, family.router);
  assertDeclared(family);
  if (family.auth !== 'none' && !family.guard) throw new Error(`family ${family.name} needs a guard for auth ${family.auth}`);
  const outer = createRouter();
  if (family.guard) outer.use(family.guard);
  if (family.body !== 'stream') {
    outer.use(jsonBody(entriesAtOf(family.router), family.bodyLimit));
    if (family.afterBody) outer.use(family.afterBody);
  }
  outer.use(family.router.routes());
  return dispatcher(outer);
}

/**
 * All families in their order, as one link of the chain: each family behind its guard (`guarded`), a request
 * passed from one to the next when none of its routes answers. A family is tried only for a path that starts
 * with one of its literal route prefixes; every other path cannot match its routes, so it goes on at once,
 * without the family's router (a request crosses many families before its own). For the path of a route without
 * parameters (every send route, the queue, the status) the families it may match are listed once, when the app
 * is built: the request goes to them without testing every family's prefixes (a dozen families precede the sends).
 */
export function routeFamilies(families: readonly RouteFamily[], jsonBody: JsonBodyReader): Middleware {
  const links: FamilyLink[] = families.map((f) => ({ dispatch: guarded(f, jsonBody), prefixes: literalPrefixes(f.router) }));
  const candidates = new Map<string, readonly number[]>();
  for (const f of families) {
    for (const layer of layersOf(f.router)) {
      const path = layer.path;
      if (layer.methods.length === 0 || typeof path !== 'string' || layer.paramNames.length > 0 || candidates.has(path)) continue;
      candidates.set(path, links.flatMap((link, i) => (mayMatch(link.prefixes, path) ? [i] : [])));
    }
  }
  const chain: FamilyChain = { links, candidates };
  return function familyRoutes(ctx, next) {
    return fromLink(chain, 0, ctx, next);
  };
}

interface FamilyLink {
  dispatch: Middleware;
  prefixes: string[];
}

interface FamilyChain {
  links: readonly FamilyLink[];
  /** for the path of a route without parameters: the families whose prefixes it starts with, in order */
  candidates: ReadonlyMap<string, readonly number[]>;
}

/**
 * The request passed to the first family from `i` on whose prefixes its path may match, the next one after it
 * when that family's routes do not answer. A module function and an anonymous continuation: tsx (keepNames)
 * names every closure bound to a name as it is made (`const from = …`), and `bind` names the function it makes;
 * both showed in profiles of acceptance (2 % of the busy thread).
 */
function fromLink(chain: FamilyChain, i: number, ctx: Parameters<Middleware>[0], next: () => Promise<unknown>): Promise<unknown> {
  const path = ctx.path;
  const { links } = chain;
  const listed = chain.candidates.get(path);
  if (listed !== undefined) {
    for (const j of listed) if (j >= i) return (links[j] as FamilyLink).dispatch(ctx, () => fromLink(chain, j + 1, ctx, next)) as Promise<unknown>;
    return next();
  }
  for (; i < links.length; i++) {
    const link = links[i] as FamilyLink;
    if (mayMatch(link.prefixes, path)) return link.dispatch(ctx, () => fromLink(chain, i + 1, ctx, next)) as Promise<unknown>;
  }
  return next();
}

function mayMatch(prefixes: readonly string[], path: string): boolean {
  for (const p of prefixes) if (path.startsWith(p)) return true;
  return false;
}

/**
 * The last link of the chain, reached only when no route answered. 405 with the methods the path has (OPTIONS answers them with 204),
 * else 404. Runs without a guard: it reveals only which routes exist, which the API reference shows anyway.
 */
export function notMatched(families: readonly RouteFamily[]): Middleware {
  const layers = families.flatMap((f) => layersOf(f.router));
  return async function fallthrough(ctx: Context): Promise<void> {
    const allowed = new Set<string>();
    for (const layer of layers) if (layer.methods.length > 0 && layer.match(ctx.path)) for (const m of layer.methods) allowed.add(m);
    // a route of this very method matched and passed the request on (e.g. a wq_ id on a message route): no such resource
    if (allowed.size === 0 || allowed.has(ctx.method)) throw new DomainError('NOT_FOUND', `no route for ${ctx.method} ${ctx.path}`);
    const list = [...allowed].sort();
    ctx.set('Allow', [...list, 'OPTIONS'].join(', '));
    if (ctx.method === 'OPTIONS') {
      ctx.status = 204;
      return;
    }
    throw new DomainError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed on ${ctx.path}; allowed: ${list.join(', ')}`, { allowed: list });
  };
}

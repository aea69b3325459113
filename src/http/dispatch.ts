/**
 * A router's dispatch with the chain of a literal route kept (see `dispatcher`), in place of @koa/router's own.
 */
import type Router from '@koa/router';
import compose from 'koa-compose';
import type { Middleware } from 'koa';
import type { LayerLike } from './layers.js';

/** What @koa/router's dispatch leaves on the context for the routes (only `params` is read by ours). */
interface RoutedContext {
  router?: Router;
  routeMatched?: boolean;
  matched?: LayerLike[];
  captures?: string[];
  params?: Record<string, string>;
  routerPath?: string | RegExp;
  routerName?: string | undefined;
  _matchedRoute?: string | RegExp;
  _matchedRouteName?: string;
  request: { params?: Record<string, string> };
}

/** Routes whose chains a dispatcher keeps, at most: far more than the API has (one per method and literal path). */
const KEPT_CHAINS = 512;

interface Dispatch {
  /** every layer whose path matched, of any method (ctx.matched) */
  path: LayerLike[];
  run: Middleware;
  matchedRoute: string | RegExp | undefined;
  matchedRouteName: string | undefined;
}

/**
 * A router's dispatch, as `router.routes()` does it (the same layers run in the same order, the same context
 * left for them), with what it works out for a request kept for the next one of the same method and path: which
 * layers match, and the chain that runs them. @koa/router works both out anew for every request (a test of every
 * layer's pattern, a closure per layer and a composed chain), 6 % of the event loop's time accepting messages.
 * Kept only for a route whose path has no parameter, so for at most one entry per literal route and method: an
 * id in a path, or a path no route has, is worked out every time as before and never fills the memory.
 * `kept`: where the chains are kept (a test reads it).
 */
export function dispatcher(router: Router, kept: Map<string, unknown> = new Map()): Middleware {
  if ((router as unknown as { host?: unknown }).host !== undefined) throw new Error('a dispatcher is for routers without a host');
  return function dispatch(ctx, next) {
    const path = ctx.path;
    const method = ctx.method;
    const key = `${method} ${path}`;
    let d = kept.get(key) as Dispatch | undefined;
    if (d === undefined) {
      const m = router.match(path, method) as unknown as { path: LayerLike[]; pathAndMethod: LayerLike[]; route: boolean };
      const c = ctx as unknown as RoutedContext;
      if (!m.route) {
        c.matched = c.matched ? [...c.matched, ...m.path] : m.path;
        c.router = router;
        c.routeMatched = false;
        return next();
      }
      d = dispatchOf(m.path, m.pathAndMethod, path);
      if (kept.size < KEPT_CHAINS && m.pathAndMethod.every((l) => l.paramNames.length === 0 && typeof l.path === 'string')) kept.set(key, d);
    }
    const c = ctx as unknown as RoutedContext;
    c.matched = c.matched ? [...c.matched, ...d.path] : [...d.path];
    c.router = router;
    c.routeMatched = true;
    if (d.matchedRoute !== undefined) {
      c._matchedRoute = d.matchedRoute;
      if (d.matchedRouteName !== undefined) c._matchedRouteName = d.matchedRouteName;
    }
    return d.run(ctx, next);
  };
}

/** The chain of a route's matched layers for one path: each layer's captures and parameters, then its middleware. */
function dispatchOf(pathLayers: LayerLike[], layers: LayerLike[], path: string): Dispatch {
  const chain: Middleware[] = [];
  for (const layer of layers) {
    const captures = layer.captures(path);
    const params = layer.params(path, captures, {});
    const routerPath = layer.path;
    const name = layer.name || undefined;
    chain.push(
      (ctx, next) => {
        const c = ctx as unknown as RoutedContext;
        c.captures = [...captures];
        c.request.params = { ...c.params, ...params };
        c.params = c.request.params;
        c.routerPath = routerPath;
        c.routerName = name;
        c._matchedRoute = routerPath;
        if (name !== undefined) c._matchedRouteName = name;
        return next();
      },
      ...layer.stack,
    );
  }
  const route = layers.findLast((l) => l.methods.length > 0);
  return { path: pathLayers, run: compose(chain), matchedRoute: route?.path, matchedRouteName: route?.name || undefined };
}

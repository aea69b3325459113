/**
 * The Koa application: request log → error boundary → target checks (Host, no NUL in the path, no NUL or malformed
 * percent escape in the query, no malformed percent escape in the path) → route families (each: guard → JSON body
 * ≤ 10 MB → route) → 404/405 for what no route answered. Families are built by the composition root (src/gateway.ts).
 */
import Koa from 'koa';
import type Router from '@koa/router';
import { errorBoundary } from './envelope.js';
import { jsonBody } from './body.js';
import { notMatched, routeFamilies, type RouteFamily } from './router.js';
import { refuseMalformedPath, refuseMalformedTarget } from './target.js';
import { requestLog } from './request-log.js';
import type { Logger } from '../log.js';

export const JSON_LIMIT_BYTES = 10 * 1024 * 1024;

export interface AppOptions {
  log: Logger;
  families?: RouteFamily[];
  /** routers open to everyone (tests and the standalone sandbox); each must come from createRouter() */
  routers?: Router[];
  onStoreError?: () => void;
  /** whether the store's health probe finds PostgreSQL unreachable now (answers to a busy pool: translate.ts) */
  storeDegraded?: () => boolean;
}

export function createApp(opts: AppOptions): Koa {
  const app = new Koa();
  app.proxy = false;
  app.silent = true; // errors are logged by the boundary, never printed by Koa's default handler
  const families: RouteFamily[] = [
    ...(opts.families ?? []),
    ...(opts.routers ?? []).map((router, i): RouteFamily => ({ name: `open-${i}`, auth: 'none', guard: null, router })),
  ];
  // outermost: the line is written with the status the boundary answered, and every answer carries X-Request-Id
  app.use(requestLog(opts.log));
  app.use(errorBoundary(opts.log, { onStoreError: opts.onStoreError, storeDegraded: opts.storeDegraded }));
  app.use(refuseMalformedTarget);
  app.use(refuseMalformedPath(families));
  // one reader for every family, unless a family has a route that takes its body's entries one by one, or a
  // smaller limit of its own
  const json = jsonBody({ limitBytes: JSON_LIMIT_BYTES });
  app.use(routeFamilies(families, (entriesAt, limitBytes) =>
    entriesAt || limitBytes !== undefined ? jsonBody({ limitBytes: limitBytes ?? JSON_LIMIT_BYTES, ...(entriesAt ? { entriesAt } : {}) }) : json));
  app.use(notMatched(families));
  return app;
}

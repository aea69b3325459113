/**
 * The Koa application: error boundary → body parsing (JSON ≤ 10 MB) → routers. Route families are built by
 * the composition root (src/gateway.ts) and handed in, each already guarded by its auth.
 */
import Koa, { type Middleware } from 'koa';
import type Router from '@koa/router';
import { koaBody, HttpMethodEnum } from 'koa-body';
import { errorBoundary } from './envelope.js';
import type { Logger } from '../log.js';

export const JSON_LIMIT_BYTES = 10 * 1024 * 1024;

export function createApp(opts: { log: Logger; routers: Router[]; middleware?: Middleware[]; onStoreError?: () => void }): Koa {
  const app = new Koa();
  app.proxy = false;
  app.silent = true; // errors are logged by the boundary, never printed by Koa's default handler
  app.use(errorBoundary(opts.log, { jsonLimitBytes: JSON_LIMIT_BYTES, ...(opts.onStoreError ? { onStoreError: opts.onStoreError } : {}) }));
  const json = koaBody({
    json: true,
    multipart: false,
    urlencoded: false,
    text: false,
    jsonLimit: JSON_LIMIT_BYTES,
    jsonStrict: true,
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
  });
  app.use(async (ctx, next) => {
    // multipart bodies (media upload) are streamed by their own route, never buffered here
    if (ctx.is('multipart/*')) return next();
    return json(ctx, next);
  });
  for (const m of opts.middleware ?? []) app.use(m);
  for (const r of opts.routers) app.use(r.routes()).use(r.allowedMethods());
  return app;
}

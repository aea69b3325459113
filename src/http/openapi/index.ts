/**
 * GET /openapi.json (the document, built once from the mounted routes) and GET /docs (Redoc's standalone
 * bundle, served from node_modules: no CDN). Mounted as a family with auth `none`: the document holds no secret.
 */
import { createReadStream, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type Router from '@koa/router';
import { createRouter, type RouteInfo } from '../router.js';
import { buildDocument } from './document.js';
import type { JsonSchema } from './struct-schema.js';

export { buildDocument } from './document.js';

const REDOC_BUNDLE = path.join(path.dirname(createRequire(import.meta.url).resolve('redoc/package.json')), 'bundles', 'redoc.standalone.js');

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Messaging gateway API</title>
<style>body { margin: 0; }</style>
</head>
<body>
<redoc spec-url="/openapi.json" hide-download-button="false"></redoc>
<script src="/docs/redoc.standalone.js"></script>
</body>
</html>
`;

/**
 * `routes`: the route table, or a function answering it (the table is complete only after this router's own
 * family is in it, so the gateway passes `() => routes`).
 */
export function openApiRouter(routes: readonly RouteInfo[] | (() => readonly RouteInfo[]), version: string): Router {
  const router = createRouter();
  let doc: JsonSchema | null = null;
  const document = (): JsonSchema => (doc ??= buildDocument(typeof routes === 'function' ? routes() : routes, version));
  router.get('/openapi.json', (ctx) => {
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = document();
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Content-Security-Policy', "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; worker-src 'self' blob:; font-src 'self' data:");
    ctx.body = PAGE;
  });
  router.get('/docs/redoc.standalone.js', (ctx) => {
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.length = statSync(REDOC_BUNDLE).size;
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = createReadStream(REDOC_BUNDLE);
  });
  return router;
}

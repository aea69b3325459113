/**
 * GET /openapi.json (the document, built once from the mounted routes) and GET /docs (Redoc's standalone
 * bundle, served from node_modules: no CDN). Mounted as a family with auth `none`: the document holds no secret.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type Router from '@koa/router';
import { createRouter, type RouteInfo } from '../router.js';
import { buildDocument } from './document.js';
import type { JsonSchema } from './struct-schema.js';

export { buildDocument } from './document.js';

const REDOC_BUNDLE = path.join(path.dirname(createRequire(import.meta.url).resolve('redoc/package.json')), 'bundles', 'redoc.standalone.js');

/**
 * The one address of another host in Redoc's bundle: its side menu's "API docs by Redocly" logo, which the page
 * asked a CDN for (found from the outside; the page's Content-Security-Policy refused it, and the browser logged
 * the refusal on every visit). Served with an empty image in its place.
 */
const REDOC_CDN_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
const EMPTY_SVG = `data:image/svg+xml,${encodeURIComponent("<svg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/>")}`;

let bundle: Buffer | null = null;
/** Redoc's bundle as served (read once, at the first request of /docs). */
const redocBundle = (): Buffer => (bundle ??= Buffer.from(readFileSync(REDOC_BUNDLE, 'utf8').split(REDOC_CDN_LOGO).join(EMPTY_SVG), 'utf8'));

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
  // its bytes, made once: one copy shared by every answer (found from the outside: built and written anew for each
  // request, 232 KB an answer, connections that pipelined requests for it and read nothing held them all)
  let doc: Buffer | null = null;
  const document = (): Buffer => (doc ??= Buffer.from(JSON.stringify(buildDocument(typeof routes === 'function' ? routes() : routes, version))));
  router.get('/openapi.json', (ctx) => {
    ctx.set('Cache-Control', 'no-cache');
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = document();
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    // framed by no page (as the console), its type never sniffed (found from the outside: both were missing)
    ctx.set('Content-Security-Policy', "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; worker-src 'self' blob:; font-src 'self' data:; frame-ancestors 'none'");
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.body = PAGE;
  });
  router.get('/docs/redoc.standalone.js', (ctx) => {
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = redocBundle();
  });
  return router;
}

/**
 * A family's routes are dispatched by src/http/router.ts `dispatcher`, which keeps the chain of a literal route
 * for the next request of the same method and path instead of working it out anew as @koa/router's own dispatch
 * (`router.routes()`) does. The two must not be told apart by any middleware: the same links run in the same
 * order, with the same parameters and the same context left behind, for every spelling of a path, whether the
 * chain was worked out or kept; and only literal routes are kept, so no id or unknown path fills the memory.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Middleware } from 'koa';
import type Router from '@koa/router';
import { createRouter, routeFamilies, type RouteFamily } from '../../src/http/router.js';
import { dispatcher } from '../../src/http/dispatch.js';

/** What a run left: the links in order (with the params each saw), whether it went on, and the routing fields. */
interface Trace {
  links: string[];
  passed: boolean;
  fields: Record<string, unknown>;
}

function routers(): Router {
  const family = createRouter('/api/v2');
  const link = (name: string, goOn = false): Middleware => (ctx, next) => {
    (ctx.state.links as string[]).push(`${name} ${JSON.stringify((ctx as unknown as { params?: unknown }).params ?? null)}`);
    return goOn ? next() : undefined;
  };
  family.post('/send-message', link('send-message'));
  family.post('/send-media', link('send-media:check', true), link('send-media'));
  family.get('/queue', link('queue'));
  family.delete('/queue', link('queue:delete'));
  family.get('/messages/:jobId', link('message:get', true));
  family.delete('/messages/:jobId', link('message:delete'));
  family.post('/messages/:msgId/forward', link('forward'));
  family.get('/files/{*rest}', link('files'));
  family.get('/opt{/:x}', link('opt'));
  family.get('/same', link('same:first', true));
  family.get('/same', link('same:second'));
  const outer = createRouter();
  outer.use(link('guard', true));
  outer.use(link('body', true));
  outer.use(family.routes());
  return outer;
}

const PATHS = [
  '/api/v2/send-message', '/api/v2/send-message/', '/api/v2/Send-message', '/api/v2/send-message%2F', '/api/v2/send%2Dmessage',
  '/api/v2/send-media', '/api/v2/queue', '/api/v2/queue/', '/api/v2/messages/wq_1', '/api/v2/messages/a%2Fb', '/api/v2/messages/%E2%82%AC',
  '/api/v2/messages/', '/api/v2/messages/x/forward', '/api/v2/files/a/b/c', '/api/v2/files/', '/api/v2/opt', '/api/v2/opt/1',
  '/api/v2/same', '/api/v2', '/', '', '/api/v2//queue', '/api/v2/queue?x=1',
];
const METHODS = ['GET', 'HEAD', 'POST', 'DELETE', 'PUT', 'OPTIONS'];
const FIELDS = ['params', 'captures', 'routerPath', 'routerName', '_matchedRoute', '_matchedRouteName', 'routeMatched'] as const;

async function run(mw: Middleware, method: string, path: string, params?: Record<string, string>): Promise<Trace> {
  const earlier = params ? { params, matched: [{ path: '/earlier' }] } : {};
  const ctx = { method, path, state: { links: [] as string[] }, request: {} as Record<string, unknown>, ...earlier };
  let passed = false;
  await mw(ctx as never, async () => {
    passed = true;
  });
  const c = ctx as unknown as Record<string, unknown>;
  const fields: Record<string, unknown> = { requestParams: (ctx.request as { params?: unknown }).params, matched: ((c.matched as { path: unknown }[] | undefined) ?? []).map((l) => String(l.path)) };
  for (const f of FIELDS) fields[f] = c[f];
  return { links: ctx.state.links, passed, fields };
}

test('dispatcher: every method and spelling of a path runs what @koa/router runs, worked out or kept', async () => {
  const outer = routers();
  const theirs = outer.routes() as unknown as Middleware;
  const kept = new Map<string, unknown>();
  const ours = dispatcher(outer, kept);
  let answered = 0;
  for (const path of PATHS) {
    for (const method of METHODS) {
      const expected = await run(theirs, method, path);
      if (expected.links.length > 2) answered++;
      // the first run works the chain out; the second and third may take it from what was kept
      for (let i = 0; i < 3; i++) assert.deepEqual(await run(ours, method, path), expected, `${method} ${path} (run ${i + 1})`);
      // a request that fell through an earlier family keeps that family's parameters and matches under this one's
      assert.deepEqual(await run(ours, method, path, { earlier: 'x' }), await run(theirs, method, path, { earlier: 'x' }), `${method} ${path} after another family`);
    }
  }
  assert.ok(answered >= 12, `the sample reaches the routes (${answered} answered)`);
  // kept: the literal routes that matched (with HEAD for GET); nothing with an id, nothing unknown, and no route
  // whose pattern has a parameter even where this path gave it none (/api/v2/opt, /api/v2/files/)
  assert.deepEqual([...kept.keys()].sort(), [
    'DELETE /api/v2/queue', 'GET /api/v2/queue', 'GET /api/v2/same', 'HEAD /api/v2/queue', 'HEAD /api/v2/same',
    'POST /api/v2/send-media', 'POST /api/v2/send-message',
  ].sort());
});

test('dispatcher: ids and unknown paths are never kept', async () => {
  const kept = new Map<string, unknown>();
  const ours = dispatcher(routers(), kept);
  for (let i = 0; i < 2_000; i++) {
    await run(ours, 'GET', `/api/v2/messages/wq_${i}`);
    await run(ours, 'POST', `/api/v2/nothing-${i}`);
    await run(ours, 'GET', `/api/v2/files/${i}/x`);
  }
  assert.equal(kept.size, 0);
});

test('families: a request reaches every family with a route for it, in order, listed or not', async () => {
  // families whose routes overlap as the gateway's do: the queue's job routes pass a network id on to the reads
  const make = (prefix: string, routes: [string, string][]): Router => {
    const r = createRouter(prefix);
    for (const [method, path] of routes) r[method as 'get'](path, (ctx, next) => next());
    return r;
  };
  const routers: [string, Router][] = [
    ['health', make('', [['get', '/health']])],
    ['queue', make('/api/v2', [['get', '/queue'], ['get', '/messages/:id'], ['delete', '/messages/:id'], ['get', '/messages']])],
    ['send', make('/api/v2', [['post', '/send-message'], ['post', '/messages/:msgId/forward']])],
    ['reads', make('', [['get', '/api/v2/messages/:id'], ['get', '/api/v2/chats/:chatId/messages'], ['get', '/api/v2/queue']])],
    ['any', make('', [['get', '/{*rest}']])],
  ];
  const families: RouteFamily[] = routers.map(([name, router]) => ({
    name,
    auth: 'none',
    guard: null,
    router,
    afterBody: (ctx, next) => ((ctx.state.families as string[]).push(name), next()),
  }));
  const walk = routeFamilies(families, () => (_ctx, next) => next());
  const paths = ['/health', '/api/v2/queue', '/api/v2/messages', '/api/v2/messages/wq_1', '/api/v2/send-message', '/api/v2/messages/x/forward', '/api/v2/chats/c/messages', '/nothing', '/api/v2/queue/'];
  for (const path of paths) {
    for (const method of ['GET', 'POST', 'DELETE']) {
      const ctx = { method, path, state: { families: [] as string[] }, request: {} };
      await walk(ctx as never, async () => undefined);
      const expected = routers
        .filter(([, router]) => (router.stack as unknown as { methods: string[]; match(p: string): boolean }[]).some((l) => l.methods.includes(method) && l.match(path)))
        .map(([name]) => name);
      assert.deepEqual(ctx.state.families, expected, `${method} ${path}`);
    }
  }
});

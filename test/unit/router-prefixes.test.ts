/**
 * A family's routes are tried only for a path that starts with one of their literal prefixes
 * (src/http/router.ts `literalPrefixes`): the prefixes must never leave out a path a route matches, whatever
 * the route's pattern syntax (parameters, wildcards, optional groups, a router prefix, a RegExp route).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type Router from '@koa/router';
import { createRouter, literalPrefixes } from '../../src/http/router.js';

const noop = () => undefined;

interface LayerLike {
  methods: string[];
  match(path: string): boolean;
}

function sample(): Router {
  const r = createRouter('/api/v2');
  r.get('/queue', noop);
  r.get('/queue/items', noop);
  r.get('/messages/:id', noop);
  r.post('/messages/:id/requeue', noop);
  r.get('/files/{*rest}', noop);
  r.get('/opt{/:x}', noop);
  r.get('/chats/:chatId/messages', noop);
  return r;
}

/** Paths around the routes: exact, with parameter values, case and slash variants, encodings, and strangers. */
const PATHS = [
  '/', '', '/api', '/api/v2', '/api/v2/', '/api/v2/queue', '/api/v2/queue/', '/api/v2/Queue', '/API/v2/queue',
  '/api/v2/queue/items', '/api/v2/queueitems', '/api/v2/messages/wq_1', '/api/v2/messages/', '/api/v2/messages/a%2Fb',
  '/api/v2/messages/x/requeue', '/api/v2/files/a/b/c', '/api/v2/files/', '/api/v2/opt', '/api/v2/opt/1', '/api/v2/optx',
  '/api/v2/chats/1@c.us/messages', '/api/v2/chats//messages', '/api/%76%32/queue', '/api/v2/%71ueue', '/x/api/v2/queue',
  '/api/v2/queue?x=1', '/api/status', '/admin/v1/instances',
];

test('literal prefixes: every path a route matches starts with one of them', () => {
  const router = sample();
  const prefixes = literalPrefixes(router);
  assert.deepEqual(prefixes.sort(), ['/api/v2/chats/', '/api/v2/files/', '/api/v2/messages/', '/api/v2/opt', '/api/v2/queue'].sort());
  const layers = (router.stack as unknown as LayerLike[]).filter((l) => l.methods.length > 0);
  let matched = 0;
  for (const path of PATHS) {
    if (!layers.some((l) => l.match(path))) continue;
    matched++;
    assert.ok(prefixes.some((p) => path.startsWith(p)), `${path} matches a route but starts with none of ${prefixes.join(', ')}`);
  }
  assert.ok(matched >= 8, `the sample paths reach the routes (${matched} matched)`);
});

test('literal prefixes: a RegExp route makes every path a candidate', () => {
  const r = createRouter();
  r.get('/health', noop);
  r.get(/^\/legacy\/.*$/, noop);
  assert.ok(literalPrefixes(r).includes(''));
});

test('literal prefixes: middleware layers do not count, a route without parameters is its own prefix', () => {
  const r = createRouter('/console');
  r.use(noop);
  r.get('/session', noop);
  r.post('/session', noop);
  assert.deepEqual(literalPrefixes(r), ['/console/session']);
});

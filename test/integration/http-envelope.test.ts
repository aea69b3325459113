/**
 * The error boundary over real sockets: 400/401/404/413/500 in the SPEC.md envelope; an internal error is
 * answered without internals and logged in full.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import Router from '@koa/router';
import { createRouter } from '../../src/http/router.js';
import { object, string, integer } from 'superstruct';
import { createApp } from '../../src/http/app.js';
import { requestHandler } from '../../src/http/handler.js';
import { createLogger } from '../../src/log.js';
import { parse } from '../../src/http/validate.js';
import { ok } from '../../src/http/envelope.js';
import { requireAdmin } from '../../src/http/auth.js';

const logged: string[] = [];
let server: http.Server;
let url = '';

before(async () => {
  const log = createLogger({ level: 'info', stream: new Writable({ write(c: Buffer, _e, cb) { logged.push(c.toString()); cb(); } }) });
  const r = createRouter();
  r.post('/echo', (ctx) => ok(ctx, parse(ctx.request.body, object({ name: string(), count: integer() }))));
  r.get('/boom', () => {
    throw new Error('database password=hunter2 exploded at /srv/app/x.ts:12');
  });
  r.get('/admin/v1/ping', requireAdmin('an-admin-token-of-length'), (ctx) => ok(ctx, { pong: true }));
  const app = createApp({ log, routers: [r] });
  server = http.createServer(requestHandler(app));
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((res) => server.close(() => res())));

async function call(method: string, path: string, body?: string, headers: Record<string, string> = {}) {
  const res = await fetch(url + path, { method, body, headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...headers } });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

test('400 VALIDATION_FAILED names the field', async () => {
  const r = await call('POST', '/echo', JSON.stringify({ name: 'x', count: 'many' }));
  assert.equal(r.status, 400);
  assert.equal(r.json.success, false);
  assert.equal(r.json.code, 'VALIDATION_FAILED');
  assert.deepEqual(r.json.data, { field: 'count' });
  assert.equal(typeof r.json.error, 'string');
  const missing = await call('POST', '/echo', JSON.stringify({ count: 1 }));
  assert.deepEqual(missing.json.data, { field: 'name' });
});

test('malformed JSON is a 400 in the envelope', async () => {
  const r = await call('POST', '/echo', '{"name": ');
  assert.equal(r.status, 400);
  assert.equal(r.json.code, 'VALIDATION_FAILED');
});

test('401 UNAUTHORIZED without a bearer header; wrong admin token also 401', async () => {
  const r = await call('GET', '/admin/v1/ping');
  assert.equal(r.status, 401);
  assert.equal(r.json.code, 'UNAUTHORIZED');
  const wrong = await call('GET', '/admin/v1/ping', undefined, { authorization: 'Bearer not-the-admin-token' });
  assert.equal(wrong.status, 401);
  const good = await call('GET', '/admin/v1/ping', undefined, { authorization: 'Bearer an-admin-token-of-length' });
  assert.equal(good.status, 200);
  assert.deepEqual(good.json, { success: true, data: { pong: true } });
});

test('unknown route: 404 in the envelope', async () => {
  const r = await call('GET', '/nope');
  assert.equal(r.status, 404);
  assert.equal(r.json.success, false);
  assert.equal(r.json.code, 'NOT_FOUND');
});

test('413 PAYLOAD_TOO_LARGE above 10 MB with data.maxBytes', async () => {
  const big = JSON.stringify({ name: 'x'.repeat(10 * 1024 * 1024 + 10), count: 1 });
  const r = await call('POST', '/echo', big);
  assert.equal(r.status, 413);
  assert.equal(r.json.code, 'PAYLOAD_TOO_LARGE');
  assert.deepEqual(r.json.data, { maxBytes: 10 * 1024 * 1024 });
});

test('500: no internals in the answer, the whole error in the log', async () => {
  const r = await call('GET', '/boom');
  assert.equal(r.status, 500);
  assert.equal(r.json.success, false);
  assert.equal(r.json.code, 'INTERNAL_ERROR');
  assert.ok(!JSON.stringify(r.json).includes('hunter2'));
  assert.ok(!JSON.stringify(r.json).includes('/srv/app'));
  const line = logged.find((l) => l.includes('unhandled error'));
  assert.ok(line, 'the error is logged');
  assert.match(line, /exploded/);
  assert.match(line, /stack/);
});

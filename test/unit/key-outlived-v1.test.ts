/**
 * A v1 send whose instance was deleted while it was on its way (its port found no row: INSTANCE_NOT_FOUND) is
 * answered 401 INVALID_API_KEY in the shared envelope, as a v2 send beside the delete and every request after it
 * are (docs/api-v1.md: 401 is not produced by the v1 routes). Found from the outside: v1 send-message, send-media
 * and send-bulk sent beside a DELETE were answered 500 "the instance was deleted; nothing was accepted".
 * The real v1 router and error boundary over a real socket; the port stands in for the deleted instance's.
 */
import { test, before, after } from 'node:test';
import { once } from 'node:events';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { errorBoundary } from '../../src/http/envelope.js';
import { legacyRouter } from '../../src/http/routes/legacy.js';
import { DomainError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import type { InstancePort } from '../../src/actors/port.js';

const gone: InstancePort = {
  instanceId: '00000000-0000-4000-8000-000000000000',
  ask: () => Promise.reject(new DomainError('INSTANCE_NOT_FOUND', 'the instance was deleted; nothing was accepted')),
};
const router = legacyRouter({
  portOf: () => gone,
  clock: { now: () => Date.now() } as never,
  pool: {} as never,
  config: { LEGACY_SYNC_TIMEOUT_MS: 20_000, LEGACY_CALLER_TIMEOUT_MS: 30_000, QUEUE_MAX_PENDING: 5000 },
  validateMedia: async () => undefined,
});
const app = new Koa();
app.use(errorBoundary(createLogger({ level: 'fatal' })));
app.use(async (ctx, next) => {
  ctx.state.authenticated = 'instance';
  ctx.state.instance = { id: gone.instanceId, settings: { legacyQueueMode: 'sync', enabled: true } };
  const chunks: Buffer[] = [];
  for await (const c of ctx.req) chunks.push(c as Buffer);
  (ctx.request as unknown as { body: unknown }).body = JSON.parse(Buffer.concat(chunks).toString() || '{}');
  await next();
});
app.use(router.routes());
const server = http.createServer(app.callback());
before(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
});
after(() => server.close());

const post = async (path: string, body: unknown) => {
  const { port } = server.address() as AddressInfo;
  const r = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: (await r.json()) as { success: boolean; code?: string; error: string } };
};

test('v1 sends whose instance was deleted on their way are 401 INVALID_API_KEY, not a v1 500', async () => {
  for (const [path, body] of [
    ['/api/send-message', { phone: '4915112345678', message: 'hi' }],
    ['/api/send-media', { phone: '4915112345678', mediaBase64: 'aGVsbG8=', mimetype: 'text/plain', filename: 'a.txt' }],
    ['/api/send-bulk', { messages: [{ phone: '4915112345678', message: 'hi' }] }],
  ] as const) {
    const r = await post(path, body);
    assert.equal(r.status, 401, `${path}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.code, 'INVALID_API_KEY', path);
  }
});

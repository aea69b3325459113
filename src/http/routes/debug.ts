/**
 * Operator debug view (admin token): every live actor with its state and a secret-free summary, once
 * (`GET /debug/actors`) or live as server-sent events (`GET /debug/actors/stream`, from XState inspection).
 */
import Router from '@koa/router';
import { createRouter } from '../router.js';
import { PassThrough } from 'node:stream';
import type { InspectionEvent } from 'xstate';
import { ok } from '../envelope.js';
import type { ActorSystem } from '../../actors/system.js';

export function debugRouter(actors: Pick<ActorSystem, 'describeActors' | 'subscribe'>): Router {
  const router = createRouter('/debug');

  router.get('/actors', (ctx) => ok(ctx, { actors: actors.describeActors() }));

  router.get('/actors/stream', (ctx) => {
    ctx.status = 200;
    ctx.set({ 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    // HEAD: the stream's headers only. Subscribing (and keeping the connection open without a timeout, below)
    // held a HEAD's connection open although nothing would ever be sent on it
    if (ctx.method === 'HEAD') return;
    const stream = new PassThrough();
    ctx.set('Connection', 'keep-alive');
    ctx.body = stream;
    ctx.req.socket.setTimeout(0);
    const send = (event: string, data: unknown) => stream.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    send('actors', { actors: actors.describeActors() });
    // Snapshots may hold secrets (QR, pairing code): the stream only ever carries the summaries.
    let pending = false;
    const unsubscribe = actors.subscribe((ev: InspectionEvent) => {
      if (ev.type !== '@xstate.snapshot' || pending) return;
      pending = true;
      queueMicrotask(() => {
        pending = false;
        send('actors', { actors: actors.describeActors() });
      });
    });
    const close = () => {
      unsubscribe();
      stream.end();
    };
    ctx.req.on('close', close);
  });

  return router;
}

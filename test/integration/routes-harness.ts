/**
 * Harness for the network route tests (routes-*.test.ts, port-asks.test.ts): an InstancePort
 * (src/actors/port.ts) over any driver that records every ask and answers it as the instance actor would
 * (machines/instance.asks.ts `routeAsk`): `view` from a connected/disconnected view, `network` with the
 * session's own `serveNetwork` (src/actors/session-calls.ts) while connected and 503 INSTANCE_OFFLINE otherwise,
 * a refusal thrown as `replyErrorToThrow` makes it. The app is the real Koa application (src/http/app.ts: the
 * real error boundary and the body reader of src/http/body.ts) on a loopback port. The drivers: the in-memory
 * network of routes-mini-network.ts (fine-grained cases, fault injection) and the sandbox network's own driver
 * (routes-sandbox.test.ts).
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { createRouter, type RouteFamily } from '../../src/http/router.js';
import { createApp } from '../../src/http/app.js';
import { silentLogger } from '../../src/log.js';
import type { Driver } from '../../src/drivers/contract.js';
import { serveNetwork } from '../../src/actors/session-calls.js';
import { replyErrorToThrow, type AskReply, type InstanceAsk, type InstancePort, type ReplyOf } from '../../src/actors/port.js';
import type { InstanceView } from '../../machines/instance.snapshot.js';
import type { Instance } from '../../src/store/instances.js';
import { NEW_INSTANCE_DEFAULTS } from '../../src/queue/settings.js';
import type { Clock } from '../../src/clock.js';
import { ME } from './routes-mini-network.js';

export { MiniNetwork, ME } from './routes-mini-network.js';

/**
 * The port of one instance over one driver, with a connection switch. Every ask is recorded as it was asked
 * (`asks`, with its deadline in `deadlines`); the session serves a structured clone of it, as a port to
 * another node would carry it, so an ask that is not plain data fails here.
 */
export class TestPort implements InstancePort {
  connected = true;
  readonly asks: InstanceAsk[] = [];
  readonly deadlines: number[] = [];
  /** failures the session could not classify (serveNetwork's `report`) */
  readonly reported: unknown[] = [];

  constructor(readonly instanceId: string, readonly driver: Driver, private readonly clock: Clock) {}

  /** the record the API-key guard would load for this instance */
  get instance(): Instance {
    return {
      id: this.instanceId,
      name: this.instanceId,
      driver: 'sandbox',
      phoneNumber: ME.split('@')[0] ?? null,
      createdAt: new Date(0).toISOString(),
      settings: { ...NEW_INSTANCE_DEFAULTS },
      lastDispatchAt: null,
      planEpoch: 0,
    };
  }

  view(): InstanceView {
    return {
      status: this.connected ? 'connected' : 'disconnected',
      connected: this.connected,
      phoneNumber: this.instance.phoneNumber,
      browser: { alive: true, failStreak: 0, lastOkAt: this.clock.now() },
      qrText: null,
      detail: this.connected ? 'connected' : 'disconnected',
      paused: false,
      quarantined: false,
      lastError: null,
      queueMode: 'pg',
    };
  }

  /** the network ops asked so far, in order */
  get ops(): string[] {
    return this.asks.flatMap((a) => (a.type === 'network' ? [a.op] : []));
  }

  /** the labels of the network asks so far (the op where an ask has none) */
  get labels(): string[] {
    return this.asks.flatMap((a) => (a.type === 'network' ? [a.label ?? a.op] : []));
  }

  async ask<A extends InstanceAsk>(ask: A, deadlineMs: number): Promise<ReplyOf<A>> {
    this.asks.push(ask);
    this.deadlines.push(deadlineMs);
    const reply = await this.answer(structuredClone(ask));
    if (!reply.ok) throw replyErrorToThrow(reply.error);
    return reply.value as ReplyOf<A>;
  }

  private async answer(ask: InstanceAsk): Promise<AskReply> {
    switch (ask.type) {
      case 'view':
        return { ok: true, value: this.view() };
      case 'network': {
        if (this.connected) return serveNetwork(this.driver, ask, (err) => this.reported.push(err));
        // machines/instance.asks.ts routeAsk: not connected → 503 INSTANCE_OFFLINE with data.instance
        const instance = { status: 'disconnected', detail: 'disconnected', lastError: null };
        return { ok: false, error: { code: 'INSTANCE_OFFLINE', message: 'instance is not connected', data: { instance } } };
      }
      default:
        throw new Error(`the route test port does not serve ${ask.type}`);
    }
  }
}

export interface Served {
  url: string;
  close(): Promise<void>;
}

/**
 * Serve routers in the real Koa application on 127.0.0.1 and an ephemeral port. With `instance`, each router
 * is an instance family whose guard stands in for the API-key guard: it sets ctx.state.instance.
 */
export async function serve(routers: Router[], opts: { instance?: Instance } = {}): Promise<Served> {
  const { instance } = opts;
  const guard: Middleware = (ctx, next) => {
    ctx.state.instance = instance;
    ctx.state.authenticated = 'instance';
    return next();
  };
  const app = instance
    ? createApp({ log: silentLogger(), families: routers.map((router, i): RouteFamily => ({ name: `instance-${i}`, auth: 'instance', guard, router })) })
    : createApp({ log: silentLogger(), routers });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

export interface Reply {
  status: number;
  headers: Headers;
  body: {
    success: boolean;
    data?: Record<string, unknown>;
    error?: string;
    code?: string;
  } & Record<string, unknown>;
}

/** One HTTP request with a JSON body (or none); answers status, headers and the parsed body (`raw` text when not JSON). */
export async function request(base: string, method: string, path: string, body?: unknown): Promise<Reply> {
  const init: RequestInit = { method, headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'content-type': 'application/json', accept: 'application/json' };
  }
  const res = await fetch(base + path, init);
  const text = await res.text();
  if (!/json/.test(res.headers.get('content-type') ?? '')) return { status: res.status, headers: res.headers, body: { success: res.ok, raw: text } };
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Reply['body']) : { success: false } };
}

/** A stand-in for the queue router: answers GET/DELETE/PATCH of wq_ ids so the routing rule can be observed. */
export function queueStub(): Router {
  const r = createRouter();
  const answer = (ctx: { params: Record<string, string>; body: unknown }) => {
    ctx.body = { success: true, data: { jobId: ctx.params.id, handledBy: 'queue' } };
  };
  r.get('/api/v2/messages/:id', answer);
  r.delete('/api/v2/messages/:id', answer);
  return r;
}

/** The SPEC.md field tables the responses are checked against. */
export const CHAT_FIELDS = ['id', 'name', 'isGroup', 'isReadOnly', 'unreadCount', 'timestamp', 'archived', 'pinned', 'isMuted', 'muteExpiration'].sort();
export const MESSAGE_FIELDS = ['id', 'chatId', 'from', 'to', 'author', 'body', 'type', 'timestamp', 'fromMe', 'hasMedia', 'hasQuotedMsg', 'ack', 'isForwarded', 'deviceType', 'location', 'vCards'].sort();
export const CONTACT_FIELDS = ['id', 'number', 'name', 'pushname', 'shortName', 'isBusiness', 'isEnterprise', 'isMyContact', 'isBlocked', 'isGroup', 'isUser', 'isWAContact'].sort();

export const keys = (o: unknown): string[] => Object.keys((o ?? {}) as object).sort();

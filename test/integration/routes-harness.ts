/**
 * Harness for the network route tests (routes-*.test.ts): an InstanceHandle with the mapping documented in
 * src/actors/handle.ts (offline → 503, DriverError → driverErrorToDomain, DomainErrors as thrown) over any
 * driver, and the real Koa application (src/http/app.ts: the real error boundary and the body reader of
 * src/http/body.ts) on a loopback port. The drivers: the in-memory network of routes-mini-network.ts
 * (fine-grained cases, fault injection) and the sandbox network's own driver (routes-sandbox.test.ts).
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type Router from '@koa/router';
import { createRouter } from '../../src/http/router.js';
import { createApp } from '../../src/http/app.js';
import { silentLogger } from '../../src/log.js';
import { DomainError, instanceOffline } from '../../src/errors.js';
import { driverErrorToDomain } from '../../src/drivers/domain-errors.js';
import { DriverError, type Driver } from '../../src/drivers/contract.js';
import type { InstanceHandle, InstanceView } from '../../src/actors/handle.js';
import type { Instance } from '../../src/store/instances.js';
import { NEW_INSTANCE_DEFAULTS } from '../../src/queue/settings.js';
import type { Clock } from '../../src/clock.js';
import { ME } from './routes-mini-network.js';

export { MiniNetwork, ME } from './routes-mini-network.js';

/** The InstanceHandle contract of src/actors/handle.ts over one driver, with a connection switch. */
export class TestHandle implements InstanceHandle {
  connected = true;
  readonly ops: string[] = [];

  constructor(readonly id: string, readonly driver: Driver, private readonly clock: Clock) {}

  get instance(): Instance {
    return {
      id: this.id,
      name: this.id,
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
      qr: null,
      detail: this.connected ? 'connected' : 'disconnected',
      paused: false,
      quarantined: false,
      lastError: null,
    };
  }

  async call<T>(op: string, fn: (driver: Driver) => Promise<T>, _timeoutMs: number): Promise<T> {
    this.ops.push(op);
    if (!this.connected) throw instanceOffline({ id: this.id, status: 'disconnected' });
    try {
      return await fn(this.driver);
    } catch (err) {
      if (err instanceof DomainError) throw err;
      if (err instanceof DriverError) throw driverErrorToDomain(err, op, { status: this.view().status });
      throw err;
    }
  }
}

export interface Served {
  url: string;
  close(): Promise<void>;
}

/** Serve routers in the real Koa application on 127.0.0.1 and an ephemeral port. */
export async function serve(routers: Router[]): Promise<Served> {
  const app = createApp({ log: silentLogger(), routers });
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

/** One HTTP request with a JSON body (or none); answers status, headers and the parsed body. */
export async function request(base: string, method: string, path: string, body?: unknown): Promise<Reply> {
  const init: RequestInit = { method, headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'content-type': 'application/json', accept: 'application/json' };
  }
  const res = await fetch(base + path, init);
  const text = await res.text();
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

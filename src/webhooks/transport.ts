/**
 * One webhook POST over keep-alive connections, under the SSRF rules of src/media/ssrf.ts.
 *
 * Why node:http directly and not node-fetch: the body must go out byte for byte as stored and signed, the
 * response body is never read (only drained so the socket can be reused), redirects must never be followed
 * (a 3xx is a failed attempt), and at thousands of deliveries a second the thinner path pays.
 *
 * Two agent pairs: a strict one whose lookup refuses non-public addresses (checked at connect time, so DNS
 * rebinding cannot slip through), and a permissive one for webhooks the operator allowed to reach private
 * targets (`allow_private`, or WEBHOOK_ALLOW_PRIVATE for all).
 */
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { checkUrlSyntax, createSafeAgent, type Resolver, type SafeAgent } from '../media/ssrf.js';
import type { Clock } from '../clock.js';

export interface PostRequest {
  url: string;
  body: Buffer;
  headers: Record<string, string>;
  /** this webhook may reach private/loopback addresses */
  allowPrivate: boolean;
  timeoutMs: number;
  /** the timeout runs on this clock (simulated in tests) */
  clock: Clock;
}

export interface WebhookTransport {
  /** Resolves with the response status (any status); rejects on refusal, network error or timeout. */
  post(req: PostRequest): Promise<{ status: number }>;
  /** Close pooled connections (shutdown, tests). */
  close(): void;
}

export interface TransportOptions {
  /** WEBHOOK_ALLOW_PRIVATE: every webhook may reach private targets */
  allowPrivate?: boolean;
  resolver?: Resolver;
}

export class DeliveryTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(ms: number) {
    super(`no response within ${ms} ms`);
    this.name = 'DeliveryTimeoutError';
  }
}

/** How long a response body may take to end after its status arrived, and how much of it is drained. */
export const DRAIN_MS = 5_000;
export const DRAIN_MAX_BYTES = 64 * 1024;

/**
 * Drain a response without reading it: the status decides, and a drained response frees the socket for reuse.
 * A body that does not end within DRAIN_MS, or runs past DRAIN_MAX_BYTES, closes the connection instead: a
 * receiver that answers 200 and then stalls (or streams without end) held one socket per event, for ever.
 */
function drain(res: http.IncomingMessage, clock: Clock): void {
  let bytes = 0;
  const cut = clock.setTimeout(() => res.destroy(), DRAIN_MS);
  res.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > DRAIN_MAX_BYTES) res.destroy();
  });
  res.on('error', () => undefined);
  res.on('close', () => clock.clearTimeout(cut));
}

export function createWebhookTransport(opts: TransportOptions = {}): WebhookTransport {
  const strict: SafeAgent = createSafeAgent({ keepAlive: true, resolver: opts.resolver });
  const permissive: SafeAgent = createSafeAgent({ keepAlive: true, resolver: opts.resolver, allowPrivate: true });
  // The URL judgement and request options depend only on (url, allowPrivate): computed once, not per event.
  const targets = new Map<string, http.RequestOptions>();

  const target = (raw: string, allowPrivate: boolean): http.RequestOptions => {
    const key = `${allowPrivate ? 1 : 0}${raw}`;
    let t = targets.get(key);
    if (!t) {
      // IP literals never reach the agent's lookup, so they are judged here.
      const url = checkUrlSyntax(raw, { field: 'url', allowPrivate });
      t = {
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        auth: url.username || url.password ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined,
        method: 'POST',
        agent: (allowPrivate ? permissive : strict).forUrl(url),
      };
      if (targets.size >= 1_000) targets.clear();
      targets.set(key, t);
    }
    return t;
  };

  return {
    post(req) {
      const allowPrivate = req.allowPrivate || opts.allowPrivate === true;
      return new Promise((resolve, reject) => {
        let base: http.RequestOptions;
        try {
          base = target(req.url, allowPrivate);
        } catch (err) {
          return reject(err);
        }
        const send = base.protocol === 'https:' ? https.request : http.request;
        const r = send({ ...base, headers: { ...req.headers, 'Content-Length': String(req.body.length) } });
        const timer = req.clock.setTimeout(() => r.destroy(new DeliveryTimeoutError(req.timeoutMs)), req.timeoutMs);
        r.on('response', (res) => {
          req.clock.clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0 });
          drain(res, req.clock);
        });
        r.on('error', (err) => {
          req.clock.clearTimeout(timer);
          reject(err);
        });
        // A `101 Switching Protocols` is neither a response nor an error to node: without an 'upgrade' listener it
        // destroys the socket and emits only 'close', and the timeout's destroy() of a destroyed request emits
        // nothing either: the attempt never ended and the instance's sender waited behind it for ever. A 101
        // is a failed attempt (`HTTP 101`), its connection closed; a request closed unanswered fails too.
        r.on('upgrade', (res: http.IncomingMessage, socket: Socket) => {
          req.clock.clearTimeout(timer);
          socket.destroy();
          resolve({ status: res.statusCode ?? 101 });
        });
        r.on('close', () => {
          req.clock.clearTimeout(timer);
          reject(Object.assign(new Error('the connection closed without an answer'), { code: 'ECONNRESET' }));
        });
        r.end(req.body);
      });
    },
    close() {
      targets.clear();
      strict.destroy();
      permissive.destroy();
    },
  };
}

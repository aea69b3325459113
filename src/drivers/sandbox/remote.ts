/**
 * The sandbox network in another process (`mgw sandbox`): operations are JSON posts to `/rpc`, events arrive
 * over one server-sent-events stream per session (`/rpc/events`). Only node:http, so a gateway killed
 * mid-call leaves the network and its ledger untouched.
 *
 * Transport failures become DriverErrors: a refused connection never reached the network (provably not
 * sent); anything after the request left is CALL_FAILED with the outcome unknown.
 *
 * Every call and event stream names its client (the driver's `clientId`; calls made without one use this API
 * object's own), so the network can tell a replaced driver from the one that owns the session.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { DRIVER_ERROR_CODES, DriverError } from '../contract.js';
import type {
  SandboxArgs,
  SandboxCallOptions,
  SandboxEvent,
  SandboxEventListener,
  SandboxMethod,
  SandboxNetworkApi,
  SandboxResult,
  SandboxSubscribeOptions,
} from './api.js';

const DRIVER_CODES: ReadonlySet<string> = new Set(DRIVER_ERROR_CODES);

function isDriverErrorCode(v: unknown): v is DriverError['code'] {
  return typeof v === 'string' && DRIVER_CODES.has(v);
}

function transportError(err: unknown): DriverError {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ECONNREFUSED') return new DriverError('the sandbox network is unreachable', 'CALL_FAILED', true);
  if ((err as { name?: unknown } | null)?.name === 'AbortError') return new DriverError('the call was abandoned', 'SESSION_CLOSED', false);
  return new DriverError('the connection to the sandbox network failed', 'CALL_FAILED', false);
}

/** The server's answer: `{ok:true, result}` or `{ok:false, error:{code, message, provablyNotSent}}`. */
function fromReply(reply: unknown): { ok: true; result: unknown } | { ok: false; error: DriverError } {
  if (reply && typeof reply === 'object') {
    const r = reply as Record<string, unknown>;
    if (r.ok === true) return { ok: true, result: r.result ?? null };
    const e = r.error as Record<string, unknown> | undefined;
    if (r.ok === false && e && isDriverErrorCode(e.code)) {
      const message = typeof e.message === 'string' ? e.message : 'sandbox error';
      return { ok: false, error: new DriverError(message, e.code, e.provablyNotSent === true) };
    }
  }
  return { ok: false, error: new DriverError('malformed answer from the sandbox network', 'CALL_FAILED', false) };
}

function isSandboxEvent(v: unknown): v is SandboxEvent {
  if (!v || typeof v !== 'object') return false;
  const o = v as Record<string, unknown>;
  return typeof o.name === 'string' && Array.isArray(o.args);
}

const MALFORMED = Symbol('malformed');

/** An event's JSON, or MALFORMED. */
function parseEvent(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return MALFORMED;
  }
}

export class RemoteSandboxApi implements SandboxNetworkApi {
  private readonly base: URL;
  /** open event streams, closed by close() */
  private readonly streams = new Set<http.ClientRequest>();
  /** the client id of calls and streams that do not name one */
  private readonly ownClientId = randomUUID();

  constructor(baseUrl: string) {
    this.base = new URL(baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  }

  call<M extends SandboxMethod>(instanceId: string, method: M, args: SandboxArgs<M>, opts: SandboxCallOptions = {}): Promise<SandboxResult<M>> {
    const { signal } = opts;
    const body = JSON.stringify({ instanceId, clientId: opts.clientId ?? this.ownClientId, method, args });
    return new Promise<SandboxResult<M>>((resolve, reject) => {
      const req = http.request(
        new URL('rpc', this.base),
        {
          method: 'POST',
          // one connection per call: a refused connect then provably never reached the network, which a
          // kept-alive socket closed by a restarted sandbox could not tell apart from a lost request
          agent: false,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          ...(signal ? { signal } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', (err) => reject(transportError(err)));
          res.on('end', () => {
            let parsed: unknown;
            try {
              parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
              return reject(new DriverError('malformed answer from the sandbox network', 'CALL_FAILED', false));
            }
            const reply = fromReply(parsed);
            // The server runs the same operation table the in-process API runs; its result is that type.
            if (reply.ok) resolve(reply.result as SandboxResult<M>);
            else reject(reply.error);
          });
        },
      );
      req.on('error', (err) => reject(transportError(err)));
      req.end(body);
    });
  }

  subscribe(instanceId: string, listener: SandboxEventListener, opts: SandboxSubscribeOptions = {}): Promise<() => void> {
    const { onLost } = opts;
    const url = new URL('rpc/events', this.base);
    url.searchParams.set('instanceId', instanceId);
    url.searchParams.set('clientId', opts.clientId ?? this.ownClientId);
    return new Promise((resolve, reject) => {
      let live = false;
      let over = false;
      const lost = (reason: string) => {
        if (over) return;
        over = true;
        if (live) onLost?.(reason);
        else reject(new DriverError(`could not subscribe to the sandbox network: ${reason}`, 'CALL_FAILED', true));
      };
      const req = http.request(url, { method: 'GET', agent: false, headers: { accept: 'text/event-stream' } });
      this.streams.add(req);
      req.on('close', () => this.streams.delete(req));
      const unsubscribe = () => {
        over = true;
        req.destroy();
      };
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return lost(`HTTP ${res.statusCode}`);
        }
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const kind = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (kind === 'hello') {
              live = true;
              resolve(unsubscribe);
            } else if (kind === 'message' && data !== undefined && !over) {
              const parsed = parseEvent(data);
              if (parsed === MALFORMED) {
                // thrown here, in a socket's handler, it ended the process; an event it cannot read is one the
                // session would miss, so the stream counts as lost (the session reconnects), as a cut one does
                lost('a malformed event from the sandbox network');
                req.destroy();
                return;
              }
              if (isSandboxEvent(parsed)) listener(parsed);
            }
          }
        });
        res.on('close', () => lost('the event stream closed'));
      });
      req.on('error', (err) => lost((err as { code?: string }).code ?? 'connection error'));
      req.end();
    });
  }

  /** Close every event stream this client opened (their sessions see the gateway go away). */
  close(): void {
    for (const req of this.streams) req.destroy();
    this.streams.clear();
  }
}

export function remoteSandboxApi(opts: { url: string }): RemoteSandboxApi {
  return new RemoteSandboxApi(opts.url);
}

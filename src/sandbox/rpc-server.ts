/**
 * The network side of the remote sandbox driver: `POST /rpc` runs one operation, `GET /rpc/events` streams
 * one session's events as server-sent events. Both name the driver's client id (`clientId`, required): the
 * session belongs to the client that initialized it last, and only that client's streams get its events
 * (src/sandbox/session.ts). When the owner's last event stream closes (the gateway that ran it died or
 * disconnected), the session stops, as a browser would with its process; its link and everything the network
 * received stay. A replaced client's stream closing changes nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StructError, validate } from 'superstruct';
import { DriverError } from '../drivers/contract.js';
import type { SandboxNetwork } from './network.js';
import { dispatch, isSandboxMethod } from './operations.js';
import { argStructs } from './rpc-args.js';
import { percentDecoded } from '../percent.js';
import type { SandboxMethod } from '../drivers/sandbox/api.js';

/** Media up to the network's 64 MB, base64-encoded, plus the envelope. */
const MAX_RPC_BYTES = 96 * 1024 * 1024;
/** A client id is the driver's random UUID; anything printable up to this length is accepted. */
const MAX_CLIENT_ID = 200;

function isClientId(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= MAX_CLIENT_ID && /^[\x21-\x7e]+$/.test(v);
}

export interface RpcHandler {
  /** Handle the request if it is an RPC path; false leaves it to the next handler. */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
  /** End every open event stream. */
  closeAll(): void;
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new DriverError('the call is too large', 'INVALID_INPUT', true));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function reply(res: ServerResponse, body: unknown): void {
  if (res.writableEnded || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function errorReply(err: unknown): { ok: false; error: { code: string; message: string; provablyNotSent: boolean } } {
  if (err instanceof DriverError) {
    return { ok: false, error: { code: err.code, message: err.message, provablyNotSent: err.provablyNotSent } };
  }
  return { ok: false, error: { code: 'CALL_FAILED', message: 'internal sandbox error', provablyNotSent: false } };
}

function parseCall(raw: Buffer): { instanceId: string; clientId: string; method: SandboxMethod; args: unknown } {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new DriverError('the call is not JSON', 'INVALID_INPUT', true);
  }
  const o = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  if (typeof o.instanceId !== 'string' || o.instanceId.length === 0) throw new DriverError('instanceId is missing', 'INVALID_INPUT', true);
  if (!isClientId(o.clientId)) throw new DriverError('clientId is missing or malformed', 'INVALID_INPUT', true);
  if (typeof o.method !== 'string' || !isSandboxMethod(o.method)) throw new DriverError('unknown method', 'INVALID_INPUT', true);
  return { instanceId: o.instanceId, clientId: o.clientId, method: o.method, args: o.args ?? [] };
}

async function runCall<M extends SandboxMethod>(network: SandboxNetwork, instanceId: string, clientId: string, method: M, rawArgs: unknown): Promise<unknown> {
  const [failure, args] = validate(rawArgs, argStructs[method]);
  if (failure) throw new DriverError(`invalid arguments for ${method}: ${describe(failure)}`, 'INVALID_INPUT', true);
  return dispatch(network.session(instanceId), method, args, clientId);
}

function describe(err: StructError): string {
  const f = err.failures()[0] ?? err;
  return `${f.path.join('.') || 'args'} expected ${f.type}`;
}

/** The RPC's paths, matched exactly as written (as the gateway matches its own: no dot-segment, slash or escape variants; an absolute-form target by its path). */
type RpcPath = '/rpc' | '/rpc/events';
/** Parameters the RPC reads: each may be given once. */
const READ_PARAMS: ReadonlySet<string> = new Set(['instanceId', 'clientId']);

/**
 * An RPC request's target: its path, exactly `/rpc` or `/rpc/events` as written, and its query decoded strictly
 * (`+` a blank, escapes decoded); null when the path is not the RPC's (the control API's app answers it). The
 * WHATWG URL parser it was read with made `/x/../rpc`, `//host/rpc` and `/%2e%2e/rpc` the path `/rpc`, and
 * URLSearchParams keeps a malformed escape as written and makes bytes that are no UTF-8 U+FFFD, so a stream for
 * `instanceId=%ZZ` was the session of an instance named `%ZZ`. A query with a malformed escape (`%ZZ`, a cut
 * UTF-8 sequence, a `%` at the end), an encoded NUL, or a parameter the RPC reads given twice is `refused`, with
 * one of fixed messages: nothing of the client's text is echoed (src/http/target.ts refuses the same queries on
 * the gateway and the control API).
 */
function rpcTarget(target: string): { path: RpcPath; params: Map<string, string> } | { path: RpcPath; refused: string } | null {
  const raw = originForm(target);
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  if (path !== '/rpc' && path !== '/rpc/events') return null;
  const params = new Map<string, string>();
  if (q < 0) return { path, params };
  for (const pair of raw.slice(q + 1).split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = percentDecoded((eq < 0 ? pair : pair.slice(0, eq)).replaceAll('+', ' '));
    const value = percentDecoded((eq < 0 ? '' : pair.slice(eq + 1)).replaceAll('+', ' '));
    if (name === null || value === null) {
      return { path, refused: 'the query is not valid percent-encoding: a % must be followed by two hex digits, and the escapes must spell UTF-8 (a % itself is written %25)' };
    }
    if (name.includes('\0') || value.includes('\0')) return { path, refused: 'the query must not contain NUL characters' };
    if (READ_PARAMS.has(name) && params.has(name)) return { path, refused: `${name} is given more than once` };
    if (!params.has(name)) params.set(name, value);
  }
  return { path, params };
}

/** The scheme and authority of an absolute-form target (`http://host:port/rpc`, as a proxy sends it) taken off. */
const ABSOLUTE = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;
function originForm(target: string): string {
  const m = ABSOLUTE.exec(target);
  if (!m) return target;
  const rest = target.slice(m[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

export function createRpcHandler(network: SandboxNetwork): RpcHandler {
  const streams = new Set<ServerResponse>();

  function onCall(req: IncomingMessage, res: ServerResponse): void {
    readBody(req, MAX_RPC_BYTES)
      .then((raw) => {
        const call = parseCall(raw);
        return runCall(network, call.instanceId, call.clientId, call.method, call.args);
      })
      .then(
        (result) => reply(res, { ok: true, result: result ?? null }),
        (err: unknown) => reply(res, errorReply(err)),
      );
  }

  function onEvents(instanceId: string, clientId: string, req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    streams.add(res);
    // detaching the owner's last stream stops the session: its simulated browser is gone
    const detach = network.session(instanceId).clients.attachStream(clientId, (event) => {
      res.write(`data: ${JSON.stringify(event)}\n\n`);
    });
    res.write('event: hello\ndata: {}\n\n');
    req.socket.setKeepAlive(true);
    res.on('close', () => {
      streams.delete(res);
      detach();
    });
  }

  function refuse(res: ServerResponse, message: string): void {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ok: false, error: { code: 'INVALID_INPUT', message, provablyNotSent: true } }));
  }

  return {
    handle(req, res) {
      const target = rpcTarget(req.url ?? '/');
      if (target === null) return false;
      if (target.path === '/rpc' && req.method !== 'POST') return false;
      if (target.path === '/rpc/events' && req.method !== 'GET') return false;
      if ('refused' in target) {
        // nothing of the request runs: its body is not read, the connection is not kept
        res.setHeader('connection', 'close');
        refuse(res, target.refused);
        return true;
      }
      if (target.path === '/rpc') {
        onCall(req, res);
        return true;
      }
      const instanceId = target.params.get('instanceId');
      const clientId = target.params.get('clientId');
      if (!instanceId) refuse(res, 'instanceId is missing');
      else if (!isClientId(clientId)) refuse(res, 'clientId is missing or malformed');
      else onEvents(instanceId, clientId, req, res);
      return true;
    },
    closeAll() {
      for (const res of [...streams]) res.end();
    },
  };
}

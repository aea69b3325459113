/**
 * Requests that Node's HTTP parser refuses before any middleware runs (a header block over the size limit, a
 * request line that is not HTTP, a broken chunked body, a client too slow to send its request) are answered
 * by Node itself, as bare status lines outside the envelope. `answerClientErrors` answers them in the v2 error
 * envelope of envelope.ts instead, with `Connection: close`, then drops the connection: the stream can no
 * longer be parsed. Nothing of the refused bytes is echoed; the texts are fixed.
 *
 * Requests before the refused one on the same connection keep their answers (found from the outside: a send
 * pipelined before a malformed request was accepted and went out, while its client got only the 400 of the
 * request after it, which SPEC.md reads as "nothing accepted"): the refusal waits until they are answered.
 * And a client that half-closes its side after a whole request (`shutdown(SHUT_WR)`, `nc -N`) still gets its
 * answer: Node ended such a connection at once and the answer of a send that was performed was never written.
 */
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { ERROR_STATUS, type ErrorCode } from '../errors.js';

interface Refusal {
  status: number;
  code: Extract<ErrorCode, 'VALIDATION_FAILED' | 'PAYLOAD_TOO_LARGE' | 'HEADERS_TOO_LARGE' | 'REQUEST_TIMEOUT' | 'METHOD_NOT_ALLOWED'>;
  message: string;
  data: Record<string, unknown>;
}

/** The header limit of `server`: its own `maxHeaderSize` option, else the process's (--max-http-header-size). */
function headerLimit(server: http.Server): number {
  return 'maxHeaderSize' in server && typeof server.maxHeaderSize === 'number' ? server.maxHeaderSize : http.maxHeaderSize;
}

function refusal(code: string | undefined, server: http.Server): Refusal {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW': {
      const maxBytes = headerLimit(server);
      return { status: ERROR_STATUS.HEADERS_TOO_LARGE, code: 'HEADERS_TOO_LARGE', message: `request headers exceed ${maxBytes} bytes`, data: { maxBytes } };
    }
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: ERROR_STATUS.PAYLOAD_TOO_LARGE, code: 'PAYLOAD_TOO_LARGE', message: 'chunk extensions are too large', data: {} };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: ERROR_STATUS.REQUEST_TIMEOUT, code: 'REQUEST_TIMEOUT', message: 'the request was not received in time', data: {} };
    default:
      return { status: ERROR_STATUS.VALIDATION_FAILED, code: 'VALIDATION_FAILED', message: 'malformed HTTP request', data: { field: 'request' } };
  }
}

/** A complete HTTP/1.1 response carrying the envelope `{success:false, error, code, data}`. */
function responseBytes(r: Refusal, ...extraHeaders: string[]): string {
  const body = JSON.stringify({ success: false, error: r.message, code: r.code, data: r.data });
  return [
    `HTTP/1.1 ${r.status} ${http.STATUS_CODES[r.status] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    'X-Content-Type-Options: nosniff',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...extraHeaders,
    '',
    body,
  ].join('\r\n');
}

/**
 * Whether a response of an earlier request on this connection has begun to be written: another status line
 * would then land inside its bytes, so the connection is only dropped (as Node's own default does; it keeps
 * the response it is writing in `_httpMessage`).
 */
function responseUnderway(socket: Duplex): boolean {
  const current = (socket as Duplex & { _httpMessage?: http.ServerResponse | null })._httpMessage;
  return current?.headersSent === true;
}

/** The status a refusal wrote on a connection: a request whose handler was still running gets no other answer. */
const refusedWith = new WeakMap<Duplex, number>();

/**
 * The status this module answered on `socket`, if it did: a request still being handled there (its body
 * stalled past the request timeout: 408) has its answer from here, not from its handler, which then only
 * sees the connection end. The request log writes this one (src/http/request-log.ts).
 */
export function refusalOn(socket: Duplex): number | undefined {
  return refusedWith.get(socket);
}

/**
 * The options of a server whose app answers a missing Host itself, in the envelope (src/http/target.ts
 * refuseMalformedTarget): Node's own check answers a bare 400 before any middleware runs.
 */
export const serverOptions: http.ServerOptions = { requireHostHeader: false };

/** A refusal of a request that is not for this server at all (CONNECT: it is not a proxy). */
const NOT_A_PROXY: Refusal = { status: 405, code: 'METHOD_NOT_ALLOWED', message: 'CONNECT is not supported: this server is not a proxy', data: { allowed: [] } };

/**
 * Answer in the envelope what Node answers itself otherwise: requests its parser refuses (below), an
 * Expect other than 100-continue (Node's bare 417: the expectation is ignored, as RFC 9110 allows, and the
 * request answered like any other) and CONNECT (Node drops the connection without a word: 405 here). An
 * HTTP/1.1 request without Host, which Node answers with a bare 400, is left to the app by `serverOptions`.
 *
 * `Expect: 100-continue` (curl sends it with every body over 1 MiB): Node would answer `100 Continue` at once,
 * before any credential or header was looked at, and the client would send its whole body to be refused.
 * Here the request goes to the app without it; a body reader asks for the body once every check before it
 * passed (src/media/linger.ts `continueBody`), and a refusal before that goes out with the body never sent
 * (Node closes that connection after the answer: the client may still send the body).
 */
export function answerClientErrors(server: http.Server): void {
  server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => server.emit('request', req, res));
  server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => server.emit('request', req, res));
  server.on('connect', (_req: http.IncomingMessage, socket: Duplex) => {
    if (socket.writable) socket.write(responseBytes(NOT_A_PROXY, 'Allow: '));
    socket.destroy();
  });
  // the answers of a connection whose client closed its sending side are still written; the connection ends
  // after the last of them (node:_http_server socketOnEnd reads this property of the server; it has no option
  // and no type: test/integration/client-error.test.ts holds the behaviour)
  Object.assign(server, { httpAllowHalfOpen: true });
  server.on('clientError', (err: Error, socket: Duplex) => {
    const code = 'code' in err && typeof err.code === 'string' ? err.code : undefined;
    const refuse = () => {
      // ECONNRESET: the peer is gone; nobody would read an answer
      if (socket.writable && code !== 'ECONNRESET' && !responseUnderway(socket)) {
        const r = refusal(code, server);
        refusedWith.set(socket, r.status);
        // small enough to be taken by the kernel at once, so the destroy below does not cut it off
        socket.write(responseBytes(r));
      }
      socket.destroy();
    };
    // a request timeout too: the request that timed out may be a later one, stalled behind an earlier one whose
    // answer is still being made (found from the outside: a send's caller got only the 408 of an unfinished
    // request pipelined after it, for a message that went out); one whose own body stalled is refused at once
    if (code === 'ECONNRESET') return refuse();
    afterEarlierAnswers(socket, refuse);
  });
}

/**
 * Run `then` once the requests before the refused one on `socket` are answered: those received whole whose
 * answers have not begun (the bytes that could not be parsed came after them). Node writes a connection's
 * answers one after the other, the one being written in `_httpMessage`, the next taking its place as it
 * finishes; so they are waited for one at a time, with no bookkeeping on the way of every request. One still
 * receiving its body (the error is in that body), or one whose answer is being written (a stream), is not
 * waited for: `then` runs at once, and cuts it off, as before.
 */
function afterEarlierAnswers(socket: Duplex, then: () => void): void {
  const res = (socket as Duplex & { _httpMessage?: http.ServerResponse | null })._httpMessage;
  if (!res || res.writableFinished || res.destroyed || res.headersSent || !res.req.complete) return then();
  void answered(res).then(() => afterEarlierAnswers(socket, then));
}

/** Resolves once `res` is written whole, or its connection closed. */
function answered(res: http.ServerResponse): Promise<void> {
  if (res.writableFinished || res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    res.once('finish', () => resolve()).once('close', () => resolve());
  });
}

/**
 * Answering before the request body has been read to its end (413 on an upload above the limit, at once from
 * a declared Content-Length or mid-stream), without the client losing the answer.
 *
 * Why this is needed: for a `Connection: close` answer Node's HTTP server calls `socket.destroySoon()` once
 * the answer is written, i.e. it sends FIN and closes the socket right away. Body bytes the client is still
 * sending then arrive at a closed socket (or sit unread in its receive buffer at close), and the kernel answers
 * with RST. On the client an RST discards what it has not read yet: a Node client streaming 70 MiB saw EPIPE /
 * ECONNRESET instead of the 413.
 *
 * What is done instead (a "lingering close", as HTTP servers have long done): ask the client to close
 * (`Connection: close`), write the answer, half-close (FIN after the answer), then keep reading and discarding
 * what still arrives, at most `maxBytes` and `maxMs`, until the client closes its side. Only then is the
 * socket destroyed. A client that keeps sending past the bound is cut off; by then it has had the answer on
 * its socket for a long time.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** at most this much of an unread body is read and thrown away after the answer */
export const LINGER_MAX_BYTES = 16 * 1024 * 1024;
/** at most this long (real time: it bounds a socket, not a schedule) */
export const LINGER_MAX_MS = 10_000;

export interface LingerLimits {
  maxBytes?: number;
  maxMs?: number;
}

/**
 * Call when an answer is about to be given while the request body is not read to its end. The answer asks
 * the client to close; once it is written the socket lingers as described above. No-op when the body was
 * read completely (keep-alive stays usable).
 */
export function closeUnreadRequest(req: IncomingMessage, res: ServerResponse, limits: LingerLimits = {}): void {
  if (req.readableEnded || req.complete) return;
  if (!res.headersSent) res.setHeader('Connection', 'close');
  const socket = req.socket;
  const maxBytes = limits.maxBytes ?? LINGER_MAX_BYTES;
  const maxMs = limits.maxMs ?? LINGER_MAX_MS;
  let lingering = false;

  // Node's server calls this after the answer is written (res `finish`, `Connection: close`).
  socket.destroySoon = () => {
    if (lingering) return;
    lingering = true;
    let drained = 0;
    const timer = setTimeout(() => socket.destroy(), maxMs);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    // the client closed its side, or is gone: nothing left to protect
    socket.once('end', () => socket.destroy());
    socket.on('error', () => socket.destroy());
    // The HTTP parser still feeds the body into `req`; count it and let it go. A reader that stopped half-way
    // (an abandoned async iterator) leaves a 'readable' listener behind, which would keep `req` paused.
    req.removeAllListeners('readable');
    req.on('data', (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > maxBytes) socket.destroy();
    });
    req.on('error', () => socket.destroy());
    req.resume();
    if (socket.writable) socket.end();
  };
}

/** Node's own test of an Expect header for 100-continue (lib/_http_server.js). */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;
const continued = new WeakSet<ServerResponse>();

/**
 * Call right before a request's body is read: a client that sent `Expect: 100-continue` waits for `100
 * Continue` before it sends the body, and the gateway's server leaves that answer to the reader
 * (src/http/client-error.ts), so that a request refused on its credentials, its route or its declared size
 * never has its body sent at all. Nothing is written when the body already arrived, for HTTP/1.0, or twice.
 */
export function continueBody(req: IncomingMessage, res: ServerResponse): void {
  const expect = req.headers.expect;
  if (expect === undefined || req.httpVersion !== '1.1' || req.complete || res.headersSent || continued.has(res)) return;
  if (!CONTINUE.test(expect)) return;
  continued.add(res);
  res.writeContinue();
}

/**
 * A transfer coding besides chunked (`Transfer-Encoding: gzip, chunked`): Node's parser undoes the chunked
 * framing only, so the body would be read still coded (RFC 9112 §6.1: a coding the server does not know is
 * refused; 415 for the JSON body and the upload alike, as for a Content-Encoding they do not know).
 */
export function otherTransferCoding(te: string | undefined): boolean {
  if (te === undefined) return false;
  for (const coding of te.split(',')) if (coding.trim().toLowerCase() !== 'chunked') return true;
  return false;
}

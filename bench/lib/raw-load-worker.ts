// Reads a LoadSpec on stdin, runs it, prints a LoadResult as JSON: the same load as load-worker.ts, with
// HTTP/1.1 written and read on plain keep-alive sockets instead of node's http client. The load generator
// shares the machine with the server under test; pgbench's own client, the yardstick of the acceptance
// benchmarks, spends about 30 µs of CPU per insert here, node's http client about 130 µs per request.
// Each connection has one request in flight; a response is read by its Content-Length (or to the end of a
// chunked body), and a `Connection: close` answer opens a new connection.
import net from 'node:net';
import type { LoadSpec } from './load.js';
import { LoadTally } from './load-tally.js';
import { readSpec } from './worker-process.js';

const spec = await readSpec<LoadSpec>();
const u = new URL(spec.url);
const method = spec.method ?? 'GET';
const fixedHeaders = Object.entries(spec.headers ?? {})
  .filter(([k]) => !(spec.keys && spec.keys.length > 0 && k.toLowerCase() === 'authorization'))
  .map(([k, v]) => `${k}: ${v}\r\n`)
  .join('');
const head = `${method} ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\n${fixedHeaders}`;
const tally = new LoadTally(spec);
const CRLF2 = Buffer.from('\r\n\r\n');
const CHUNKED_END = Buffer.from('\r\n0\r\n\r\n');

function request(): Buffer {
  const { body, key } = tally.next();
  let text = head;
  if (key) text += `authorization: Bearer ${key}\r\n`;
  if (body !== undefined) text += `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  else text += '\r\n';
  return Buffer.from(text, 'utf8');
}

/** Where a complete response in `buf` ends, with its status and whether the server closes; null: not complete yet. */
function parse(buf: Buffer): { end: number; status: number; close: boolean; bodyAt: number } | null {
  const h = buf.indexOf(CRLF2);
  if (h < 0) return null;
  const headers = buf.toString('latin1', 0, h).toLowerCase();
  const status = Number(headers.slice(9, 12));
  const close = /\r\nconnection: *close/.test(headers);
  const bodyAt = h + 4;
  const len = /\r\ncontent-length: *(\d+)/.exec(headers);
  if (len) {
    const end = bodyAt + Number(len[1]);
    return buf.length >= end ? { end, status, close, bodyAt } : null;
  }
  if (/\r\ntransfer-encoding: *chunked/.test(headers)) {
    const at = buf.indexOf(CHUNKED_END, bodyAt - 2);
    return at < 0 ? null : { end: at + CHUNKED_END.length, status, close, bodyAt };
  }
  // no length: the body ends with the connection (none of the gateway's answers)
  return { end: buf.length, status, close: true, bodyAt };
}

/** One connection's loop: a request, its response, the next, until the time is up (a closed one is opened again). */
function connection(): Promise<void> {
  return new Promise((resolve) => {
    const open = () => {
      let buf: Buffer = Buffer.alloc(0);
      let t0 = 0;
      let waiting = false;
      const next = () => {
        if (performance.now() >= tally.end) {
          socket.destroy();
          return;
        }
        t0 = performance.now();
        waiting = true;
        socket.write(request());
      };
      const socket = net.connect({ host: u.hostname, port: Number(u.port || 80), noDelay: true }, next);
      socket.on('data', (chunk: Buffer) => {
        buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
        const r = parse(buf);
        if (!r) return;
        waiting = false;
        const s = r.status;
        if (tally.isOk(s)) tally.answered(performance.now() - t0);
        else {
          tally.fail(String(s));
          if (tally.wantsSample()) tally.keepSample(`${s} ${buf.toString('utf8', r.bodyAt, Math.min(r.end, r.bodyAt + 300))}`);
        }
        buf = buf.subarray(r.end);
        if (r.close) socket.destroy();
        else next();
      });
      socket.on('error', (e: NodeJS.ErrnoException) => {
        if (waiting) tally.fail(e.code ?? e.message);
        waiting = false;
      });
      socket.on('close', () => {
        if (waiting) tally.fail('closed by the server');
        if (performance.now() < tally.end) open();
        else resolve();
      });
    };
    open();
  });
}

const result = await tally.run(connection);
process.stdout.write(JSON.stringify(result));

/**
 * Bodies above the limit, sent by clients that keep streaming (issue 13, finding 7): the whole gateway over a
 * real socket. A client writing 70 MiB to POST /api/v2/media, or 11 MB to a JSON route, must receive the 413
 * in the SPEC.md envelope (`data.maxBytes`) and be able to read it, not EPIPE/ECONNRESET: the gateway stops
 * storing, answers with `Connection: close`, drains a bounded amount of the rest and only then closes.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const UPLOAD_MAX = 64 * MiB;
const JSON_MAX = 10 * MiB;

let g: TestGateway;
let key: string;
let host: string;
let port: number;

before(async () => {
  g = await startTestGateway({ label: 'uplimit' });
  key = (await g.createInstance('up', { link: false })).apiKey;
  const u = new URL(g.url);
  host = u.hostname;
  port = Number(u.port);
});
after(async () => g.stop());

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** request body bytes handed to the socket when the answer's headers arrived */
  sentAtResponse: number;
  /** an error the client saw after it had the whole answer (the server cut a client that kept sending) */
  lateError: string | null;
}

const BOUNDARY = 'mgwLimitBoundary0123';
const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);

/** `size` bytes of `fill`, in 64 KiB chunks from one reused buffer, framed by `prefix` and `suffix`. */
function* body(prefix: Buffer, size: number, suffix: Buffer, fill = 0x5a): Generator<Buffer> {
  const block = Buffer.alloc(64 * KiB, fill);
  yield prefix;
  for (let left = size; left > 0; left -= block.length) yield left >= block.length ? block : block.subarray(0, left);
  yield suffix;
}
const lengthOf = (prefix: Buffer, size: number, suffix: Buffer) => prefix.length + size + suffix.length;

/**
 * node:http client that writes the WHOLE body whatever the server answers meanwhile (as a naive uploader
 * does), honouring backpressure. Resolves when the answer has been read to its end; rejects if the client
 * never gets a complete answer.
 */
function pushAll(urlPath: string, headers: Record<string, string | number>, chunks: Iterable<Buffer>): Promise<Reply> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let reply: Omit<Reply, 'lateError'> | null = null;
    let late: string | null = null;
    let settled = false;
    /** the client has written everything, or its writing ended in an error */
    let writeDone = false;
    const finish = () => {
      if (settled || !reply || !writeDone) return;
      settled = true;
      resolve({ ...reply, lateError: late });
    };
    const req = http.request({ host, port, method: 'POST', path: urlPath, headers: { authorization: `Bearer ${key}`, ...headers } });
    req.setMaxListeners(0);
    req.on('response', (res) => {
      const sentAtResponse = sent;
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        reply = { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString('utf8'), sentAtResponse };
        finish();
      });
      res.on('error', (err) => !settled && reject(new Error(`answer cut while reading it: ${err.message}`)));
    });
    req.on('finish', () => {
      writeDone = true;
      finish();
    });
    req.on('error', (err) => {
      writeDone = true;
      if (reply) {
        late = (err as NodeJS.ErrnoException).code ?? err.message;
        finish();
      } else if (!settled) {
        settled = true;
        reject(new Error(`no complete answer: ${(err as NodeJS.ErrnoException).code ?? err.message} after ${sent} bytes`));
      }
    });
    req.on('close', () => {
      writeDone = true;
      setImmediate(finish);
    });
    void (async () => {
      for (const chunk of chunks) {
        if (req.destroyed) return;
        sent += chunk.length;
        if (!req.write(chunk)) {
          await new Promise<void>((r) => {
            req.once('drain', r);
            req.once('close', r);
          });
        }
      }
      if (!req.destroyed) req.end();
    })();
  });
}

/**
 * The least cooperative client: a raw socket (half-open allowed) that sends a chunked body until the socket
 * fails, whatever arrives meanwhile, and collects whatever the server answered.
 */
function rawChunked(urlPath: string, contentType: string, chunks: Iterable<Buffer>): Promise<{ head: string; body: string; written: number }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port, allowHalfOpen: true });
    const received: Buffer[] = [];
    let written = 0;
    let done = false;
    socket.on('data', (c: Buffer) => received.push(c));
    const end = () => {
      if (done) return;
      done = true;
      socket.destroy();
      const all = Buffer.concat(received).toString('utf8');
      const split = all.indexOf('\r\n\r\n');
      if (split < 0) return reject(new Error(`no answer received (${written} bytes written)`));
      resolve({ head: all.slice(0, split + 2), body: all.slice(split + 4), written });
    };
    socket.on('error', end);
    socket.on('close', end);
    socket.on('connect', () => {
      void (async () => {
        socket.write(`POST ${urlPath} HTTP/1.1\r\nHost: ${host}:${port}\r\nAuthorization: Bearer ${key}\r\nContent-Type: ${contentType}\r\nTransfer-Encoding: chunked\r\n\r\n`);
        for (const chunk of chunks) {
          if (done || socket.destroyed) return;
          written += chunk.length;
          const ok = socket.write(Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]));
          if (!ok) {
            await new Promise<void>((r) => {
              socket.once('drain', r);
              socket.once('close', r);
            });
          }
        }
        if (!socket.destroyed) socket.end('0\r\n\r\n');
      })();
    });
  });
}

async function mediaFiles(): Promise<string[]> {
  const root = path.join(g.gw.media.store.root);
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else out.push(p);
    }
  };
  await walk(root);
  return out.sort();
}

function assert413(r: Reply, maxBytes: number): void {
  assert.equal(r.status, 413, r.body);
  const parsed = JSON.parse(r.body) as { success: boolean; code: string; error: string; data: { maxBytes: number } };
  assert.equal(parsed.success, false);
  assert.equal(parsed.code, 'PAYLOAD_TOO_LARGE');
  assert.equal(parsed.data.maxBytes, maxBytes);
  assert.equal(r.headers.connection, 'close');
}

describe('POST /api/v2/media above 64 MiB, from a client that keeps streaming', () => {
  test('70 MiB chunked (no length): the 413 arrives and is read whole, the connection ends cleanly', async () => {
    const before = await mediaFiles();
    const r = await pushAll(
      '/api/v2/media',
      { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'transfer-encoding': 'chunked' },
      body(head, 70 * MiB, tail),
    );
    assert413(r, UPLOAD_MAX);
    assert.ok(r.sentAtResponse >= UPLOAD_MAX, `refused as the limit was crossed (at ${r.sentAtResponse})`);
    // the 6 MiB after the limit are within what the gateway drains: the client finishes without any error
    assert.equal(r.lateError, null);
    // Whether the answer reaches the client before it has handed over its last 6 MiB depends on the socket
    // buffers (loopback's hold several MiB) and the machine's speed, so it is not asserted here: that the gateway
    // answers mid-stream and stops reading is the raw client's test below (400 MiB, cut off well before the end).
    assert.deepEqual(await mediaFiles(), before, 'nothing stored, no temp file left');
  });

  test('70 MiB with Content-Length: answered at once, before the body is read; the answer is readable', async () => {
    const r = await pushAll(
      '/api/v2/media',
      { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': lengthOf(head, 70 * MiB, tail) },
      body(head, 70 * MiB, tail),
    );
    assert413(r, UPLOAD_MAX);
    assert.ok(r.sentAtResponse < 16 * MiB, `answered after ${r.sentAtResponse} bytes`);
  });

  test('a raw client that ignores the answer and the FIN is cut off after a bounded drain, the 413 in hand', async (t) => {
    const r = await rawChunked('/api/v2/media', `multipart/form-data; boundary=${BOUNDARY}`, body(head, 400 * MiB, tail));
    t.diagnostic(`client wrote ${(r.written / MiB).toFixed(1)} MiB before the gateway closed`);
    assert.match(r.head, /^HTTP\/1\.1 413 /);
    assert.match(r.head, /\r\nconnection: close\r\n/i);
    const parsed = JSON.parse(r.body) as { code: string; data: { maxBytes: number } };
    assert.equal(parsed.code, 'PAYLOAD_TOO_LARGE');
    assert.equal(parsed.data.maxBytes, UPLOAD_MAX);
    assert.ok(r.written >= UPLOAD_MAX, `the limit was crossed (${r.written})`);
    // 64 MiB read and refused, at most 16 MiB drained after the answer, plus what the socket buffers hold
    assert.ok(r.written < UPLOAD_MAX + 48 * MiB, `the gateway kept reading: ${(r.written / MiB).toFixed(1)} MiB written`);
  });

  test('fetch with a streamed body (duplex: half) reads the 413 envelope', async () => {
    const stream = Readable.toWeb(Readable.from(body(head, 70 * MiB, tail))) as ReadableStream<Uint8Array>;
    const res = await fetch(`${g.url}/api/v2/media`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
      body: stream,
      duplex: 'half',
    } as RequestInit & { duplex: 'half' });
    assert.equal(res.status, 413);
    const parsed = (await res.json()) as { code: string; data: { maxBytes: number } };
    assert.equal(parsed.code, 'PAYLOAD_TOO_LARGE');
    assert.equal(parsed.data.maxBytes, UPLOAD_MAX);
  });

  test('the gateway keeps serving on new connections afterwards', async () => {
    const r = await g.api(key, 'GET', '/api/v2/queue');
    assert.ok(r.status < 500, r.text);
  });
});

describe('a JSON body above 10 MB on a JSON route, from a client that keeps streaming', () => {
  const jsonHead = Buffer.from('{"phone":"4915112345678","message":"');
  const jsonTail = Buffer.from('"}');

  test('40 MB chunked: 413 PAYLOAD_TOO_LARGE with data.maxBytes, read whole', async () => {
    const r = await pushAll(
      '/api/v2/send-message',
      { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      body(jsonHead, 40 * MiB, jsonTail, 0x61),
    );
    assert413(r, JSON_MAX);
    assert.ok(r.sentAtResponse < 40 * MiB, `answered after ${r.sentAtResponse} bytes, while the client was still sending`);
  });

  test('11 MB with Content-Length: answered at once, readable', async () => {
    const r = await pushAll(
      '/api/v2/send-message',
      { 'content-type': 'application/json', 'content-length': lengthOf(jsonHead, 11 * MiB, jsonTail) },
      body(jsonHead, 11 * MiB, jsonTail, 0x61),
    );
    assert413(r, JSON_MAX);
    assert.ok(r.sentAtResponse < 11 * MiB, `answered after ${r.sentAtResponse} bytes`);
  });
});

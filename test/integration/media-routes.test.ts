/**
 * The media endpoints over real HTTP: a tiny Koa app stands in for the gateway's auth (instance from a test
 * header) and error boundary (SPEC.md envelope), around the real router, store and PostgreSQL.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readdir, rm, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import Koa from 'koa';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { DomainError } from '../../src/errors.js';
import { createMediaStore, type MediaStore } from '../../src/media/store.js';
import { contentDisposition, createMediaRouter } from '../../src/http/routes/media.js';
import { requestHandler } from '../../src/http/handler.js';
import { normaliseMimetype, parseMimetype, sameMimetype } from '../../src/media/mimetype.js';
import { cleanFilename, incomingMediaBlock, messageMediaView, type MediaRecord } from '../../src/media/record.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const UPLOAD_MAX = 64 * MiB;

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

let db: TestDb;
let dataDir: string;
let store: MediaStore;
let server: http.Server;
let port: number;
let instA: string;
let instB: string;
const disk = { free: 100 * 1024 ** 3 };

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** request body bytes the client had handed to its socket when the answer arrived */
  sentAtResponse: number;
}

const json = (r: Reply) => JSON.parse(r.body.toString('utf8')) as Record<string, unknown> & { data: Record<string, unknown> };

/**
 * Send a request whose body comes from `body` (respecting backpressure) and stop sending as soon as the
 * answer arrives: a server that refuses early must not need the rest.
 */
function request(method: string, urlPath: string, opts: { instance: string; headers?: Record<string, string | number>; body?: Buffer | (() => AsyncGenerator<Buffer>); agent?: http.Agent }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, agent: opts.agent, headers: { 'x-test-instance': opts.instance, ...opts.headers } });
    req.on('response', (res) => {
      answered = true;
      const sentAtResponse = sent;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), sentAtResponse }));
      res.on('error', reject);
    });
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    const body = opts.body;
    if (!body) return void req.end();
    if (Buffer.isBuffer(body)) return void req.end(body);
    void (async () => {
      try {
        for await (const chunk of body()) {
          if (answered || req.destroyed) break;
          sent += chunk.length;
          if (!req.write(chunk)) {
            await new Promise<void>((r) => {
              const done = () => r();
              req.once('drain', done);
              req.once('close', done);
              req.once('response', done);
            });
          }
        }
        if (!answered && !req.destroyed) req.end();
      } catch (err) {
        if (!answered) reject(err);
      }
    })();
  });
}

const BOUNDARY = '----mgwTestBoundary7MA4YWxkTrZu0gW';
const MP_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

type FormPart = { name: string; value: string } | { name: string; filename?: string; type?: string; data: Buffer };
function form(parts: FormPart[]): Buffer {
  const out: Buffer[] = [];
  for (const p of parts) {
    if ('value' in p) {
      out.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value}\r\n`));
    } else {
      const fn = p.filename !== undefined ? `; filename="${p.filename}"` : '';
      const ct = p.type ? `\r\nContent-Type: ${p.type}` : '';
      out.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"${fn}${ct}\r\n\r\n`), p.data, Buffer.from('\r\n'));
    }
  }
  out.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(out);
}

/** A multipart body carrying a `size`-byte file, generated chunk by chunk from one reused buffer. */
function streamedForm(size: number): { length: number; body: () => AsyncGenerator<Buffer> } {
  const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  const block = Buffer.alloc(64 * KiB, 0x5a);
  return {
    length: head.length + size + tail.length,
    body: async function* () {
      yield head;
      for (let sent = 0; sent < size; sent += block.length) yield size - sent >= block.length ? block : block.subarray(0, size - sent);
      yield tail;
    },
  };
}

const upload = (instance: string, parts: FormPart[], agent?: http.Agent) =>
  request('POST', '/api/v2/media', { instance, headers: { 'content-type': MP_TYPE }, body: form(parts), agent });

async function filesUnder(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { recursive: true })).map(String).filter((f) => /(^|\/)\.?md_/.test(f));
  } catch {
    return [];
  }
}

before(async () => {
  db = await createTestDb('media_routes');
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-media-routes-'));
  instA = randomUUID();
  instB = randomUUID();
  for (const [id, name] of [[instA, 'routes-a'], [instB, 'routes-b']]) {
    await db.pool.query(`INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')`, [id, name]);
  }
  store = createMediaStore({ pool: db.pool, dataDir, freeDiskBytes: async () => disk.free });

  const app = new Koa();
  app.silent = true;
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      ctx.status = err.status;
      ctx.body = { success: false, error: err.message, code: err.code, data: err.data, ...err.extra };
    }
  });
  const router = createMediaRouter({ store, uploadMaxBytes: UPLOAD_MAX, getInstanceId: (ctx) => ctx.get('x-test-instance') });
  app.use(router.routes());
  server = http.createServer(requestHandler(app));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await db.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('POST /api/v2/media', () => {
  test('201 with the stored media record', async () => {
    const png = Buffer.from('\x89PNG\r\n\x1a\n a picture');
    const r = await upload(instA, [{ name: 'file', filename: 'cat.png', type: 'image/png', data: png }]);
    assert.equal(r.status, 201, r.body.toString());
    const { success, data } = json(r);
    assert.equal(success, true);
    assert.equal(data.stored, true);
    assert.match(String(data.mediaId), /^md_[0-9a-f]{24}$/);
    assert.equal(data.url, `/api/v2/media/${data.mediaId}`);
    assert.equal(data.size, png.length);
    const hours = (Date.parse(String(data.expiresAt)) - Date.now()) / 3_600_000;
    assert.ok(hours > 71.9 && hours <= 72, `expires in ${hours} h`);
  });

  test('filename and mimetype fields win over the part headers, in any order', async () => {
    const r = await upload(instA, [
      { name: 'file', filename: 'upload.bin', type: 'application/octet-stream', data: Buffer.from('RIFF....WEBP') },
      { name: 'mimetype', value: 'image/webp' },
      { name: 'filename', value: 'sticker.webp' },
    ]);
    assert.equal(r.status, 201);
    const meta = json(await request('GET', `/api/v2/media/${json(r).data.mediaId}`, { instance: instA }));
    assert.equal(meta.data.mimetype, 'image/webp');
    assert.equal(meta.data.filename, 'sticker.webp');
  });

  test('a mimetype field is taken or refused as the send rules read a media type (src/media/mimetype.ts), stored in one spelling', async () => {
    // spellings the upload's own pattern read otherwise than the shared parser: spaces around `=`, a quoted-pair,
    // RFC 2045 token characters, a parameter named twice, a control or non-Latin-1 character inside quotes
    const cases: { given: string; stored: string | null }[] = [
      { given: 'audio/ogg; codecs = opus', stored: 'audio/ogg;codecs=opus' },
      { given: 'Audio/OGG;Codecs="opus"', stored: 'audio/ogg;codecs=opus' },
      { given: 'text/plain; title="a \\"b\\""', stored: 'text/plain;title="a \\"b\\""' },
      { given: 'application/x~y', stored: 'application/x~y' },
      { given: 'text/plain; charset=utf-8; charset=latin1', stored: null },
      { given: 'text/plain; x="\u0001"', stored: null },
      { given: 'text/plain; x="\u20ac"', stored: null },
    ];
    for (const { given, stored } of cases) {
      assert.equal(parseMimetype(given) !== null, stored !== null, `the shared parser's verdict on ${JSON.stringify(given)}`);
      const r = await upload(instA, [{ name: 'file', filename: 'a.bin', data: Buffer.from('x') }, { name: 'mimetype', value: given }]);
      if (stored === null) {
        assert.equal(r.status, 400, `${JSON.stringify(given)}: ${r.body.toString()}`);
        assert.equal(json(r).code, 'VALIDATION_FAILED');
        assert.equal(json(r).data.field, 'mimetype');
        continue;
      }
      assert.equal(r.status, 201, `${JSON.stringify(given)}: ${r.body.toString()}`);
      const id = String(json(r).data.mediaId);
      assert.equal(json(await request('GET', `/api/v2/media/${id}`, { instance: instA })).data.mimetype, stored, JSON.stringify(given));
      const served = await request('GET', `/api/v2/media/${id}?download=1`, { instance: instA });
      assert.equal(served.status, 200);
      assert.equal(served.headers['content-type'], stored);
      assert.ok(sameMimetype(String(served.headers['content-type']), given), `${JSON.stringify(given)} is served as the same type`);
    }
  });

  test("a file part's own Content-Type is read the same way: stored in one spelling, or 400 on mimetype when it is not a media type (unless the field mimetype decides)", async () => {
    // found from the outside: these were stored as application/octet-stream, where docs/api.md says 400
    for (const type of ['x', '/png', 'image/', 'image/png;;']) {
      const r = await upload(instA, [{ name: 'file', filename: 'a.bin', type, data: Buffer.from('x') }]);
      assert.equal(r.status, 400, `${JSON.stringify(type)}: ${r.body.toString()}`);
      assert.equal(json(r).code, 'VALIDATION_FAILED');
      assert.equal(json(r).data.field, 'mimetype');
    }
    const spelled = await upload(instA, [{ name: 'file', filename: 'a.png', type: 'Image/PNG', data: Buffer.from('x') }]);
    assert.equal(spelled.status, 201, spelled.body.toString());
    assert.equal(json(await request('GET', `/api/v2/media/${json(spelled).data.mediaId}`, { instance: instA })).data.mimetype, 'image/png');
    const decided = await upload(instA, [{ name: 'file', filename: 'a.png', type: 'x', data: Buffer.from('x') }, { name: 'mimetype', value: 'image/png' }]);
    assert.equal(decided.status, 201, decided.body.toString());
  });

  test('400 VALIDATION_FAILED: no file, an empty file, a bad mimetype, not multipart', async () => {
    for (const r of [
      await upload(instA, [{ name: 'filename', value: 'x.png' }]),
      await upload(instA, [{ name: 'file', filename: 'empty.png', type: 'image/png', data: Buffer.alloc(0) }]),
      await request('POST', '/api/v2/media', { instance: instA, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"file":"x"}') }),
    ]) {
      assert.equal(r.status, 400, r.body.toString());
      assert.equal(json(r).code, 'VALIDATION_FAILED');
      assert.equal(json(r).data.field, 'file');
    }
    const bad = await upload(instA, [{ name: 'file', filename: 'a', data: Buffer.from('x') }, { name: 'mimetype', value: 'not a type' }]);
    assert.equal(bad.status, 400);
    assert.equal(json(bad).data.field, 'mimetype');
    assert.deepEqual((await filesUnder(store.root)).filter((f) => f.endsWith('.tmp')), [], 'no temp files left');
  });

  test('a content-encoded upload is 415 UNSUPPORTED_MEDIA_TYPE, nothing stored (it was stored as it came)', async () => {
    const before = await filesUnder(store.root);
    const body = form([{ name: 'file', filename: 'cat.png', type: 'image/png', data: Buffer.from('\x89PNG\r\n\x1a\n a picture') }]);
    for (const encoding of ['gzip', 'br', 'deflate', 'x-unknown']) {
      const r = await request('POST', '/api/v2/media', { instance: instA, headers: { 'content-type': MP_TYPE, 'content-encoding': encoding }, body });
      assert.equal(r.status, 415, `${encoding}: ${r.body.toString()}`);
      assert.equal(json(r).code, 'UNSUPPORTED_MEDIA_TYPE');
    }
    // a transfer coding besides chunked likewise (Node undoes only the chunked framing)
    const te = await request('POST', '/api/v2/media', { instance: instA, headers: { 'content-type': MP_TYPE, 'transfer-encoding': 'gzip, chunked' }, body });
    assert.equal(te.status, 415, te.body.toString());
    const plain = await request('POST', '/api/v2/media', { instance: instA, headers: { 'content-type': MP_TYPE, 'content-encoding': 'identity' }, body });
    assert.equal(plain.status, 201, plain.body.toString());
    assert.equal((await filesUnder(store.root)).length, before.length + 1, 'only the identity upload stored');
  });

  test('a 65 MiB upload with Content-Length is refused with 413 before its body is read', async () => {
    const big = streamedForm(65 * MiB);
    const r = await request('POST', '/api/v2/media', {
      instance: instA,
      headers: { 'content-type': MP_TYPE, 'content-length': big.length },
      body: big.body,
    });
    assert.equal(r.status, 413);
    assert.equal(json(r).code, 'PAYLOAD_TOO_LARGE');
    assert.equal(json(r).data.maxBytes, UPLOAD_MAX);
    assert.ok(r.sentAtResponse < 16 * MiB, `client had sent ${r.sentAtResponse} bytes when refused`);
    assert.equal(r.headers.connection, 'close');
  });

  test('a 65 MiB chunked upload (no length) is refused with 413 while streaming, never held in memory', async (t) => {
    const before = await filesUnder(store.root);
    const big = streamedForm(65 * MiB);
    // Memory that is still reachable, sampled after a full collection: garbage from socket chunks does not
    // count, a body held whole would (65 MiB).
    const retained = () => {
      // twice: V8 frees the backing stores of unreachable buffers after a full collection, concurrently, and
      // the next collection waits for that. With one, socket chunks already garbage counted now and then (a
      // peak of 47 MiB in one full run; 6–25.5 MiB in runs alone, 1.3–1.6 MiB with two; a drain that keeps
      // what it skips: 49.6 MiB)
      gc();
      gc();
      const m = process.memoryUsage();
      return m.arrayBuffers + m.heapUsed;
    };
    const base = retained();
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, retained() - base)), 100);
    const r = await request('POST', '/api/v2/media', {
      instance: instA,
      headers: { 'content-type': MP_TYPE, 'transfer-encoding': 'chunked' },
      body: big.body,
    });
    clearInterval(sampler);
    assert.equal(r.status, 413, r.body.toString());
    assert.equal(json(r).data.maxBytes, UPLOAD_MAX);
    assert.ok(r.sentAtResponse >= UPLOAD_MAX, 'refused on crossing the limit, as it streamed');
    t.diagnostic(`peak retained growth ${(peak / MiB).toFixed(1)} MiB`);
    assert.ok(peak < 32 * MiB, `retained memory grew by ${(peak / MiB).toFixed(1)} MiB`);
    assert.deepEqual(await filesUnder(store.root), before, 'nothing stored, no temp file left');
  });

  test('above the 16 MiB store ceiling but within the upload limit: 507 reason too_large', async () => {
    const mid = streamedForm(20 * MiB);
    const r = await request('POST', '/api/v2/media', { instance: instA, headers: { 'content-type': MP_TYPE, 'content-length': mid.length }, body: mid.body });
    assert.equal(r.status, 507, r.body.toString());
    const body = json(r);
    assert.equal(body.code, 'MEDIA_STORE_UNAVAILABLE');
    assert.equal(body.reason, 'too_large');
  });

  test('low disk: 507 reason low_disk', async () => {
    disk.free = 1024 ** 3;
    try {
      const r = await upload(instA, [{ name: 'file', filename: 'a.png', type: 'image/png', data: Buffer.from('x') }]);
      assert.equal(r.status, 507);
      assert.equal(json(r).reason, 'low_disk');
    } finally {
      disk.free = 100 * 1024 ** 3;
    }
  });

  test('a keep-alive connection stays usable after an upload', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const one = await upload(instA, [{ name: 'file', filename: 'a.txt', data: Buffer.from('one') }], agent);
      const two = await upload(instA, [{ name: 'file', filename: 'b.txt', data: Buffer.from('two') }], agent);
      assert.equal(one.status, 201);
      assert.equal(two.status, 201);
    } finally {
      agent.destroy();
    }
  });
});

describe('GET and DELETE /api/v2/media/:mediaId', () => {
  test('metadata, then the raw bytes with safe download headers', async () => {
    const data = Buffer.alloc(300 * KiB);
    for (let i = 0; i < data.length; i++) data[i] = (i * 31) & 0xff;
    const nasty = 'evil"\r\nSet-Cookie: a=1; Grüße 日本.pdf';
    const up = json(await upload(instA, [{ name: 'file', filename: 'x', type: 'application/pdf', data }, { name: 'filename', value: nasty }]));
    const id = String(up.data.mediaId);

    const meta = json(await request('GET', `/api/v2/media/${id}`, { instance: instA }));
    assert.deepEqual(Object.keys(meta.data).sort(), ['createdAt', 'expiresAt', 'filename', 'mediaId', 'mimetype', 'size', 'url']);
    assert.equal(meta.data.size, data.length);
    assert.equal(meta.data.mimetype, 'application/pdf');

    const dl = await request('GET', `/api/v2/media/${id}?download=1`, { instance: instA });
    assert.equal(dl.status, 200);
    assert.equal(createHash('sha256').update(dl.body).digest('hex'), createHash('sha256').update(data).digest('hex'));
    assert.equal(dl.headers['content-type'], 'application/pdf');
    assert.equal(dl.headers['content-length'], String(data.length));
    assert.equal(dl.headers['cache-control'], 'private, max-age=300');
    assert.equal(dl.headers['set-cookie'], undefined, 'no header injected through the filename');
    const cd = String(dl.headers['content-disposition']);
    assert.match(cd, /^attachment; filename="[^"\\\r\n]*"; filename\*=UTF-8''[A-Za-z0-9%!._~-]+$/);
    const star = /filename\*=UTF-8''(.+)$/.exec(cd)?.[1] ?? '';
    assert.equal(decodeURIComponent(star), 'evil"Set-Cookie: a=1; Grüße 日本.pdf');

    const head = await request('HEAD', `/api/v2/media/${id}?download=1`, { instance: instA });
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-length'], String(data.length));
    assert.equal(head.body.length, 0);
  });

  test('DELETE, then 404; another instance gets 404 for all of it; a lost file is 410', async () => {
    const id = String(json(await upload(instA, [{ name: 'file', filename: 'a.txt', data: Buffer.from('abc') }])).data.mediaId);
    for (const r of [
      await request('GET', `/api/v2/media/${id}`, { instance: instB }),
      await request('GET', `/api/v2/media/${id}?download=1`, { instance: instB }),
      await request('DELETE', `/api/v2/media/${id}`, { instance: instB }),
    ]) {
      assert.equal(r.status, 404);
      assert.equal(json(r).code, 'MEDIA_NOT_FOUND');
    }
    const del = await request('DELETE', `/api/v2/media/${id}`, { instance: instA });
    assert.equal(del.status, 200);
    assert.deepEqual(json(del), { success: true, data: { mediaId: id, deleted: true } });
    assert.equal((await request('GET', `/api/v2/media/${id}`, { instance: instA })).status, 404);

    const lost = String(json(await upload(instA, [{ name: 'file', filename: 'b.txt', data: Buffer.from('abc') }])).data.mediaId);
    await unlink(path.join(store.root, instA, lost));
    for (const q of ['', '?download=1']) {
      const r = await request('GET', `/api/v2/media/${lost}${q}`, { instance: instA });
      assert.equal(r.status, 410);
      assert.equal(json(r).code, 'MEDIA_GONE');
    }
  });
});

describe('media view helpers', () => {
  test('normaliseMimetype', () => {
    assert.equal(normaliseMimetype('Audio/OGG; codecs=opus'), 'audio/ogg;codecs=opus');
    assert.equal(normaliseMimetype('image/png'), 'image/png');
    for (const bad of ['png', 'image/', 'text/html\r\nX: y', 'a/b; c', '', null, undefined]) assert.equal(normaliseMimetype(bad), null, String(bad));
  });

  test('cleanFilename keeps a name, never a path', () => {
    assert.equal(cleanFilename('C:\\Users\\x\\report.pdf'), 'report.pdf');
    assert.equal(cleanFilename('../../etc/passwd'), 'passwd');
    assert.equal(cleanFilename('a\r\nb.txt'), 'ab.txt');
    assert.equal(cleanFilename('..'), null);
    assert.equal(cleanFilename('   '), null);
  });

  test('contentDisposition', () => {
    assert.equal(contentDisposition('a b.pdf', 'md_x'), `attachment; filename="a b.pdf"; filename*=UTF-8''a%20b.pdf`);
    assert.equal(contentDisposition(null, 'md_x'), `attachment; filename="md_x"; filename*=UTF-8''md_x`);
    assert.equal(contentDisposition('100%"x.txt', 'md_x'), `attachment; filename="100__x.txt"; filename*=UTF-8''100%25%22x.txt`);
    // never a path, whatever a record holds: the name alone (a backslash separates as in a Windows path)
    assert.equal(contentDisposition('../..\\evil.png', 'md_x'), `attachment; filename="evil.png"; filename*=UTF-8''evil.png`);
    assert.equal(contentDisposition('../', 'md_x'), `attachment; filename="md_x"; filename*=UTF-8''md_x`);
  });

  test('incoming media block and message media view', () => {
    const info = { mimetype: 'image/jpeg', filename: null, size: 10 };
    const rec: MediaRecord = { mediaId: 'md_aaaaaaaaaaaaaaaaaaaaaaaa', instanceId: instA, origin: 'incoming', messageId: 'm', mimetype: 'image/jpeg', filename: null, size: 10, sha256: '', createdAt: 0, expiresAt: 72 * 3_600_000 };
    assert.deepEqual(incomingMediaBlock(info, false, null), info);
    assert.deepEqual(incomingMediaBlock(info, true, rec), { ...info, stored: true, mediaId: rec.mediaId, url: `/api/v2/media/${rec.mediaId}`, expiresAt: '1970-01-04T00:00:00.000Z' });
    assert.deepEqual(messageMediaView(info, false, null), { ...info, stored: false, reason: 'store_disabled' });
    assert.deepEqual(messageMediaView(info, true, rec).stored, true);
  });
});

/**
 * Media sources of a send: checked at acceptance, turned into bytes at dispatch. URL sources are served by a
 * loopback server on 127.0.0.2 that stands in for a public host (exempted by `allowAddress`; every other
 * loopback address stays refused), names resolve through an injected resolver.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { simulatedClock } from '../../src/clock.js';
import { DomainError } from '../../src/errors.js';
import { createMediaStore, type MediaStore } from '../../src/media/store.js';
import { decodeBase64Media, resolveMediaSource, validateMediaSourceAtAcceptance, type MediaSourceDeps } from '../../src/media/resolve.js';
import type { Resolver } from '../../src/media/ssrf.js';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let db: TestDb;
let dataDir: string;
let store: MediaStore;
let clock: ReturnType<typeof simulatedClock>;
let server: http.Server;
let port: number;
let instA: string;
let instB: string;
const image = Buffer.from(Array.from({ length: 50_000 }, (_, i) => (i * 13) & 0xff));

/** `flip.example` answers the stand-in until `flipped`, then loopback (DNS rebinding between acceptance and dispatch) */
let flipped = false;
const resolver: Resolver = async (host) => {
  if (host === 'cdn.example') return [{ address: '127.0.0.2', family: 4 }];
  if (host === 'flip.example') return [{ address: flipped ? '127.0.0.1' : '127.0.0.2', family: 4 }];
  return [{ address: '93.184.216.34', family: 4 }];
};
const requests: string[] = [];

async function rejectsWith(p: Promise<unknown>, status: number, code: string, field?: string): Promise<DomainError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof DomainError, String(err));
    assert.equal(err.status, status, err.message);
    assert.equal(err.code, code);
    if (field) assert.equal(err.data.field, field);
    return err;
  }
  assert.fail(`expected ${status} ${code}`);
}

before(async () => {
  db = await createTestDb('media_resolve');
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'mgw-media-resolve-'));
  instA = randomUUID();
  instB = randomUUID();
  for (const [id, name] of [[instA, 'resolve-a'], [instB, 'resolve-b']]) {
    await db.pool.query(`INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')`, [id, name]);
  }
  clock = simulatedClock(Date.now());
  store = createMediaStore({ pool: db.pool, dataDir, clock, freeDiskBytes: async () => 1e12 });
  server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (req.url === '/pics/photo%20one.jpg') res.writeHead(200, { 'Content-Type': 'image/jpeg; charset=binary' }).end(image);
    else if (req.url === '/download') res.writeHead(200, { 'Content-Disposition': 'attachment; filename="report.pdf"' }).end(image);
    else res.writeHead(404).end('nope');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.2', r));
  port = (server.address() as AddressInfo).port;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await db.close();
  await rm(dataDir, { recursive: true, force: true });
});

const deps = (): MediaSourceDeps => ({ store, resolver, allowAddress: (a) => a === '127.0.0.2', clock });

describe('validateMediaSourceAtAcceptance', () => {
  test('exactly one source', async () => {
    await rejectsWith(validateMediaSourceAtAcceptance(instA, {}, deps()), 400, 'VALIDATION_FAILED', 'mediaUrl');
    await rejectsWith(validateMediaSourceAtAcceptance(instA, { mediaUrl: 'http://cdn.example/a', mediaId: 'md_x' }, deps()), 400, 'VALIDATION_FAILED', 'mediaId');
    await rejectsWith(validateMediaSourceAtAcceptance(instA, { mediaUrl: '  ' }, deps()), 400, 'VALIDATION_FAILED', 'mediaUrl');
  });

  test('mediaUrl must be public http(s), and is probed with one HEAD', async () => {
    const ok = `http://cdn.example:${port}/pics/photo%20one.jpg`;
    const from = requests.length;
    assert.deepEqual(await validateMediaSourceAtAcceptance(instA, { mediaUrl: ok }, deps()), { kind: 'url', url: ok, mimetype: 'image/jpeg' }, 'with the type the probe was told');
    assert.deepEqual(requests.slice(from), ['HEAD /pics/photo%20one.jpg'], 'one HEAD, the body is not fetched');
    for (const url of ['http://127.0.0.1/a', 'http://localhost/a', 'file:///etc/passwd', 'http://[::ffff:127.0.0.1]/', 'http://169.254.169.254/']) {
      await rejectsWith(validateMediaSourceAtAcceptance(instA, { mediaUrl: url }, deps()), 400, 'VALIDATION_FAILED', 'mediaUrl');
    }
    assert.deepEqual(requests.slice(from), ['HEAD /pics/photo%20one.jpg'], 'nothing was asked of a refused URL');
  });

  test('mediaUrl: an error answer of the target is refused at acceptance, naming the status', async () => {
    const err = await rejectsWith(validateMediaSourceAtAcceptance(instA, { mediaUrl: `http://cdn.example:${port}/missing` }, deps()), 400, 'VALIDATION_FAILED', 'mediaUrl');
    assert.equal(err.message, 'mediaUrl answered HTTP 404');
  });

  test('mediaUrl: the probe has its own deadline on its own clock (probeClock, probeTimeoutMs)', async () => {
    const silent = http.createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.2', r));
    let arrived = (): void => undefined;
    const request = new Promise<void>((r) => (arrived = r));
    silent.on('request', () => arrived());
    const probeClock = simulatedClock(Date.now());
    const pending = validateMediaSourceAtAcceptance(instA, { mediaUrl: `http://cdn.example:${(silent.address() as AddressInfo).port}/a.png` }, { ...deps(), probeClock, probeTimeoutMs: 2_000 });
    await request;
    probeClock.increment(2_000);
    const err = await rejectsWith(pending, 400, 'VALIDATION_FAILED', 'mediaUrl');
    assert.equal(err.message, 'mediaUrl could not be reached: no answer within 2000 ms');
    silent.closeAllConnections();
    await new Promise((r) => silent.close(r));
  });

  test('mediaBase64 needs a mimetype, no data: prefix, real base64, at most 7 MiB', async () => {
    const b64 = image.toString('base64');
    assert.deepEqual(await validateMediaSourceAtAcceptance(instA, { mediaBase64: b64, mimetype: 'image/png' }, deps()), { kind: 'base64', size: image.length });
    await rejectsWith(validateMediaSourceAtAcceptance(instA, { mediaBase64: b64 }, deps()), 400, 'VALIDATION_FAILED', 'mimetype');
    await rejectsWith(validateMediaSourceAtAcceptance(instA, { mediaBase64: b64, mimetype: 'png' }, deps()), 400, 'VALIDATION_FAILED', 'mimetype');
    await rejectsWith(validateMediaSourceAtAcceptance(instA, { mediaBase64: `data:image/png;base64,${b64}`, mimetype: 'image/png' }, deps()), 400, 'VALIDATION_FAILED', 'mediaBase64');
    await rejectsWith(validateMediaSourceAtAcceptance(instA, { mediaBase64: 'not*base64!', mimetype: 'image/png' }, deps()), 400, 'VALIDATION_FAILED', 'mediaBase64');
    await rejectsWith(validateMediaSourceAtAcceptance(instA, { mediaBase64: 'QUJD=A==', mimetype: 'image/png' }, deps()), 400, 'VALIDATION_FAILED', 'mediaBase64');
    const over = Buffer.alloc(7 * MiB + 1).toString('base64');
    const err = await rejectsWith(validateMediaSourceAtAcceptance(instA, { mediaBase64: over, mimetype: 'image/png' }, deps()), 413, 'PAYLOAD_TOO_LARGE');
    assert.equal(err.data.maxBytes, 7 * MiB);
    const exact = Buffer.alloc(7 * MiB, 9).toString('base64');
    assert.equal((await validateMediaSourceAtAcceptance(instA, { mediaBase64: exact, mimetype: 'image/png' }, deps())).kind, 'base64');
  });

  test('base64 decoding tolerates line breaks and missing padding', () => {
    assert.equal(decodeBase64Media('QUJD\r\nREVG', 100).toString(), 'ABCDEF');
    assert.equal(decodeBase64Media('QUI', 100).toString(), 'AB');
    assert.equal(decodeBase64Media('QUI=', 100).toString(), 'AB');
  });

  test('mediaId must exist for this instance', async () => {
    const rec = await store.put(instA, { data: image, mimetype: 'image/jpeg', origin: 'upload' });
    const ok = await validateMediaSourceAtAcceptance(instA, { mediaId: rec.mediaId }, deps());
    assert.equal(ok.kind === 'id' && ok.record.mediaId, rec.mediaId);
    await rejectsWith(validateMediaSourceAtAcceptance(instB, { mediaId: rec.mediaId }, deps()), 404, 'MEDIA_NOT_FOUND');
    await rejectsWith(validateMediaSourceAtAcceptance(instA, { mediaId: 'md_000000000000000000000000' }, deps()), 404, 'MEDIA_NOT_FOUND');
  });
});

describe('resolveMediaSource', () => {
  test('mediaUrl: the bytes arrive intact, mimetype and filename from the response', async () => {
    const m = await resolveMediaSource(instA, { mediaUrl: `http://cdn.example:${port}/pics/photo%20one.jpg` }, deps());
    assert.equal(sha(Buffer.from(m.data, 'base64')), sha(image));
    assert.equal(m.mimetype, 'image/jpeg');
    assert.equal(m.filename, 'photo one.jpg');
    assert.equal(m.filesize, image.length);
    const d = await resolveMediaSource(instA, { mediaUrl: `http://cdn.example:${port}/download`, mimetype: 'application/pdf' }, deps());
    assert.equal(d.filename, 'report.pdf');
    assert.equal(d.mimetype, 'application/pdf');
  });

  test('mediaUrl: an error status is a validation failure', async () => {
    const err = await rejectsWith(resolveMediaSource(instA, { mediaUrl: `http://cdn.example:${port}/missing` }, deps()), 400, 'VALIDATION_FAILED', 'mediaUrl');
    assert.equal(err.data.status, 404);
  });

  test('mediaUrl accepted while public, refused at dispatch once its name points to loopback', async () => {
    const src = { mediaUrl: `http://flip.example:${port}/pics/photo%20one.jpg` };
    await validateMediaSourceAtAcceptance(instA, src, deps());
    flipped = true;
    const err = await rejectsWith(resolveMediaSource(instA, src, deps()), 400, 'VALIDATION_FAILED', 'mediaUrl');
    assert.equal(err.data.reason, 'loopback');
  });

  test('mediaBase64 and mediaId give the same bytes', async () => {
    const b = await resolveMediaSource(instA, { mediaBase64: image.toString('base64'), mimetype: 'image/jpeg', filename: 'x/y.jpg' }, deps());
    assert.equal(sha(Buffer.from(b.data, 'base64')), sha(image));
    assert.equal(b.filename, 'y.jpg');

    const rec = await store.put(instA, { data: image, mimetype: 'image/jpeg', filename: 'stored.jpg', origin: 'upload' });
    const s = await resolveMediaSource(instA, { mediaId: rec.mediaId }, deps());
    assert.equal(sha(Buffer.from(s.data, 'base64')), sha(image));
    assert.deepEqual([s.mimetype, s.filename, s.filesize], ['image/jpeg', 'stored.jpg', image.length]);
    await rejectsWith(resolveMediaSource(instB, { mediaId: rec.mediaId }, deps()), 404, 'MEDIA_NOT_FOUND');
  });

  test('a mediaId that expired between acceptance and dispatch is 404', async () => {
    const rec = await store.put(instA, { data: image, mimetype: 'image/jpeg', origin: 'upload' });
    await validateMediaSourceAtAcceptance(instA, { mediaId: rec.mediaId }, deps());
    clock.increment(72 * 3_600_000);
    await rejectsWith(resolveMediaSource(instA, { mediaId: rec.mediaId }, deps()), 404, 'MEDIA_NOT_FOUND');
  });
});

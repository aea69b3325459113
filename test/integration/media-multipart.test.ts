/**
 * The streaming multipart reader, fed from in-memory sources cut at random places (a boundary may be split
 * over any number of chunks), with payloads that contain near-boundaries. No sockets needed, but it belongs to
 * the upload path tested over HTTP in media-routes.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DomainError } from '../../src/errors.js';
import { boundaryOf, dispositionParams, readMultipart, type MultipartLimits } from '../../src/media/multipart.js';

const B = 'XyZzy-bound4ry';

function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

async function* cut(data: Buffer, rand: () => number, maxChunk: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < data.length; ) {
    const n = 1 + Math.floor(rand() * maxChunk);
    yield data.subarray(i, i + n);
    i += n;
  }
}

interface Parsed {
  name: string;
  filename: string | null;
  contentType: string | null;
  data: Buffer;
}

async function parseAll(source: AsyncIterable<Buffer>, limits: MultipartLimits = { fileMaxBytes: 1024 * 1024 }): Promise<Parsed[]> {
  const out: Parsed[] = [];
  for await (const part of readMultipart(source, B, limits)) {
    const chunks: Buffer[] = [];
    for await (const c of part.body) chunks.push(c);
    out.push({ name: part.name, filename: part.filename, contentType: part.contentType, data: Buffer.concat(chunks) });
  }
  return out;
}

async function rejectsWith(p: Promise<unknown>, status: number, code: string): Promise<DomainError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof DomainError, String(err));
    assert.equal(err.status, status, err.message);
    assert.equal(err.code, code);
    return err;
  }
  assert.fail('not rejected');
}

// a payload full of almost-delimiters
const tricky = Buffer.concat([
  Buffer.from(`\r\n--${B.slice(0, -1)}`),
  Buffer.from(`--${B}`), // no CRLF before it: not a delimiter
  Buffer.from(`\r\n-${B}\r\n`),
  Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7) & 0xff)),
  Buffer.from(`\r\n--${B.toLowerCase()}\r\n`),
  Buffer.from('\r\n\r\n'),
]);

const body = Buffer.concat([
  Buffer.from('preamble to ignore\r\n'),
  Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="filename"\r\n\r\nna\u00efve.bin\r\n`),
  Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="file"; filename="a \\"q\\".bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
  tricky,
  Buffer.from(`\r\n--${B}\r\nContent-Disposition: form-data; name="empty"\r\n\r\n`),
  Buffer.from(`\r\n--${B}--\r\nepilogue to ignore`),
]);

describe('readMultipart', () => {
  test('parses the same parts however the bytes are cut', async () => {
    const rand = seededRandom(42);
    for (const maxChunk of [1, 2, 3, 7, 16, 41, 100, 1000, 65536]) {
      for (let round = 0; round < 5; round++) {
        const parts = await parseAll(cut(body, rand, maxChunk));
        assert.deepEqual(
          parts.map((p) => [p.name, p.filename, p.contentType]),
          [
            ['filename', null, null],
            ['file', 'a "q".bin', 'application/octet-stream'],
            ['empty', null, null],
          ],
        );
        assert.equal(parts[0]?.data.toString('utf8'), 'na\u00efve.bin');
        assert.ok(parts[1]?.data.equals(tricky), `file bytes intact (maxChunk ${maxChunk})`);
        assert.equal(parts[2]?.data.length, 0);
      }
    }
  });

  test('an abandoned body is skipped when the next part is asked for', async () => {
    const names: string[] = [];
    for await (const part of readMultipart(cut(body, seededRandom(7), 13), B, { fileMaxBytes: 1024 * 1024 })) {
      names.push(part.name);
      for await (const c of part.body) {
        void c;
        break;
      }
    }
    assert.deepEqual(names, ['filename', 'file', 'empty']);
  });

  test('a file over its cap is refused with 413 as it crosses the cap, not at the end', async () => {
    let pulled = 0;
    async function* endless() {
      yield Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\n`);
      for (;;) {
        pulled += 1024;
        yield Buffer.alloc(1024, 1);
      }
    }
    const err = await rejectsWith(parseAll(endless(), { fileMaxBytes: 100 * 1024 }), 413, 'PAYLOAD_TOO_LARGE');
    assert.equal(err.data.maxBytes, 100 * 1024);
    assert.ok(pulled <= 102 * 1024, `pulled ${pulled} bytes`);
  });

  test('a part named by fileField is a file part even without filename', async () => {
    const src = Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="file"\r\n\r\n${'x'.repeat(70_000)}\r\n--${B}--`);
    const parts = await parseAll(cut(src, seededRandom(1), 5000), { fileMaxBytes: 100_000, fileField: 'file' });
    assert.equal(parts[0]?.data.length, 70_000);
    await rejectsWith(parseAll(cut(src, seededRandom(1), 5000), { fileMaxBytes: 100_000 }), 400, 'VALIDATION_FAILED');
  });

  const bad: [string, string, MultipartLimits?][] = [
    ['no boundary at all', 'just some bytes'],
    ['truncated body', `--${B}\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc`],
    ['truncated headers', `--${B}\r\nContent-Disposition: form-data; name="fi`],
    ['no closing delimiter', `--${B}\r\nContent-Disposition: form-data; name="a"\r\n\r\nv\r\n--${B}`],
    ['a part without a name', `--${B}\r\nContent-Disposition: form-data\r\n\r\nv\r\n--${B}--`],
    ['a part that is not form-data', `--${B}\r\nContent-Type: text/plain\r\n\r\nv\r\n--${B}--`],
    ['a bad header line', `--${B}\r\nno colon here\r\n\r\nv\r\n--${B}--`],
    ['headers too large', `--${B}\r\nContent-Disposition: form-data; name="a"\r\nX-Pad: ${'p'.repeat(9000)}\r\n\r\nv\r\n--${B}--`],
    ['a field too long', `--${B}\r\nContent-Disposition: form-data; name="a"\r\n\r\n${'v'.repeat(70_000)}\r\n--${B}--`],
    ['too many parts', `${Array.from({ length: 5 }, (_, i) => `--${B}\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nv\r\n`).join('')}--${B}--`, { fileMaxBytes: 10, maxParts: 4 }],
  ];
  for (const [label, text, limits] of bad) {
    test(`400 VALIDATION_FAILED for ${label}`, async () => {
      await rejectsWith(parseAll(cut(Buffer.from(text), seededRandom(3), 50), limits), 400, 'VALIDATION_FAILED');
    });
  }
});

describe('multipart headers', () => {
  test('boundaryOf', () => {
    assert.equal(boundaryOf(`multipart/form-data; boundary=${B}`), B);
    assert.equal(boundaryOf(`Multipart/Form-Data; charset=utf-8; boundary="${B}"`), B);
    assert.equal(boundaryOf('multipart/mixed; boundary=abc'), null);
    assert.equal(boundaryOf('application/json'), null);
    assert.equal(boundaryOf('multipart/form-data'), null);
    assert.equal(boundaryOf(undefined), null);
    assert.equal(boundaryOf(`multipart/form-data; boundary=${'a'.repeat(71)}`), null);
  });

  test('dispositionParams', () => {
    assert.deepEqual(dispositionParams('form-data; name="file"; filename="a\\"b.png"'), { name: 'file', filename: 'a"b.png' });
    assert.deepEqual(dispositionParams(`form-data; name=f; filename="plain.txt"; filename*=UTF-8''%E6%97%A5%E6%9C%AC.txt`), {
      name: 'f',
      filename: '日本.txt',
    });
  });
});

/**
 * src/qr-image.ts: the PNG it writes is read back here (signature, IHDR, the inflated rows) and must show exactly
 * the symbol qrcode computes for the text, with its quiet zone: a phone scanning the image reads that text.
 * `qrImage` draws a text once and answers the same data URL again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inflateSync } from 'node:zlib';
import QRCode from 'qrcode';
import { qrDataUrl, qrImage } from '../../src/qr-image.js';

/** The PNG's pixels (true = dark), checking what a viewer checks: the signature, each chunk's CRC, IHDR. */
function readPng(dataUrl: string): { width: number; height: number; dark: (x: number, y: number) => boolean } {
  const prefix = 'data:image/png;base64,';
  assert.ok(dataUrl.startsWith(prefix));
  const png = Buffer.from(dataUrl.slice(prefix.length), 'base64');
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const chunks = new Map<string, Buffer[]>();
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + length);
    assert.equal(png.readUInt32BE(at + 8 + length), crc32(png.subarray(at + 4, at + 8 + length)), `${type} CRC`);
    chunks.set(type, [...(chunks.get(type) ?? []), data]);
    at += 12 + length;
  }
  assert.deepEqual([...chunks.keys()], ['IHDR', 'IDAT', 'IEND']);
  const ihdr = chunks.get('IHDR')?.[0] as Buffer;
  const width = ihdr.readUInt32BE(0);
  const height = ihdr.readUInt32BE(4);
  assert.deepEqual([...ihdr.subarray(8)], [1, 0, 0, 0, 0], '1-bit grayscale, no interlace');
  const rows = inflateSync(Buffer.concat(chunks.get('IDAT') ?? []));
  const rowBytes = Math.ceil(width / 8) + 1;
  assert.equal(rows.length, rowBytes * height);
  for (let y = 0; y < height; y++) assert.equal(rows[y * rowBytes], 0, 'filter type none');
  return { width, height, dark: (x, y) => (((rows[y * rowBytes + 1 + (x >> 3)] ?? 0) >> (7 - (x & 7))) & 1) === 0 };
}

function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

for (const text of ['2@abcDEF123,ghiJKL456,mnoPQR789=,stuVWX0=,1', `2@${'x'.repeat(230)},AbCdEf==,GhIj==,KlMn==,1`]) {
  test(`the PNG shows qrcode's symbol for a ${text.length}-character text, module by module, in a white quiet zone`, () => {
    const { modules } = QRCode.create(text, { errorCorrectionLevel: 'M' });
    const png = readPng(qrDataUrl(text));
    const scale = 4;
    const margin = 2;
    assert.equal(png.width, (modules.size + 2 * margin) * scale);
    assert.equal(png.height, png.width);
    for (let y = 0; y < png.height; y++) {
      for (let x = 0; x < png.width; x++) {
        const mx = Math.floor(x / scale) - margin;
        const my = Math.floor(y / scale) - margin;
        const inside = mx >= 0 && my >= 0 && mx < modules.size && my < modules.size;
        const want = inside ? Boolean(modules.get(my, mx)) : false;
        if (png.dark(x, y) !== want) assert.fail(`pixel ${x},${y} (module ${mx},${my}) should be ${want ? 'dark' : 'white'}`);
      }
    }
  });
}

test('qrImage draws a text once: the same data URL again, another for another text', () => {
  const a = qrImage('2@first-token');
  assert.equal(qrImage('2@first-token'), a);
  assert.notEqual(qrImage('2@second-token'), a);
  assert.equal(a, qrDataUrl('2@first-token'));
  // hundreds of other QRs later it is drawn again, to the same image
  for (let i = 0; i < 300; i++) qrImage(`2@other-${i}`);
  assert.equal(qrImage('2@first-token'), a);
});

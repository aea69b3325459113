/**
 * The QR a waiting sandbox session shows: its token as a QR code, drawn as a 1-bit grayscale PNG data URL.
 *
 * qrcode computes the symbol; the PNG is written here rather than by qrcode's own renderer (pngjs with
 * adaptive row filters and RGBA pixels), which takes about ten times as long: every waiting session draws a new
 * QR at each rotation, and an operator creating thousands of instances has thousands waiting at once. The one
 * byte-mode segment and the fixed mask skip qrcode's segment optimisation and its trial of all eight masks; the
 * symbol stays a valid QR code (the mask is written in its format information).
 */
import { deflateSync } from 'node:zlib';
import QRCode from 'qrcode';

/** pixels per module, and modules of quiet zone around the symbol */
const SCALE = 4;
const MARGIN = 2;

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function qrDataUrl(text: string): string {
  const { modules } = QRCode.create([{ data: Buffer.from(text, 'utf8'), mode: 'byte' }], { errorCorrectionLevel: 'L', maskPattern: 0 });
  const side = (modules.size + 2 * MARGIN) * SCALE;
  const rowBytes = Math.ceil(side / 8);
  // one filter byte (0: none) and the row's bits (1 = white) per pixel row; the bits past the width stay white
  const raw = Buffer.alloc((rowBytes + 1) * side);
  const row = Buffer.alloc(rowBytes);
  for (let my = -MARGIN; my < modules.size + MARGIN; my++) {
    // white, then the dark modules of this row cleared pixel by pixel
    row.fill(0xff);
    if (my >= 0 && my < modules.size) {
      for (let mx = 0; mx < modules.size; mx++) {
        if (!modules.get(my, mx)) continue;
        for (let x = (mx + MARGIN) * SCALE, end = x + SCALE; x < end; x++) row[x >> 3] = (row[x >> 3] ?? 0) & ~(0x80 >> (x & 7));
      }
    }
    for (let k = 0; k < SCALE; k++) row.copy(raw, ((my + MARGIN) * SCALE + k) * (rowBytes + 1) + 1);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(side, 0);
  header.writeUInt32BE(side, 4);
  header[8] = 1; // bit depth
  header[9] = 0; // grayscale; compression, filter and interlace stay 0
  const png = Buffer.concat([PNG_SIGNATURE, chunk('IHDR', header), chunk('IDAT', deflateSync(raw, { level: 1 })), chunk('IEND', Buffer.alloc(0))]);
  return `data:image/png;base64,${png.toString('base64')}`;
}

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const b of bytes) c = (CRC_TABLE[(c ^ b) & 0xff] ?? 0) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

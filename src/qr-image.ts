/**
 * A QR's text drawn as a 1-bit grayscale PNG data URL, where it is answered (GET /api/qr, GET
 * /admin/v1/instances/:id/qr, the sandbox's phone view), never where it arrives.
 *
 * A session waiting for a scan gets a new QR about every 20 s (whatsapp-web.js's `qr` event, the sandbox's
 * rotation), and an operator who creates thousands of instances has thousands waiting at once: drawing each
 * one as it came cost 0.2 ms (here) to 2 ms (qrcode's own renderer) of the event loop per QR, almost all of
 * them never looked at. The instance keeps the text; `qrImage` draws it when someone reads it, once per text
 * (the console and API clients poll it every few seconds).
 *
 * qrcode computes the symbol (its segments and the best of its eight masks, error correction M); the PNG is
 * written here rather than by qrcode's own renderer (pngjs with adaptive row filters and RGBA pixels), which
 * takes about ten times as long.
 */
import { deflateSync } from 'node:zlib';
import QRCode from 'qrcode';

/** pixels per module, and modules of quiet zone around the symbol */
const SCALE = 4;
const MARGIN = 2;

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** the QRs drawn lately, by text: a poll of the same QR is answered without drawing it again */
const drawn = new Map<string, string>();
const DRAWN_MAX = 256;

/** `text` as a PNG data URL, drawn once while it stays among the latest DRAWN_MAX drawn. */
export function qrImage(text: string): string {
  const known = drawn.get(text);
  if (known !== undefined) return known;
  const url = qrDataUrl(text);
  if (drawn.size >= DRAWN_MAX) drawn.delete(drawn.keys().next().value as string);
  drawn.set(text, url);
  return url;
}

/** `text` drawn as a PNG data URL (every call draws it: `qrImage` remembers). */
export function qrDataUrl(text: string): string {
  const { modules } = QRCode.create(text, { errorCorrectionLevel: 'M' });
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

/**
 * Byte caps enforced while data flows: the error is raised on the chunk that crosses the cap, so an oversized
 * body is never held whole (neither in memory nor on disk) before it is refused.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { payloadTooLarge } from '../errors.js';

export type ByteSource = AsyncIterable<Buffer | Uint8Array | string>;

export const toBuffer = (chunk: Buffer | Uint8Array | string): Buffer =>
  typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);

/**
 * Read a stream into one Buffer, failing with `tooLarge()` (default 413 PAYLOAD_TOO_LARGE with data.maxBytes)
 * as soon as more than `maxBytes` have arrived. Leaving the loop early destroys the source stream.
 */
export async function readCapped(
  source: ByteSource,
  maxBytes: number,
  tooLarge: () => Error = () => payloadTooLarge(maxBytes),
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const raw of source) {
    const chunk = toBuffer(raw);
    total += chunk.length;
    if (total > maxBytes) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}

/** A pass-through Transform that errors with `tooLarge()` once more than `maxBytes` have passed. */
export function cappedStream(maxBytes: number, tooLarge: () => Error = () => payloadTooLarge(maxBytes)): Transform & { readonly bytes: number } {
  let bytes = 0;
  const t = new Transform({
    transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback) {
      bytes += chunk.length;
      if (bytes > maxBytes) return cb(tooLarge());
      cb(null, chunk);
    },
  });
  return Object.defineProperty(t, 'bytes', { get: () => bytes }) as Transform & { readonly bytes: number };
}

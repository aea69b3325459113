/** Small file-system helpers of the media store. */
import { unlink, type FileHandle } from 'node:fs/promises';

export const isMissing = (err: unknown): boolean => err instanceof Error && 'code' in err && err.code === 'ENOENT';

/** Remove a file; a file that is already gone is fine (every step of the store may be repeated). */
export async function unlinkQuiet(file: string): Promise<void> {
  await unlink(file).catch((err: unknown) => {
    if (!isMissing(err)) throw err;
  });
}

/** Write a whole buffer: a single write() may write fewer bytes than asked. */
export async function writeAll(fh: FileHandle, chunk: Buffer): Promise<void> {
  let offset = 0;
  while (offset < chunk.length) {
    const { bytesWritten } = await fh.write(chunk, offset, chunk.length - offset);
    offset += bytesWritten;
  }
}

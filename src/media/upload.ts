/**
 * Receiving an upload (POST /api/v2/media): the multipart body is read once, as it arrives, and the `file`
 * part streams straight into the media store. Nothing holds the whole file in memory.
 *
 * Which error wins (SPEC.md "Media endpoints"): above the upload limit (64 MiB) → 413 with data.maxBytes,
 * decided while streaming, or at once from a Content-Length that already says so; at most that but above the
 * store's per-file ceiling (16 MiB) → 507 reason `too_large`; too little disk → 507 reason `low_disk` before
 * a byte of the file is read. A body that has not all arrived by the upload's deadline (`deadlineMs`, the
 * gateway's 120 s) is `408 REQUEST_TIMEOUT` then, nothing stored: found from the outside, a stalled upload held its
 * staged file and its connection until Node's request timeout, 308 s.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DomainError, payloadTooLarge, validationFailed } from '../errors.js';
import { boundaryOf, readMultipart } from './multipart.js';
import { normaliseMimetype } from './mimetype.js';
import { continueBody, otherTransferCoding } from './linger.js';
import { cleanFilename, type MediaRecord } from './record.js';
import type { MediaStore, StagedMedia } from './store.js';
import { raceClock, type Clock } from '../clock.js';

/** The upload's deadline passed before its answer (`raceClock`'s sentinel). */
const LATE: unique symbol = Symbol('late');

/** answering before the body is read to its end: see linger.ts */
export { closeUnreadRequest } from './linger.js';

/** Room for part headers and the small fields beside the file before a Content-Length alone means 413. */
const MULTIPART_ALLOWANCE = 1024 * 1024;

const isStoreTooLarge = (err: unknown) =>
  err instanceof DomainError && err.code === 'MEDIA_STORE_UNAVAILABLE' && err.extra.reason === 'too_large';

export async function receiveUpload(
  req: IncomingMessage,
  res: ServerResponse,
  instanceId: string,
  deps: { store: MediaStore; uploadMaxBytes: number; beforeCommit?: () => Promise<void>; deadline?: { clock: Clock; ms: number } },
): Promise<MediaRecord> {
  const boundary = boundaryOf(req.headers['content-type']);
  if (!boundary) throw validationFailed('file', 'the body must be multipart/form-data with a file part');
  // the parts are read as they arrive, not decoded: a gzip-encoded body was stored as it came (or refused as
  // malformed), so an encoding is refused as JSON routes refuse one they do not know
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if ((encoding !== 'identity' && encoding !== '') || otherTransferCoding(req.headers['transfer-encoding'])) {
    throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'send the upload without Content-Encoding (the file itself may be compressed)');
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > deps.uploadMaxBytes + MULTIPART_ALLOWANCE) {
    throw payloadTooLarge(deps.uploadMaxBytes);
  }
  continueBody(req, res);
  const receiving = receiveParts(req, instanceId, boundary, deps);
  const { deadline } = deps;
  if (!deadline) return receiving;
  const received = await raceClock(deadline.clock, deadline.ms, receiving, (): typeof LATE => LATE);
  if (received !== LATE) return received;
  // only the body's arrival is timed: one that has all arrived is stored whatever its commit takes
  if (req.complete) return receiving;
  // left behind: the answer goes out and the connection lingers (linger.ts); once it is gone the request is ended
  // too, so that the reading fails and removes what it staged (node leaves an answered request open for ever)
  receiving.catch(() => undefined);
  req.socket.once('close', () => {
    if (!req.destroyed) req.destroy();
  });
  throw new DomainError('REQUEST_TIMEOUT', `the upload did not arrive within ${deadline.ms / 1000} s; nothing was stored`, { deadlineMs: deadline.ms });
}

/** The parts of the body, read as they arrive; the file streamed into the store and committed. */
async function receiveParts(
  req: IncomingMessage,
  instanceId: string,
  boundary: string,
  deps: { store: MediaStore; uploadMaxBytes: number; beforeCommit?: () => Promise<void> },
): Promise<MediaRecord> {
  let staged: StagedMedia | null = null;
  let fileSeen = false;
  let partType: string | null = null;
  let partName: string | null = null;
  let storeRefusal: unknown = null;
  const fields: { filename?: string; mimetype?: string } = {};
  try {
    for await (const part of readMultipart(req, boundary, { fileMaxBytes: deps.uploadMaxBytes, fileField: 'file' })) {
      if (part.isFile) {
        if (part.name !== 'file') throw validationFailed(part.name, 'only the field `file` may carry a file');
        if (fileSeen) throw validationFailed('file', 'only one file may be uploaded');
        fileSeen = true;
        partType = part.contentType;
        partName = part.filename;
        try {
          staged = await deps.store.stage(instanceId, part.body);
        } catch (err) {
          if (!isStoreTooLarge(err)) throw err;
          // keep reading (counting, not storing): above the upload limit the answer is 413, not 507
          await part.drain();
          storeRefusal = err;
        }
      } else if (part.name === 'filename' || part.name === 'mimetype') {
        fields[part.name] = await part.text();
      } else {
        await part.drain();
      }
    }
    if (storeRefusal) throw storeRefusal;
    if (!staged || staged.size === 0) throw validationFailed('file', 'file is required and must not be empty');

    // the part's own type and the `mimetype` field are read by the parser the send rules read a type with
    // (src/media/mimetype.ts): one spelling is taken or refused alike everywhere, and stored in one form. The
    // `mimetype` field decides when given; else the part's Content-Type, refused as the field is when it is not
    // a media type (found from the outside: `x`, `/png` or `image/png;;` were stored as application/octet-stream,
    // where docs/api.md says 400); a part without one is application/octet-stream
    let mimetype: string;
    if (fields.mimetype !== undefined && fields.mimetype.trim() !== '') {
      const given = normaliseMimetype(fields.mimetype);
      if (!given) throw validationFailed('mimetype', 'mimetype must be a media type like image/png');
      mimetype = given;
    } else if (partType !== null && partType.trim() !== '') {
      const declared = normaliseMimetype(partType);
      if (!declared) throw validationFailed('mimetype', "the file part's Content-Type must be a media type like image/png (or give the field mimetype)");
      mimetype = declared;
    } else mimetype = 'application/octet-stream';
    const filename = cleanFilename(fields.filename !== undefined && fields.filename.trim() !== '' ? fields.filename : partName);
    // what the request's guard checked before the body may have changed while it arrived (a key rotated)
    await deps.beforeCommit?.();
    const committing = staged;
    staged = null;
    return await committing.commit({ mimetype, filename, origin: 'upload' });
  } catch (err) {
    // the client cut the body off (reset, or closed mid-body; a body stalled past the request timeout is cut
    // the same way): Node fails the request's stream with ECONNRESET, whose message the error boundary took for
    // PostgreSQL's (503 QUEUE_STORE_UNAVAILABLE logged, and a store probe for every such upload). As the JSON
    // body reader answers it (src/http/body.ts)
    if (!(err instanceof DomainError) && !req.complete && (err as { code?: unknown }).code === 'ECONNRESET') {
      throw validationFailed('file', 'the request was aborted before its body arrived');
    }
    throw err;
  } finally {
    await staged?.discard();
  }
}

/**
 * The few requests that have no superstruct struct to derive from, described by hand. Everything else in the
 * registry is the route's own struct (exported from its route file). Kept here, each with why:
 *
 *   (`parse(ctx.request.body, object({ phoneNumber: … }))`), not named constants; once they are named and
 *   exported there, the registry takes them and these go.
 * - CHATS_QUERY, MESSAGES_QUERY (reads.ts) and DOWNLOAD_QUERY (media.ts, message-media.ts): the routes read
 *   these query parameters one by one by hand (listLimit, cursorOf, boolQuery, isDownload), no struct.
 * - V1_SEND, V1_BULK: the frozen v1 parser (legacy-parse.ts) reads loose fields by hand (null and '' count as
 *   absent, a bad entry of a bulk is rejected, not thrown), no struct.
 * - UPLOAD: multipart/form-data, read by the streaming upload parser of media.ts; a JSON struct cannot say it.
 */
import type { JsonSchema } from './struct-schema.js';

const s = (extra: JsonSchema = {}): JsonSchema => ({ type: 'string', ...extra });

function body(properties: Record<string, JsonSchema>, required: string[] = [], exact = false): JsonSchema {
  return { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: !exact };
}

export const CHATS_QUERY = body({ limit: { type: 'integer', minimum: 1, default: 50 }, cursor: s(), archived: { enum: ['1', 'true', '0', 'false'] } }, [], true);
export const MESSAGES_QUERY = body({ limit: { type: 'integer', minimum: 1, default: 50 }, fromMe: { enum: ['1', 'true', '0', 'false'] } }, [], true);
export const DOWNLOAD_QUERY = body({ download: { enum: ['1', 'true'], description: 'the bytes instead of the metadata' } });
export const V1_SEND = body({ phone: s(), message: s(), mediaUrl: s(), mediaBase64: s(), mimetype: s(), filename: s(), caption: s() });
export const V1_BULK = body({ messages: { type: 'array', items: { type: 'object' } } });
export const UPLOAD = body({ file: s({ format: 'binary' }), filename: s(), mimetype: s() }, ['file']);

/**
 * What every family of operations (operator.ts, send.ts, network.ts, sandbox.ts) describes its routes with: the
 * Operation shape, the answer helpers, the error codes several families share, and a send's 202 answer.
 */
import type { ErrorCode } from '../../../errors.js';
import { obj, okEnvelope, ref } from '../components.js';
import type { AnyStruct, JsonSchema } from '../struct-schema.js';

export type BodySpec = AnyStruct | JsonSchema;

/** A success answer: its status, its whole body, and its media type when it is not JSON (`text/html`, …). */
export interface Answer {
  status: number;
  schema: JsonSchema;
  description?: string;
  media?: string;
}

export interface Operation {
  summary: string;
  tag: string;
  description?: string;
  body?: BodySpec;
  /** `multipart/form-data` instead of JSON */
  multipart?: boolean;
  query?: BodySpec;
  /**
   * the success status and the whole answer body; `alsoAs`: the same body answered with another status too (a
   * send's replay of an idempotency key: 200 beside 202); `bytes`: the same status answers a file's bytes too,
   * with the file's own Content-Type (`?download=1`), described so
   */
  ok: Answer & { alsoAs?: { status: number; description: string }; bytes?: string };
  /** other success answers, each with a body of its own (v1's 202 with `legacyQueueMode: async`) */
  also?: Answer[];
  errors?: ErrorCode[];
  /** an example request: sent by the test to a real gateway, where the test can make its preconditions */
  example?: { body?: unknown; query?: Record<string, string> };
  /** v1: frozen shapes, errors without `code` */
  v1?: boolean;
  /** the credentials it takes, when its family's are not all (each entry one alternative) */
  security?: JsonSchema[];
}

export const data = (schema: JsonSchema, status = 200, description?: string) => ({ status, schema: okEnvelope(schema), ...(description ? { description } : {}) });
export const anyData = (status = 200) => data({ type: 'object' }, status);
export const items = (item: JsonSchema, extra: Record<string, JsonSchema> = {}) => obj({ items: { type: 'array', items: item }, ...extra });

export const SEND_ERRORS: ErrorCode[] = [
  'VALIDATION_FAILED', 'IDEMPOTENCY_KEY_CONFLICT', 'IDEMPOTENCY_PAYLOAD_MISMATCH', 'QUEUE_FULL', 'TTL_UNREACHABLE',
  'INSTANCE_UNREACHABLE', 'INSTANCE_OFFLINE', 'QUEUE_STORE_UNAVAILABLE', 'QUEUE_PAUSED', 'INSTANCE_TIMEOUT',
];
export const MEDIA_SEND_ERRORS: ErrorCode[] = [...SEND_ERRORS, 'MEDIA_NOT_FOUND', 'MEDIA_GONE', 'PAYLOAD_TOO_LARGE'];
export const NETWORK_ERRORS: ErrorCode[] = ['VALIDATION_FAILED', 'INSTANCE_OFFLINE', 'INSTANCE_TIMEOUT', 'INSTANCE_UNREACHABLE', 'WA_CALL_FAILED'];
export const INTERACTION_ERRORS: ErrorCode[] = [...NETWORK_ERRORS, 'RATE_LIMITED'];
export const GROUP_ERRORS: ErrorCode[] = [...INTERACTION_ERRORS, 'NOT_A_GROUP', 'CHAT_NOT_FOUND'];
export const ADMIN_ONE: ErrorCode[] = ['INSTANCE_NOT_FOUND'];

export const ACCEPTED = {
  status: 202,
  schema: okEnvelope(ref('AcceptedJob')),
  description: 'Accepted: the job is stored.',
  alsoAs: { status: 200, description: 'A replay of the same idempotency key and payload: the job it accepted first, `idempotentReplay: true`; nothing new was queued.' },
};

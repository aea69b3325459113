/**
 * The answers' shapes for the OpenAPI document: the envelope (src/http/envelope.ts), one response per error
 * code with its status (ERROR_STATUS of src/errors.ts, the only such table), and the wire objects of src/wire/
 * (job.ts: job status, accepted job; objects.ts: Message, Chat, Contact), described by hand from those
 * functions, field by field. Fields are only ever added, so every object allows more properties.
 */
import { ERROR_STATUS, type ErrorCode } from '../../errors.js';
import { JOB_STATES } from '../../../machines/job.machine.js';
import type { JsonSchema } from './struct-schema.js';

export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const str: JsonSchema = { type: 'string' };
const strOrNull: JsonSchema = { type: ['string', 'null'] };
const int: JsonSchema = { type: 'integer' };
const intOrNull: JsonSchema = { type: ['integer', 'null'] };
const bool: JsonSchema = { type: 'boolean' };
const boolOrNull: JsonSchema = { type: ['boolean', 'null'] };
const isoOrNull: JsonSchema = { type: ['string', 'null'], format: 'date-time' };

/** An object whose listed fields are all present (answers always carry every field they list). */
export function obj(properties: Record<string, JsonSchema>, optional: string[] = []): JsonSchema {
  return { type: 'object', properties, required: Object.keys(properties).filter((k) => !optional.includes(k)), additionalProperties: true };
}

/** `{success: true, data}` */
export const okEnvelope = (data: JsonSchema): JsonSchema => ({
  type: 'object',
  properties: { success: { const: true }, data },
  required: ['success', 'data'],
  additionalProperties: false,
});

const LIMITS = obj({
  maxPerHour: intOrNull,
  maxPer24h: intOrNull,
  usedLastHour: intOrNull,
  usedLast24h: intOrNull,
  remainingHour: intOrNull,
  remaining24h: intOrNull,
  minDelayMs: int,
  maxDelayMs: int,
  quietHours: { anyOf: [obj({ start: str, end: str, tz: str }), { type: 'null' }] },
  window: { const: 'sliding' },
});

const JOB_KINDS = ['text', 'media', 'voice', 'document', 'sticker', 'video', 'location', 'contact', 'poll', 'forward', 'group_create'];

const LOCATION = obj({ latitude: { type: 'number' }, longitude: { type: 'number' }, name: str, address: str, url: str, description: str }, ['name', 'address', 'url', 'description']);

/** components/schemas */
export const SCHEMAS: Record<string, JsonSchema> = {
  Error: {
    type: 'object',
    description: 'The error envelope. Branch on `code`, never on `error` (free text).',
    properties: { success: { const: false }, error: str, code: { enum: Object.keys(ERROR_STATUS) }, data: { type: 'object' }, reason: str },
    required: ['success', 'error', 'code', 'data'],
  },
  V1Error: {
    type: 'object',
    description: 'A v1 error: frozen shape, no `code` (docs/api-v1.md). A v1 500 may hide a delivered message: never resend after any answer.',
    properties: { success: { const: false }, error: str },
    required: ['success', 'error'],
  },
  Limits: LIMITS,
  AcceptedJob: obj(
    {
      status: { enum: ['queued', 'sending', 'sent', 'failed', 'unknown', 'cancelled', 'expired'] },
      queueState: { enum: ['scheduled', 'queued'] },
      jobId: { type: 'string', pattern: '^wq_' },
      messageId: strOrNull,
      idempotencyKey: strOrNull,
      idempotentReplay: bool,
      scheduledAt: isoOrNull,
      etaSeconds: int,
      queuePosition: int,
      expiresAt: isoOrNull,
      statusUrl: str,
      limits: ref('Limits'),
      warnings: { type: 'array', items: str },
      previousJobId: str,
    },
    ['warnings', 'previousJobId'],
  ),
  JobStatus: obj(
    {
      jobId: { type: 'string', pattern: '^wq_' },
      state: { enum: [...JOB_STATES] },
      deliveryConfidence: { enum: ['confirmed', 'assumed', 'unknown'] },
      messageId: strOrNull,
      resultCode: strOrNull,
      errorMessage: strOrNull,
      unknownReason: strOrNull,
      idempotencyKey: strOrNull,
      kind: { enum: JOB_KINDS },
      chatId: strOrNull,
      phone: strOrNull,
      priority: int,
      originRoute: str,
      queuedAt: isoOrNull,
      scheduledAt: isoOrNull,
      dispatchedAt: isoOrNull,
      terminalAt: isoOrNull,
      expiresAt: isoOrNull,
      attempts: int,
      etaSeconds: intOrNull,
      previousJobId: str,
    },
    ['previousJobId'],
  ),
  Message: obj({
    id: str,
    chatId: str,
    from: str,
    to: str,
    author: strOrNull,
    body: str,
    type: str,
    timestamp: { type: 'integer', description: 'unix milliseconds' },
    fromMe: bool,
    hasMedia: bool,
    hasQuotedMsg: bool,
    ack: int,
    isForwarded: bool,
    deviceType: str,
    location: { anyOf: [LOCATION, { type: 'null' }] },
    vCards: { type: 'array', items: str },
  }),
  Chat: obj({
    id: str,
    name: str,
    isGroup: bool,
    isReadOnly: bool,
    unreadCount: int,
    timestamp: { type: 'integer', description: 'unix seconds' },
    archived: bool,
    pinned: bool,
    isMuted: bool,
    muteExpiration: { type: ['integer', 'null'] },
  }),
  Contact: obj({
    id: str,
    number: str,
    name: strOrNull,
    pushname: strOrNull,
    shortName: strOrNull,
    isBusiness: bool,
    isEnterprise: bool,
    isMyContact: bool,
    isBlocked: bool,
    isGroup: bool,
    isUser: bool,
    isWAContact: bool,
  }),
  Instance: obj(
    {
      id: { type: 'string', format: 'uuid' },
      name: str,
      driver: { enum: ['sandbox', 'webjs'] },
      phoneNumber: strOrNull,
      createdAt: {},
      settings: { type: 'object' },
      // null while the node that runs it cannot be asked (`stateUnknown` says which and why)
      status: strOrNull,
      // the machine's state for operators (e.g. 'backoff', 'quarantined', 'restarting': InstanceView.detail)
      state: strOrNull,
      connected: boolOrNull,
      browser: { anyOf: [ref('BrowserHealth'), { type: 'null' }] },
      paused: boolOrNull,
      quarantined: boolOrNull,
      lastError: {},
      node: strOrNull,
      stateUnknown: { type: ['object', 'null'], properties: { node: str, reason: str }, required: ['node', 'reason'] },
    },
    ['createdAt', 'lastError', 'node', 'stateUnknown'],
  ),
  // src/drivers/wire-types.ts BrowserHealth
  BrowserHealth: obj({ alive: bool, failStreak: int, lastOkAt: { type: 'integer', description: 'unix milliseconds of the last successful probe or call, 0 when never' } }),
  Health: obj({
    success: { const: true },
    service: str,
    version: str,
    timestamp: { type: 'string', format: 'date-time' },
    instances: obj({ total: int, online: int, offline: int, starting: int, degraded: int, quarantined: int }),
    queue: obj({ degraded: int }),
  }),
  Status: obj({
    status: str,
    phoneNumber: str,
    connected: bool,
    browser: ref('BrowserHealth'),
    queue: obj({
      sent: int,
      failed: int,
      queued: int,
      pending: int,
      scheduled: int,
      sending: int,
      inFlight: int,
      unknown: int,
      sent24h: int,
      failed24h: int,
      unknown24h: int,
      mode: { enum: ['pg', 'memory-degraded', 'disabled'] },
      degraded: bool,
      nextAt: isoOrNull,
      limits: ref('Limits'),
    }),
    messages: obj({ sent: int, received: int, failed: int }),
  }),
  QueueSummary: obj({
    mode: { enum: ['pg', 'memory-degraded', 'disabled'] },
    limitsEnforced: bool,
    degradedSince: isoOrNull,
    counts: obj({ queued: int, scheduled: int, sending: int, sent24h: int, failed24h: int, unknown24h: int }),
    nextAt: isoOrNull,
    limits: ref('Limits'),
  }),
  MediaAttachment: obj(
    { mimetype: str, filename: strOrNull, size: intOrNull, stored: bool, mediaId: str, url: str, expiresAt: isoOrNull, reason: str },
    ['mediaId', 'url', 'expiresAt', 'reason', 'filename', 'size'],
  ),
};

/** What each code means for the caller (docs/api.md "Errors"). */
const MEANING: Partial<Record<ErrorCode, string>> = {
  VALIDATION_FAILED: 'A field, path parameter, query or body is missing or malformed; `data.field` names it. Nothing accepted.',
  IDEMPOTENCY_KEY_CONFLICT: 'The X-Idempotency-Key header and the body idempotencyKey differ.',
  IDEMPOTENCY_PAYLOAD_MISMATCH: 'The key was used with a different payload; `data.jobId` is the original job.',
  UNAUTHORIZED: 'The Authorization header is missing or malformed, or the admin token is wrong.',
  INVALID_API_KEY: 'The API key is unknown, rotated or deleted.',
  FORBIDDEN: 'An instance key on an operator route.',
  NOT_FOUND: 'No route has this path (or no webhook is configured).',
  METHOD_NOT_ALLOWED: 'The path exists with other methods: `data.allowed` and the Allow header list them.',
  QUEUE_FULL: 'The instance already has its maximum of waiting jobs (`data.maxPending`). Nothing accepted.',
  TTL_UNREACHABLE: 'No slot before `data.expiresAt`.',
  RATE_LIMITED: 'Interaction limit reached: wait `data.retryAfterMs` (Retry-After).',
  INSTANCE_UNREACHABLE: 'The instance could not be reached; nothing was accepted. Safe to retry.',
  INSTANCE_OFFLINE: 'The instance is not connected (`data.instance`).',
  QUEUE_STORE_UNAVAILABLE: 'The persistent queue is unreachable or turned off (`data.queueMode`), or the instance\'s queue could not read its jobs at start (`data.reason`: queue_not_loaded) or is still reading them (queue_loading, on the summaries). Nothing accepted.',
  QUEUE_PAUSED: 'An ordered restart is in progress: retry after `data.retryAfterSeconds`.',
  INSTANCE_TIMEOUT: 'The instance did not answer in time; a send may have been accepted: retry only with the same idempotency key.',
  QUEUE_WAIT_TIMEOUT: 'v1 only: still queued after the synchronous wait; poll `data.jobId`, do not resend.',
  INTERNAL_ERROR: 'An unexpected fault: for sends, treat like INSTANCE_TIMEOUT.',
  MEDIA_STORE_UNAVAILABLE: 'The media store cannot take the file (`reason`: low_disk or too_large).',
};

export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

/** components/responses: one per error code, `E_<CODE>`, with its status in `x-status` and an example. */
export function errorResponses(): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const code of ERROR_CODES) {
    out[`E_${code}`] = {
      description: `${ERROR_STATUS[code]} ${code}: ${MEANING[code] ?? code.toLowerCase().replaceAll('_', ' ')}`,
      'x-status': ERROR_STATUS[code],
      content: {
        'application/json': {
          schema: { allOf: [ref('Error'), { properties: { code: { const: code } } }] },
          example: { success: false, error: MEANING[code] ?? code.toLowerCase().replaceAll('_', ' '), code, data: {} },
        },
      },
    };
  }
  return out;
}

export const SECURITY_SCHEMES: Record<string, JsonSchema> = {
  instanceKey: { type: 'http', scheme: 'bearer', bearerFormat: 'wapi_<name>_<random>', description: "The instance's API key (shown once by the operator API). It alone selects the instance." },
  adminToken: { type: 'http', scheme: 'bearer', description: 'The operator token (ADMIN_TOKEN), for /admin/v1, /debug and /sandbox/v1.' },
  clusterSecret: { type: 'http', scheme: 'bearer', description: 'CLUSTER_SECRET: node-to-node calls only.' },
  metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, when set: GET /metrics only (a scraper needs no admin token).' },
};

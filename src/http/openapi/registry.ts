/**
 * What the document says about each route beyond the route table: summary, request body and query (the
 * superstruct structs the routes validate with, exported from their route files; hand-bodies.ts only for the
 * few requests that have no struct), the answer and its status, the error codes, and an example request. Keyed by `METHOD path` exactly as the route table (src/http/router.ts) lists it;
 * src/http/openapi/document.ts joins the two, and the test fails on a mounted route missing here.
 */
import type { ErrorCode } from '../../errors.js';
import { SettingsPatchStruct } from '../../queue/settings.js';
import { WebhookInput } from '../../webhooks/config.js';
import { CreateSchema, MoveSchema, PairingSchema, PatchSchema as InstancePatchSchema } from '../routes/admin-instances.js';
import { AddSchema, ParticipantsBody, PatchSchema as GroupPatchSchema } from '../routes/groups.js';
import { DeleteSchema, EditSchema, PresenceSchema, ReactionSchema } from '../routes/interactions.js';
import { AskBody } from '../routes/internal.js';
import { ItemsQuery, KeyQuery } from '../routes/queue.js';
import * as sb from '../routes/sandbox-control-schemas.js';
import { GroupCreateBody, SCHEMAS as SEND_SCHEMAS } from '../routes/send-schemas.js';
import { DeliveriesQuery, TestInput } from '../routes/webhooks.js';
import { SCHEMAS, obj, okEnvelope, ref } from './components.js';
import * as hand from './hand-bodies.js';
import { structSchema, type AnyStruct, type JsonSchema } from './struct-schema.js';

export type BodySpec = AnyStruct | JsonSchema;

export interface Operation {
  summary: string;
  tag: string;
  description?: string;
  body?: BodySpec;
  /** `multipart/form-data` instead of JSON */
  multipart?: boolean;
  query?: BodySpec;
  /** the success status and the whole answer body */
  ok: { status: number; schema: JsonSchema; description?: string };
  errors?: ErrorCode[];
  /** an example request: sent by the test to a real gateway, where the test can make its preconditions */
  example?: { body?: unknown; query?: Record<string, string> };
  /** v1: frozen shapes, errors without `code` */
  v1?: boolean;
}

const data = (schema: JsonSchema, status = 200, description?: string) => ({ status, schema: okEnvelope(schema), ...(description ? { description } : {}) });
const anyData = (status = 200) => data({ type: 'object' }, status);
const items = (item: JsonSchema, extra: Record<string, JsonSchema> = {}) => obj({ items: { type: 'array', items: item }, ...extra });

const SEND_ERRORS: ErrorCode[] = [
  'VALIDATION_FAILED', 'IDEMPOTENCY_KEY_CONFLICT', 'IDEMPOTENCY_PAYLOAD_MISMATCH', 'QUEUE_FULL', 'TTL_UNREACHABLE',
  'INSTANCE_UNREACHABLE', 'INSTANCE_OFFLINE', 'QUEUE_STORE_UNAVAILABLE', 'QUEUE_PAUSED', 'INSTANCE_TIMEOUT',
];
const MEDIA_SEND_ERRORS: ErrorCode[] = [...SEND_ERRORS, 'MEDIA_NOT_FOUND', 'MEDIA_GONE', 'PAYLOAD_TOO_LARGE'];
const NETWORK_ERRORS: ErrorCode[] = ['VALIDATION_FAILED', 'INSTANCE_OFFLINE', 'INSTANCE_TIMEOUT', 'INSTANCE_UNREACHABLE', 'WA_CALL_FAILED'];
const INTERACTION_ERRORS: ErrorCode[] = [...NETWORK_ERRORS, 'RATE_LIMITED'];
const GROUP_ERRORS: ErrorCode[] = [...INTERACTION_ERRORS, 'NOT_A_GROUP', 'CHAT_NOT_FOUND'];
const ADMIN_ONE: ErrorCode[] = ['INSTANCE_NOT_FOUND'];

const ACCEPTED = {
  status: 202,
  schema: okEnvelope(ref('AcceptedJob')),
  description: 'Accepted: the job is stored. 200 with `idempotentReplay: true` for a replay of the same key and payload.',
};

const RECIPIENT = '4915112345678';
const sendExample: Record<string, unknown> = {
  'send-message': { phone: RECIPIENT, message: 'Your order has shipped', idempotencyKey: 'order-4711-shipped' },
  'send-media': { phone: RECIPIENT, mediaBase64: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', mimetype: 'image/png', caption: 'the label' },
  'send-voice': { phone: RECIPIENT, mediaBase64: 'T2dnUwACAAAAAAAAAAA=', mimetype: 'audio/ogg; codecs=opus' },
  'send-document': { phone: RECIPIENT, mediaBase64: 'JVBERi0xLjQK', mimetype: 'application/pdf', filename: 'invoice.pdf' },
  'send-sticker': { phone: RECIPIENT, mediaBase64: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', mimetype: 'image/png' },
  'send-video': { phone: RECIPIENT, mediaBase64: 'AAAAIGZ0eXBpc29t', mimetype: 'video/mp4', asGif: true },
  'send-location': { phone: RECIPIENT, latitude: 52.52, longitude: 13.405, name: 'Berlin' },
  'send-contact': { phone: RECIPIENT, contactIds: ['4915112340002@c.us'] },
  'send-poll': { phone: RECIPIENT, name: 'Lunch?', options: ['Pizza', 'Salad'], allowMultipleAnswers: false },
};

/** The v2 send routes and their structs (send.ts mounts `POST /api/v2/<route>` for each; the test fails on a
 * mounted route missing here). */
const SEND_ROUTES: [string, keyof typeof SEND_SCHEMAS][] = [
  ['send-message', 'text'], ['send-media', 'media'], ['send-voice', 'voice'], ['send-document', 'document'], ['send-sticker', 'sticker'],
  ['send-video', 'video'], ['send-location', 'location'], ['send-contact', 'contact'], ['send-poll', 'poll'],
];

/**
 * `struct`'s schema with the property `key` described by `inner`: the route checks that property again with
 * `inner` (admin-instances.ts takes `settings` as a record, then parses it with SettingsPatchStruct).
 */
function checkedWith(struct: AnyStruct, key: string, inner: AnyStruct): JsonSchema {
  const base = structSchema(struct);
  return { ...base, properties: { ...(base.properties as Record<string, JsonSchema>), [key]: structSchema(inner) } };
}

const SEND_SUMMARY: Record<string, string> = {
  'send-message': 'Send a text message',
  'send-media': 'Send an image or other media',
  'send-voice': 'Send a voice note',
  'send-document': 'Send a document',
  'send-sticker': 'Send a sticker (image only)',
  'send-video': 'Send a video (or a looping GIF)',
  'send-location': 'Send a location',
  'send-contact': 'Send one or more contact cards',
  'send-poll': 'Send a poll',
};

export const REGISTRY: Record<string, Operation> = {
  'GET /health': { summary: 'Health counts (no authentication)', tag: 'Health', ok: { status: 200, schema: ref('Health'), description: 'The health object itself (not enveloped).' }, example: {} },
  'GET /openapi.json': { summary: 'This OpenAPI 3.1 document', tag: 'Health', ok: { status: 200, schema: { type: 'object', required: ['openapi'] }, description: 'The document (not enveloped).' }, example: {} },
  'GET /docs': { summary: 'The API reference page (Redoc)', tag: 'Health', ok: { status: 200, schema: { type: 'string' }, description: 'An HTML page.' } },
  'GET /docs/redoc.standalone.js': { summary: 'The Redoc bundle the reference page loads', tag: 'Health', ok: { status: 200, schema: { type: 'string' }, description: 'JavaScript.' } },
  'POST /internal/v1/instances/:id/ask': {
    summary: 'Node to node: an ask to an instance this node runs',
    tag: 'Cluster (internal)',
    description: 'Used between the nodes of one cluster only, with CLUSTER_SECRET; not for integrators.',
    body: AskBody,
    ok: data(obj({ reply: { type: 'object' } })),
    errors: ['VALIDATION_FAILED', 'INSTANCE_UNREACHABLE'],
  },

  // ---- operator
  'POST /admin/v1/instances': {
    summary: 'Create an instance',
    tag: 'Operator',
    description: 'Answers the instance and its API key, shown only here (stored as a hash).',
    body: checkedWith(CreateSchema, 'settings', SettingsPatchStruct),
    ok: data(obj({ instance: ref('Instance'), apiKey: { type: 'string', pattern: '^wapi_' } }), 201),
    errors: ['VALIDATION_FAILED', 'CONFLICT'],
    example: { body: { name: 'shop-berlin', driver: 'sandbox', settings: { maxPerHour: 30, quietHours: null } } },
  },
  'GET /admin/v1/instances': { summary: 'List instances', tag: 'Operator', ok: data(items(ref('Instance'))), example: {} },
  'GET /admin/v1/instances/:id': { summary: 'One instance with its live status', tag: 'Operator', ok: data(ref('Instance')), errors: ADMIN_ONE },
  'PATCH /admin/v1/instances/:id': {
    summary: 'Change settings (limit changes re-plan the waiting jobs)',
    tag: 'Operator',
    body: checkedWith(InstancePatchSchema, 'settings', SettingsPatchStruct),
    ok: data(ref('Instance')),
    errors: [...ADMIN_ONE, 'VALIDATION_FAILED'],
  },
  'DELETE /admin/v1/instances/:id': { summary: 'Delete an instance and its data', tag: 'Operator', ok: data(obj({ id: { type: 'string' }, deleted: { const: true } })), errors: ADMIN_ONE },
  'POST /admin/v1/instances/:id/keys': { summary: 'Rotate the API key (the old one stops working)', tag: 'Operator', ok: data(obj({ instanceId: { type: 'string' }, apiKey: { type: 'string' } }), 201), errors: ADMIN_ONE },
  'POST /admin/v1/instances/:id/restart': { summary: 'Ordered restart (v2 answers 503 QUEUE_PAUSED meanwhile)', tag: 'Operator', ok: data(obj({ instanceId: { type: 'string' }, restarting: { const: true } }), 202), errors: ADMIN_ONE },
  'POST /admin/v1/instances/:id/logout': { summary: 'Unlink the number', tag: 'Operator', ok: data(obj({ instanceId: { type: 'string' }, loggedOut: { const: true } }), 202), errors: ADMIN_ONE },
  'GET /admin/v1/instances/:id/qr': {
    summary: 'The QR code to link (answered with Cache-Control: no-store)',
    tag: 'Operator',
    description: 'While `waiting_qr` with a QR shown, `qr` is the PNG data URL and `raw` the QR as the driver gave it; otherwise both are null. A pairing code replaces the QR.',
    ok: data(obj({ status: { type: 'string' }, qr: { type: ['string', 'null'] }, raw: { type: ['string', 'null'] } })),
    errors: [...ADMIN_ONE, 'INSTANCE_TIMEOUT', 'INSTANCE_UNREACHABLE'],
  },
  'POST /admin/v1/instances/:id/pairing-code': {
    summary: 'Link by pairing code: answers the code (also sent as webhook event `code`)',
    tag: 'Operator',
    description: 'The first code newer than the request (Cache-Control: no-store). The webjs driver restarts its session in pairing mode first, so this can take up to a minute; no code by then is 504 INSTANCE_TIMEOUT (it may still come as the webhook event). 409 CONFLICT when the instance is linked or no session waits for a link.',
    body: PairingSchema,
    ok: data(obj({ instanceId: { type: 'string' }, code: { type: 'string' }, at: { type: 'string', format: 'date-time' } })),
    errors: [...ADMIN_ONE, 'VALIDATION_FAILED', 'CONFLICT', 'INSTANCE_TIMEOUT', 'INSTANCE_UNREACHABLE'],
  },
  'GET /admin/v1/nodes': { summary: 'The nodes of the cluster', tag: 'Operator', ok: data(items({ type: 'object' })) },
  'POST /admin/v1/instances/:id/move': {
    summary: 'Move an instance to another node',
    tag: 'Operator',
    body: MoveSchema,
    ok: data(obj({ instanceId: { type: 'string' }, node: { type: 'string' }, moving: { const: true } }), 202),
    errors: [...ADMIN_ONE, 'VALIDATION_FAILED'],
  },
  'PUT /admin/v1/instances/:id/webhook': { summary: 'Set the webhook receiver', tag: 'Webhooks', body: WebhookInput, ok: anyData(), errors: [...ADMIN_ONE, 'VALIDATION_FAILED'] },
  'GET /admin/v1/instances/:id/webhook': { summary: 'Show the webhook (without its secret)', tag: 'Webhooks', ok: anyData(), errors: [...ADMIN_ONE, 'NOT_FOUND'] },
  'DELETE /admin/v1/instances/:id/webhook': { summary: 'Remove the webhook', tag: 'Webhooks', ok: data(obj({ deleted: { type: 'boolean' } })), errors: [...ADMIN_ONE, 'NOT_FOUND'] },
  'POST /admin/v1/instances/:id/webhook/test': { summary: 'Send event `test`', tag: 'Webhooks', body: TestInput, ok: data(obj({ eventId: { type: 'string' } }), 202), errors: [...ADMIN_ONE, 'NOT_FOUND', 'CONFLICT'] },
  'GET /admin/v1/instances/:id/webhook/deliveries': { summary: 'Deliveries with their attempts', tag: 'Webhooks', query: DeliveriesQuery, ok: anyData(), errors: [...ADMIN_ONE, 'VALIDATION_FAILED'] },
  // ---- an instance's queue for the operator (the v2 queue routes' handlers, the instance in the path)
  'GET /admin/v1/instances/:id/queue': { summary: "An instance's queue summary (as GET /api/v2/queue)", tag: 'Queue', ok: data(ref('QueueSummary')), errors: [...ADMIN_ONE, 'INSTANCE_TIMEOUT'], example: {} },
  'GET /admin/v1/instances/:id/queue/items': {
    summary: "An instance's jobs, oldest first (as GET /api/v2/queue/items)",
    tag: 'Queue',
    query: ItemsQuery,
    ok: data(obj({ items: { type: 'array', items: ref('JobStatus') }, nextCursor: { type: ['string', 'null'] } })),
    errors: [...ADMIN_ONE, 'VALIDATION_FAILED'],
    example: { query: { state: 'scheduled', limit: '10' } },
  },
  'DELETE /admin/v1/instances/:id/messages/:jobId': { summary: "Cancel a waiting job of the instance (as DELETE /api/v2/messages/:id)", tag: 'Queue', ok: data(ref('JobStatus')), errors: [...ADMIN_ONE, 'JOB_NOT_FOUND', 'JOB_NOT_CANCELLABLE'] },
  'POST /admin/v1/instances/:id/messages/:jobId/requeue': {
    summary: 'Requeue a failed, expired or cancelled job of the instance as a new job (as POST /api/v2/messages/:id/requeue)',
    tag: 'Queue',
    ok: ACCEPTED,
    errors: [...ADMIN_ONE, ...SEND_ERRORS, 'JOB_NOT_FOUND', 'JOB_NOT_REQUEUEABLE'],
  },
  'POST /admin/v1/instances/:id/webhook/deliveries/:eventId/redeliver': {
    summary: 'Send a failed or delivered event again',
    tag: 'Webhooks',
    description:
      'Puts the delivery back to `pending` with its next attempt due now and a fresh budget of attempts (the configured maximum of its event); the attempts made stay in its log and the numbering continues. The receiver gets the same `X-Event-Id` again. 409 CONFLICT when the delivery is still pending or the instance has no enabled webhook; 404 NOT_FOUND when the instance has no such event.',
    ok: data(obj({ eventId: { type: 'string' }, state: { const: 'pending' } }), 202),
    errors: [...ADMIN_ONE, 'NOT_FOUND', 'CONFLICT'],
  },
  'GET /metrics': {
    summary: 'Prometheus metrics (admin token or METRICS_TOKEN)',
    tag: 'Operator',
    ok: { status: 200, schema: { type: 'string' }, description: 'The Prometheus text exposition format (text/plain; version=0.0.4).' },
  },
  'GET /console': { summary: 'The operator console (an HTML page)', tag: 'Operator', ok: { status: 200, schema: { type: 'string' }, description: 'An HTML page.' } },
  'GET /console/app.js': { summary: "The console's script", tag: 'Operator', ok: { status: 200, schema: { type: 'string' }, description: 'JavaScript.' } },
  'GET /console/app.css': { summary: "The console's style", tag: 'Operator', ok: { status: 200, schema: { type: 'string' }, description: 'CSS.' } },
  'GET /console/session': { summary: 'Whether this browser is signed in to the console', tag: 'Operator', ok: data(obj({ signedIn: { type: 'boolean' } })) },
  'POST /console/session': {
    summary: 'Sign in to the console with the admin token (sets an HttpOnly, SameSite=Strict session cookie)',
    tag: 'Operator',
    description: 'Needs the header `X-Console: 1`. A request authenticated by the cookie must send `X-Console: 1` on every method but GET, HEAD and OPTIONS.',
    body: { type: 'object', required: ['token'], properties: { token: { type: 'string', minLength: 1, maxLength: 512 } }, additionalProperties: false },
    ok: data(obj({ signedIn: { type: 'boolean' } })),
    errors: ['VALIDATION_FAILED', 'UNAUTHORIZED', 'FORBIDDEN'],
  },
  'DELETE /console/session': { summary: 'Sign out of the console (the session ends, its event streams close)', tag: 'Operator', ok: data(obj({ signedIn: { type: 'boolean' } })) },
  'GET /console/machines': {
    summary: 'The instance and job machines as JSON, for the state diagrams (nested and parallel states, transitions with their events and targets)',
    tag: 'Operator',
    ok: data(obj({ instance: { type: 'object' }, job: { type: 'object' } })),
  },
  'GET /console/events': { summary: 'The instances with status and queue counts, live (server-sent events, every 2 s)', tag: 'Operator', ok: { status: 200, schema: { type: 'string' }, description: 'text/event-stream' } },
  'GET /debug/actors': { summary: 'The actor tree', tag: 'Operator', ok: data(obj({ actors: {} })) },
  'GET /debug/actors/stream': { summary: 'The actor tree, live (server-sent events)', tag: 'Operator', ok: { status: 200, schema: { type: 'string' }, description: 'text/event-stream' } },

  // ---- status
  'GET /api/status': { summary: "The instance's status, queue counts and limits", tag: 'Status', ok: data(ref('Status')), example: {} },
  'GET /api/qr': {
    summary: 'The QR code to link (or the link status)',
    tag: 'Status',
    ok: data(obj({ status: { type: 'string' }, phoneNumber: { type: 'string' }, qr: { type: 'string' }, message: { type: 'string' } }, ['phoneNumber', 'qr', 'message'])),
    example: {},
  },

  // ---- queue
  'GET /api/v2/queue': { summary: 'Queue summary: mode, counts, next slot, limits', tag: 'Queue', ok: data(ref('QueueSummary')), errors: ['INSTANCE_TIMEOUT'], example: {} },
  'GET /api/v2/queue/items': {
    summary: 'Jobs, oldest first',
    tag: 'Queue',
    query: ItemsQuery,
    ok: data(obj({ items: { type: 'array', items: ref('JobStatus') }, nextCursor: { type: ['string', 'null'] } })),
    errors: ['VALIDATION_FAILED'],
    example: { query: { state: 'scheduled', limit: '10' } },
  },
  'POST /api/v2/queue/replan': { summary: 'Re-plan every waiting job', tag: 'Queue', ok: data(obj({ replanned: { const: true }, affected: { type: 'integer' }, epoch: { type: 'integer' } })), errors: ['QUEUE_STORE_UNAVAILABLE'], example: {} },
  'GET /api/v2/messages': { summary: 'The job of an idempotency key (7 days)', tag: 'Queue', query: KeyQuery, ok: data(ref('JobStatus')), errors: ['VALIDATION_FAILED', 'JOB_NOT_FOUND'] },
  'GET /api/v2/messages/:id': { summary: 'A job (wq_ id)', tag: 'Queue', ok: data(ref('JobStatus')), errors: ['JOB_NOT_FOUND'] },
  'DELETE /api/v2/messages/:id': { summary: 'Cancel a waiting job (wq_ id)', tag: 'Queue', ok: data(ref('JobStatus')), errors: ['JOB_NOT_FOUND', 'JOB_NOT_CANCELLABLE'] },
  'POST /api/v2/messages/:id/requeue': { summary: 'Requeue a failed, expired or cancelled job as a new job', tag: 'Queue', ok: ACCEPTED, errors: [...SEND_ERRORS, 'JOB_NOT_FOUND', 'JOB_NOT_REQUEUEABLE'] },

  // ---- sends
  ...Object.fromEntries(
    SEND_ROUTES.map(([name, kind]): [string, Operation] => [
      `POST /api/v2/${name}`,
      {
        summary: SEND_SUMMARY[name] ?? name,
        tag: 'Send (v2)',
        description: 'Asynchronous: answers at once with the job. Use an idempotency key; retry only with the same key.',
        body: SEND_SCHEMAS[kind],
        ok: ACCEPTED,
        errors: name === 'send-message' || name === 'send-location' || name === 'send-contact' || name === 'send-poll' ? SEND_ERRORS : [...MEDIA_SEND_ERRORS, ...(name === 'send-voice' ? (['VOICE_MIMETYPE_UNSUPPORTED'] as const) : []), ...(name === 'send-sticker' ? (['STICKER_VIDEO_UNSUPPORTED'] as const) : [])],
        example: { body: sendExample[name] },
      },
    ]),
  ),
  'POST /api/v2/messages/:msgId/forward': { summary: 'Forward a network message', tag: 'Send (v2)', body: SEND_SCHEMAS.forward, ok: ACCEPTED, errors: SEND_ERRORS },
  'POST /api/v2/groups': {
    summary: 'Create a group (through the queue)',
    tag: 'Groups',
    body: GroupCreateBody,
    ok: ACCEPTED,
    errors: SEND_ERRORS,
  },

  // ---- v1
  'POST /api/send-message': { summary: 'v1: send a text and wait for the outcome', tag: 'v1 (frozen)', v1: true, body: hand.V1_SEND, ok: { status: 200, schema: { type: 'object' } }, errors: ['QUEUE_WAIT_TIMEOUT'] },
  'POST /api/send-media': { summary: 'v1: send media and wait for the outcome', tag: 'v1 (frozen)', v1: true, body: hand.V1_SEND, ok: { status: 200, schema: { type: 'object' } }, errors: ['QUEUE_WAIT_TIMEOUT'] },
  'POST /api/send-bulk': { summary: 'v1: several sends', tag: 'v1 (frozen)', v1: true, body: hand.V1_BULK, ok: { status: 200, schema: { type: 'object' } } },
  'GET /api/check-number/:phone': { summary: 'v1: is the number on the network', tag: 'v1 (frozen)', v1: true, ok: { status: 200, schema: { type: 'object' } } },

  // ---- media
  'POST /api/v2/media': {
    summary: 'Upload a file (multipart/form-data, field `file`)',
    tag: 'Media',
    multipart: true,
    body: hand.UPLOAD,
    ok: data(obj({ stored: { const: true }, mediaId: { type: 'string' }, url: { type: 'string' }, expiresAt: { type: 'string' }, size: { type: 'integer' } }), 201),
    errors: ['VALIDATION_FAILED', 'PAYLOAD_TOO_LARGE', 'MEDIA_STORE_UNAVAILABLE'],
  },
  'GET /api/v2/media/:mediaId': { summary: 'Media metadata, or the bytes with ?download=1', tag: 'Media', query: hand.DOWNLOAD_QUERY, ok: anyData(), errors: ['MEDIA_NOT_FOUND', 'MEDIA_GONE'] },
  'DELETE /api/v2/media/:mediaId': { summary: 'Delete uploaded media', tag: 'Media', ok: data(obj({ mediaId: { type: 'string' }, deleted: { const: true } })), errors: ['MEDIA_NOT_FOUND'] },
  'GET /api/v2/messages/:msgId/media': { summary: "A network message's attachment (or its bytes with ?download=1)", tag: 'Media', query: hand.DOWNLOAD_QUERY, ok: data(ref('MediaAttachment')), errors: ['MESSAGE_NOT_FOUND', 'NO_MEDIA', ...NETWORK_ERRORS] },

  // ---- groups
  'POST /api/v2/groups/:groupId/participants': { summary: 'Add participants', tag: 'Groups', body: AddSchema, ok: data(obj({ groupId: { type: 'string' }, added: { type: 'array' }, failed: { type: 'object' } })), errors: GROUP_ERRORS },
  'DELETE /api/v2/groups/:groupId/participants': { summary: 'Remove participants', tag: 'Groups', body: ParticipantsBody, ok: data(obj({ groupId: { type: 'string' }, removed: { type: 'array' } })), errors: GROUP_ERRORS },
  'POST /api/v2/groups/:groupId/admins': { summary: 'Promote participants to admins', tag: 'Groups', body: ParticipantsBody, ok: data(obj({ groupId: { type: 'string' }, promoted: { type: 'array' } })), errors: GROUP_ERRORS },
  'DELETE /api/v2/groups/:groupId/admins': { summary: 'Demote admins', tag: 'Groups', body: ParticipantsBody, ok: data(obj({ groupId: { type: 'string' }, demoted: { type: 'array' } })), errors: GROUP_ERRORS },
  'GET /api/v2/groups/:groupId/invite': { summary: 'The invite code and link', tag: 'Groups', ok: data(obj({ code: { type: 'string' }, url: { type: 'string' } })), errors: GROUP_ERRORS },
  'POST /api/v2/groups/:groupId/invite/revoke': { summary: 'Revoke the invite (a new code)', tag: 'Groups', ok: data(obj({ code: { type: 'string' } })), errors: GROUP_ERRORS },
  'POST /api/v2/groups/:groupId/leave': { summary: 'Leave the group', tag: 'Groups', ok: data(obj({ groupId: { type: 'string' }, left: { const: true } })), errors: GROUP_ERRORS },
  'PATCH /api/v2/groups/:groupId': { summary: 'Change subject and/or description', tag: 'Groups', body: GroupPatchSchema, ok: anyData(), errors: GROUP_ERRORS },

  // ---- interactions
  'POST /api/v2/messages/:msgId/reaction': { summary: 'React to a message', tag: 'Interactions', body: ReactionSchema, ok: data(obj({ msgId: { type: 'string' }, emoji: { type: 'string' } })), errors: [...INTERACTION_ERRORS, 'MESSAGE_NOT_FOUND'] },
  'DELETE /api/v2/messages/:msgId/reaction': { summary: 'Remove the reaction', tag: 'Interactions', ok: data(obj({ msgId: { type: 'string' }, emoji: { type: 'null' } })), errors: [...INTERACTION_ERRORS, 'MESSAGE_NOT_FOUND'] },
  'POST /api/v2/chats/:chatId/seen': { summary: 'Mark a chat as seen', tag: 'Interactions', ok: data(obj({ chatId: { type: 'string' }, seen: { type: 'boolean' } })), errors: [...INTERACTION_ERRORS, 'CHAT_NOT_FOUND'] },
  'POST /api/v2/chats/:chatId/typing': { summary: 'Show "typing…"', tag: 'Interactions', body: PresenceSchema, ok: anyData(), errors: [...INTERACTION_ERRORS, 'CHAT_NOT_FOUND'] },
  'POST /api/v2/chats/:chatId/recording': { summary: 'Show "recording…"', tag: 'Interactions', body: PresenceSchema, ok: anyData(), errors: [...INTERACTION_ERRORS, 'CHAT_NOT_FOUND'] },
  'DELETE /api/v2/chats/:chatId/state': { summary: 'Stop typing/recording', tag: 'Interactions', ok: anyData(), errors: [...INTERACTION_ERRORS, 'CHAT_NOT_FOUND'] },
  'PATCH /api/v2/messages/:msgId': { summary: 'Edit an own text message', tag: 'Interactions', body: EditSchema, ok: data(obj({ messageId: { type: 'string' } })), errors: [...INTERACTION_ERRORS, 'MESSAGE_NOT_FOUND', 'CONFLICT'] },
  'DELETE /api/v2/messages/:msgId': { summary: 'Delete a network message (for me or everyone)', tag: 'Interactions', body: DeleteSchema, ok: data(obj({ msgId: { type: 'string' }, everyone: { type: 'boolean' } })), errors: [...INTERACTION_ERRORS, 'MESSAGE_NOT_FOUND'] },

  // ---- reads
  'GET /api/v2/chats': { summary: 'Chats, pinned first', tag: 'Reads', query: hand.CHATS_QUERY, ok: data(items(ref('Chat'), { total: { type: 'integer' }, nextCursor: {} })), errors: NETWORK_ERRORS },
  'GET /api/v2/chats/:chatId': { summary: 'One chat', tag: 'Reads', ok: data(ref('Chat')), errors: [...NETWORK_ERRORS, 'CHAT_NOT_FOUND'] },
  'GET /api/v2/chats/:chatId/messages': { summary: "A chat's messages", tag: 'Reads', query: hand.MESSAGES_QUERY, ok: data(items(ref('Message'), { limit: { type: 'integer' }, capped: { type: 'boolean' } })), errors: [...NETWORK_ERRORS, 'CHAT_NOT_FOUND'] },
  'GET /api/v2/messages/:msgId': { summary: 'One network message', tag: 'Reads', ok: data(ref('Message')), errors: [...NETWORK_ERRORS, 'MESSAGE_NOT_FOUND'] },
  'GET /api/v2/contacts/:contactId': { summary: 'One contact', tag: 'Reads', ok: data(ref('Contact')), errors: [...NETWORK_ERRORS, 'CONTACT_NOT_FOUND'] },
  'GET /api/v2/contacts/:contactId/picture': { summary: "A contact's picture URL", tag: 'Reads', ok: data(obj({ contactId: { type: 'string' }, pictureUrl: { type: ['string', 'null'] } })), errors: [...NETWORK_ERRORS, 'CONTACT_NOT_FOUND'] },
  'GET /api/v2/contacts/:phone/exists': { summary: 'Is the number on the network', tag: 'Reads', ok: data(obj({ phone: { type: 'string' }, registered: { type: 'boolean' }, whatsappId: { type: ['string', 'null'] } })), errors: NETWORK_ERRORS },

  // ---- sandbox control (the simulated network)
  'GET /sandbox/v1/instances/:instanceId': { summary: "The sandbox session's phase", tag: 'Sandbox', ok: anyData() },
  'GET /sandbox/v1/instances/:instanceId/qr': { summary: 'The current QR code', tag: 'Sandbox', ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/link': { summary: 'Scan the QR code (link a phone)', tag: 'Sandbox', body: sb.LinkBody, ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/pairing/confirm': { summary: 'Enter the pairing code', tag: 'Sandbox', body: sb.PairingBody, ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/unlink': { summary: 'Unlink the phone', tag: 'Sandbox', ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/messages': { summary: 'Write to the instance as a contact', tag: 'Sandbox', body: sb.InboundBody, ok: anyData(201) },
  'POST /sandbox/v1/instances/:instanceId/messages/:messageId/vote': { summary: 'Vote in a poll', tag: 'Sandbox', body: sb.VoteBody, ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/messages/:messageId/reaction': { summary: 'React as a contact', tag: 'Sandbox', body: sb.ReactionBody, ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/messages/:messageId/edit': { summary: 'Edit as a contact', tag: 'Sandbox', body: sb.EditBody, ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/messages/:messageId/revoke': { summary: 'Revoke as a contact', tag: 'Sandbox', body: sb.RevokeBody, ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/messages/:messageId/ack': { summary: 'Acknowledge (delivered, read, played)', tag: 'Sandbox', body: sb.AckBody, ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/calls': { summary: 'Call the instance', tag: 'Sandbox', body: sb.CallBody, ok: anyData(201) },
  'POST /sandbox/v1/instances/:instanceId/contact-changed': { summary: 'A contact changes number', tag: 'Sandbox', body: sb.ContactChangeBody, ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/battery': { summary: 'Battery event', tag: 'Sandbox', body: sb.BatteryBody, ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/chats/:chatId/archive': { summary: 'Archive or unarchive a chat', tag: 'Sandbox', body: sb.ArchiveBody, ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/groups': { summary: 'A contact creates a group', tag: 'Sandbox', body: sb.GroupBody, ok: anyData(201) },
  'POST /sandbox/v1/groups/:groupId/participants': { summary: 'Change group members', tag: 'Sandbox', body: sb.GroupMembersBody, ok: anyData() },
  'POST /sandbox/v1/groups/:groupId/leave': { summary: 'A member leaves', tag: 'Sandbox', body: sb.LeaveBody, ok: anyData() },
  'PATCH /sandbox/v1/groups/:groupId': { summary: 'Change subject or description', tag: 'Sandbox', body: sb.GroupInfoBody, ok: anyData() },
  'GET /sandbox/v1/groups/:groupId': { summary: 'A group as the network knows it', tag: 'Sandbox', ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/faults': { summary: 'Fault of the next call(s)', tag: 'Sandbox', body: sb.NextFaultBody, ok: anyData(201) },
  'GET /sandbox/v1/instances/:instanceId/faults': { summary: 'Pending faults', tag: 'Sandbox', ok: anyData() },
  'DELETE /sandbox/v1/instances/:instanceId/faults': { summary: 'Clear pending faults', tag: 'Sandbox', ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/fail': { summary: 'Crash the session, kill the browser or disconnect', tag: 'Sandbox', body: sb.FailBody, ok: anyData() },
  'PUT /sandbox/v1/accounts/:phone/fault': { summary: "Fault of an account's sends", tag: 'Sandbox', body: sb.FaultBody, ok: anyData() },
  'DELETE /sandbox/v1/accounts/:phone/fault': { summary: "Clear an account's fault", tag: 'Sandbox', ok: anyData() },
  'GET /sandbox/v1/accounts/:phone': { summary: 'An account of the network', tag: 'Sandbox', ok: anyData() },
  'PUT /sandbox/v1/accounts/:phone': { summary: 'Register or change an account', tag: 'Sandbox', body: sb.AccountBody, ok: anyData() },
  'GET /sandbox/v1/accounts/:phone/chats/:chatId/messages': { summary: "What an account's chat holds", tag: 'Sandbox', ok: anyData() },
  'GET /sandbox/v1/instances/:instanceId/ledger': { summary: 'What the network received from the instance', tag: 'Sandbox', ok: anyData() },
};

/** Shapes used only through $ref. */
export const COMPONENT_SCHEMAS = SCHEMAS;

/** Sending and its jobs: the instance's status, the queue, the v2 sends, the frozen v1 sends and media uploads. */
import { ItemsQuery, KeyQuery } from '../../routes/queue.js';
import { GroupCreateBody, SCHEMAS as SEND_SCHEMAS } from '../../routes/send-schemas.js';
import { obj, okEnvelope, ref } from '../components.js';
import * as hand from '../hand-bodies.js';
import { ACCEPTED, MEDIA_SEND_ERRORS, NETWORK_ERRORS, SEND_ERRORS, anyData, data, type Answer, type Operation } from './common.js';

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

/** The v2 send routes and their structs (routes/send.ts mounts `POST /api/v2/<route>` for each; the test fails on a
 * mounted route missing here). */
const SEND_ROUTES: [string, keyof typeof SEND_SCHEMAS][] = [
  ['send-message', 'text'], ['send-media', 'media'], ['send-voice', 'voice'], ['send-document', 'document'], ['send-sticker', 'sticker'],
  ['send-video', 'video'], ['send-location', 'location'], ['send-contact', 'contact'], ['send-poll', 'poll'],
];

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

/**
 * SPEC.md v1 rule 5: with `legacyQueueMode` async, send-message (and send-media) answer at once, queued
 * (legacy-answer.ts `queuedData`; `type: 'media'` on send-media).
 */
/** `?download=1` (media.ts, message-media.ts): the bytes themselves, with the file's Content-Type. */
const DOWNLOADED = "With `?download=1`: the file's bytes, with its own Content-Type (application/octet-stream when it has none) and `X-Content-Type-Options: nosniff`.";

const V1_QUEUED: Answer = {
  status: 202,
  description: 'legacyQueueMode async: queued, not sent yet (poll the job; do not resend)',
  schema: okEnvelope(
    obj(
      { messageId: { type: 'null' }, phone: { type: 'string' }, status: { const: 'queued' }, type: { const: 'media' }, jobId: { type: 'string', pattern: '^wq_' }, scheduledAt: { type: ['string', 'null'], format: 'date-time' }, etaSeconds: { type: 'integer' } },
      ['type'],
    ),
  ),
};

export const SEND_OPERATIONS: Record<string, Operation> = {
  // ---- status
  'GET /api/status': { summary: "The instance's status, queue counts and limits", tag: 'Status', ok: data(ref('Status')), errors: ['QUEUE_STORE_UNAVAILABLE', 'INSTANCE_TIMEOUT'], example: {} },
  'GET /api/qr': {
    summary: 'The QR code to link (or the link status)',
    tag: 'Status',
    ok: data(obj({ status: { type: 'string' }, phoneNumber: { type: 'string' }, qr: { type: 'string' }, message: { type: 'string' } }, ['phoneNumber', 'qr', 'message'])),
    example: {},
  },

  // ---- queue
  'GET /api/v2/queue': { summary: 'Queue summary: mode, counts, next slot, limits', tag: 'Queue', ok: data(ref('QueueSummary')), errors: ['QUEUE_STORE_UNAVAILABLE', 'INSTANCE_TIMEOUT'], example: {} },
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
  'POST /api/send-message': { summary: 'v1: send a text and wait for the outcome', tag: 'v1 (frozen)', v1: true, body: hand.V1_SEND, ok: { status: 200, schema: { type: 'object' } }, also: [V1_QUEUED], errors: ['QUEUE_WAIT_TIMEOUT'] },
  'POST /api/send-media': { summary: 'v1: send media and wait for the outcome', tag: 'v1 (frozen)', v1: true, body: hand.V1_SEND, ok: { status: 200, schema: { type: 'object' } }, also: [V1_QUEUED], errors: ['QUEUE_WAIT_TIMEOUT'] },
  'POST /api/send-bulk': { summary: 'v1: several sends', tag: 'v1 (frozen)', v1: true, body: hand.V1_BULK, ok: { status: 200, schema: { type: 'object' } } },
  // the v2 lookup's failures in v1's shape, with their statuses (legacy-reads.ts `toV1ReadError`): a bad phone is 400
  'GET /api/check-number/:phone': { summary: 'v1: is the number on the network', tag: 'v1 (frozen)', v1: true, ok: { status: 200, schema: { type: 'object' } }, errors: NETWORK_ERRORS },

  // ---- media
  'POST /api/v2/media': {
    summary: 'Upload a file (multipart/form-data, field `file`)',
    tag: 'Media',
    multipart: true,
    body: hand.UPLOAD,
    ok: data(obj({ stored: { const: true }, mediaId: { type: 'string' }, url: { type: 'string' }, expiresAt: { type: 'string' }, size: { type: 'integer' } }), 201),
    errors: ['VALIDATION_FAILED', 'PAYLOAD_TOO_LARGE', 'MEDIA_STORE_UNAVAILABLE'],
  },
  'GET /api/v2/media/:mediaId': { summary: 'Media metadata, or the bytes with ?download=1', tag: 'Media', query: hand.DOWNLOAD_QUERY, ok: { ...anyData(), bytes: DOWNLOADED }, errors: ['MEDIA_NOT_FOUND', 'MEDIA_GONE'] },
  'DELETE /api/v2/media/:mediaId': { summary: 'Delete uploaded media', tag: 'Media', ok: data(obj({ mediaId: { type: 'string' }, deleted: { const: true } })), errors: ['MEDIA_NOT_FOUND'] },
  'GET /api/v2/messages/:msgId/media': { summary: "A network message's attachment (or its bytes with ?download=1)", tag: 'Media', query: hand.DOWNLOAD_QUERY, ok: { ...data(ref('MediaAttachment')), bytes: DOWNLOADED }, errors: ['MESSAGE_NOT_FOUND', 'NO_MEDIA', ...NETWORK_ERRORS] },
};

/**
 * Errors a person can act on: for each validated field of each route, a bad input → 400 VALIDATION_FAILED,
 * `data.field`, and the exact "<field> must …" message naming what is allowed (range, length, values,
 * form). Real HTTP to a whole gateway; the table walks every kind of failure the schemas can produce (type,
 * size of strings/arrays/integers, min, enums, custom refinements, unknown keys, missing fields).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { JOB_STATES } from '../../machines/job.machine.js';

let t: TestGateway;
let key = '';
let id = '';
before(async () => {
  t = await startTestGateway({ label: 'validation_messages' });
  const created = await t.createInstance('validation');
  key = created.apiKey;
  id = created.instance.id;
});
after(async () => {
  await t.stop();
});

const TO = { phone: '4915112345678' };
const GROUP = '120363000000000001@g.us';
const MSG = 'true_4915112345678@c.us_3EB0ABCDEF';

type Row = [who: 'key' | 'admin', method: string, route: string, body: unknown, field: string, message: string];

/** Routes with `:id` get the test instance's id. */
const ROWS: Row[] = [
  // v2 sends: the common fields
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: 'hi', priority: 10 }, 'priority', 'priority must be an integer from 1 to 9'],
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: 'hi', priority: 'high' }, 'priority', 'priority must be an integer from 1 to 9'],
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: 'hi', priority: 2.5 }, 'priority', 'priority must be an integer from 1 to 9'],
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: 'hi', ttlSeconds: 30 }, 'ttlSeconds', 'ttlSeconds must be an integer from 60 to 2592000'],
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: 'hi', notBefore: 'tomorrow' }, 'notBefore', 'notBefore must be an ISO 8601 timestamp with a time zone, e.g. 2030-01-31T09:00:00Z'],
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: 'hi', notBefore: 1_900_000_000_000 }, 'notBefore', 'notBefore must be a string'],
  // a day its month does not have: Date.parse would roll it over to another date (found from the outside)
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: 'hi', notBefore: '2030-11-31T10:00:00Z' }, 'notBefore', 'notBefore must be an ISO 8601 timestamp with a time zone, e.g. 2030-01-31T09:00:00Z'],
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: 'hi', notBefore: '2030-02-29T10:00:00+02:00' }, 'notBefore', 'notBefore must be an ISO 8601 timestamp with a time zone, e.g. 2030-01-31T09:00:00Z'],
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: '' }, 'message', 'message must be a non-empty string'],
  ['key', 'POST', '/api/v2/send-message', { ...TO }, 'message', 'message is required'],
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: 42 }, 'message', 'message must be a string'],
  ['key', 'POST', '/api/v2/send-message', { phone: 4915112345678, message: 'hi' }, 'phone', 'phone must be a string'],
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: 'hi', options: [] }, 'options', 'options must be an object'],
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: 'hi', options: { mentions: ['4915112345678'] } }, 'options.mentions.0', 'options.mentions.0 must be a contact id: digits@c.us or digits@lid'],
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: 'hi', options: { linkPreview: 'yes' } }, 'options.linkPreview', 'options.linkPreview must be true or false'],
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: 'hi', options: { quotedMessageId: '' } }, 'options.quotedMessageId', 'options.quotedMessageId must be a non-empty string'],
  ['key', 'POST', '/api/v2/send-message', { ...TO, message: 'hi', options: { groupMentions: [{ subject: 'x', id: '123@c.us' }] } }, 'options.groupMentions.0.id', 'options.groupMentions.0.id must be a group id ending in @g.us (digits, or digits-digits, before it)'],
  ['key', 'POST', '/api/v2/send-media', { ...TO, mediaUrl: 'https://example.org/a.png', options: { isViewOnce: 'yes' } }, 'options.isViewOnce', 'options.isViewOnce must be true or false'],
  // v2 sends: per route
  ['key', 'POST', '/api/v2/send-media', { ...TO, mediaId: 'x1' }, 'mediaId', 'mediaId must be a media id from POST /api/v2/media (md_…)'],
  ['key', 'POST', '/api/v2/send-media', { ...TO, mediaUrl: 'https://example.org/a.png', mimetype: 'png' }, 'mimetype', 'mimetype must be a MIME type such as image/png or audio/ogg; codecs=opus'],
  ['key', 'POST', '/api/v2/send-media', { ...TO, mediaUrl: '' }, 'mediaUrl', 'mediaUrl must be a non-empty string'],
  ['key', 'POST', '/api/v2/send-document', { ...TO, mediaUrl: 'https://example.org/a.pdf', filename: '' }, 'filename', 'filename must be 1 to 255 characters long'],
  ['key', 'POST', '/api/v2/send-document', { ...TO, mediaUrl: 'https://example.org/a.pdf', filename: '   ' }, 'filename', 'filename must not be blank'],
  ['key', 'POST', '/api/v2/send-document', { ...TO, mediaUrl: 'https://example.org/a.pdf', filename: 'docs/..' }, 'filename', 'filename must name a file: nothing is left of it without its path and control characters'],
  ['key', 'POST', '/api/v2/send-sticker', { ...TO, mediaUrl: 'https://example.org/a.png', stickerName: 'n'.repeat(129) }, 'stickerName', 'stickerName must be at most 128 characters long'],
  ['key', 'POST', '/api/v2/send-video', { ...TO, mediaUrl: 'https://example.org/a.mp4', asGif: 1 }, 'asGif', 'asGif must be true or false'],
  ['key', 'POST', '/api/v2/send-location', { ...TO, latitude: 91, longitude: 0 }, 'latitude', 'latitude must be a number from -90 to 90'],
  ['key', 'POST', '/api/v2/send-location', { ...TO, latitude: 0, longitude: -181 }, 'longitude', 'longitude must be a number from -180 to 180'],
  ['key', 'POST', '/api/v2/send-location', { ...TO, latitude: 0 }, 'longitude', 'longitude is required'],
  ['key', 'POST', '/api/v2/send-contact', { ...TO, contactIds: [] }, 'contactIds', 'contactIds must have 1 to 256 items'],
  ['key', 'POST', '/api/v2/send-contact', { ...TO, contactIds: ['nobody'] }, 'contactIds.0', 'contactIds.0 must be a contact id: digits@c.us or digits@lid'],
  ['key', 'POST', '/api/v2/send-poll', { ...TO, name: 'Lunch?', options: ['yes'] }, 'options', 'options must have 2 to 12 items'],
  ['key', 'POST', '/api/v2/send-poll', { ...TO, name: '', options: ['a', 'b'] }, 'name', 'name must be 1 to 255 characters long'],
  ['key', 'POST', '/api/v2/send-poll', { ...TO, name: 'Lunch?', options: ['a', 'o'.repeat(101)] }, 'options.1', 'options.1 must be 1 to 100 characters long'],
  // characters are code points: 101 emoji are 101 characters (202 UTF-16 code units), 100 would pass
  ['key', 'POST', '/api/v2/send-poll', { ...TO, name: 'Lunch?', options: ['a', '😀'.repeat(101)] }, 'options.1', 'options.1 must be 1 to 100 characters long'],
  ['key', 'POST', `/api/v2/messages/${MSG}/forward`, { toChatId: 'someone' }, 'toChatId', 'toChatId must be a chat id: digits@c.us, digits@lid or a group id ending in @g.us'],
  ['key', 'POST', '/api/v2/groups', { title: '   ', participants: ['4915112345678@c.us'] }, 'title', 'title must not be blank'],
  ['key', 'POST', '/api/v2/groups', { title: 'Team', participants: [] }, 'participants', 'participants must have 1 to 1024 items'],
  // interactions and groups
  ['key', 'POST', `/api/v2/messages/${MSG}/reaction`, { emoji: '' }, 'emoji', 'emoji must be 1 to 32 characters long'],
  ['key', 'POST', `/api/v2/messages/${MSG}/reaction`, { emoji: '😀'.repeat(33) }, 'emoji', 'emoji must be 1 to 32 characters long'],
  ['key', 'POST', '/api/v2/chats/4915112345678@c.us/typing', { durationMs: 0 }, 'durationMs', 'durationMs must be an integer of at least 1'],
  ['key', 'PATCH', `/api/v2/messages/${MSG}`, { message: '' }, 'message', 'message must be 1 to 65536 characters long'],
  ['key', 'PATCH', `/api/v2/groups/${GROUP}`, { subject: '  ' }, 'subject', 'subject must not be blank'],
  ['key', 'PATCH', `/api/v2/groups/${GROUP}`, { subject: 'Team', colour: 'red' }, 'colour', 'colour is not allowed here (unknown field)'],
  ['key', 'POST', `/api/v2/groups/${GROUP}/participants`, { participants: ['x'] }, 'participants.0', 'participants.0 must be a contact id: digits@c.us or digits@lid'],
  // queue queries
  ['key', 'GET', '/api/v2/queue/items?state=lost', undefined, 'state', `state must be one of ${JOB_STATES.join(', ')}`],
  ['key', 'GET', '/api/v2/queue/items?limit=0', undefined, 'limit', 'limit must be an integer from 1 to 1000000'],
  // operator API
  ['admin', 'POST', '/admin/v1/instances', { name: 'no spaces please' }, 'name', 'name must be 1 to 40 ASCII letters, digits or dashes'],
  ['admin', 'POST', '/admin/v1/instances', { name: 'ok', driver: 'telegram' }, 'driver', 'driver must be one of sandbox, webjs'],
  ['admin', 'POST', '/admin/v1/instances', { name: 'ok', colour: 'red' }, 'colour', 'colour is not allowed here (unknown field)'],
  ['admin', 'PATCH', '/admin/v1/instances/:id', { settings: { maxPerHour: -1 } }, 'settings.maxPerHour', 'settings.maxPerHour must be an integer from 0 to 1000000'],
  ['admin', 'PATCH', '/admin/v1/instances/:id', { settings: { minDelayMs: 'fast' } }, 'settings.minDelayMs', 'settings.minDelayMs must be an integer'],
  ['admin', 'PATCH', '/admin/v1/instances/:id', { settings: { maxDelayMs: 86_400_001 } }, 'settings.maxDelayMs', 'settings.maxDelayMs must be an integer from 0 to 86400000'],
  ['admin', 'PATCH', '/admin/v1/instances/:id', { settings: { minDelayMs: 5000, maxDelayMs: 1000 } }, 'settings.maxDelayMs', 'settings.maxDelayMs must be at least minDelayMs'],
  ['admin', 'PATCH', '/admin/v1/instances/:id', { settings: { defaultTtlSeconds: 10 } }, 'settings.defaultTtlSeconds', 'settings.defaultTtlSeconds must be an integer from 60 to 2592000'],
  ['admin', 'PATCH', '/admin/v1/instances/:id', { settings: { quietHours: { start: '25:00', end: '07:00', tz: 'Europe/Berlin' } } }, 'settings.quietHours.start', 'settings.quietHours.start must be a time of day HH:MM from 00:00 to 23:59'],
  ['admin', 'PATCH', '/admin/v1/instances/:id', { settings: { quietHours: { start: '22:00', end: '07:00', tz: 'Mars/Olympus' } } }, 'settings.quietHours.tz', 'settings.quietHours.tz must be an IANA time zone such as Europe/Berlin'],
  ['admin', 'PATCH', '/admin/v1/instances/:id', { settings: { quietHours: { start: '22:00', end: '22:00', tz: 'Europe/Berlin' } } }, 'settings.quietHours.end', 'settings.quietHours.end must differ from start'],
  ['admin', 'PATCH', '/admin/v1/instances/:id', { settings: { legacyQueueMode: 'later' } }, 'settings.legacyQueueMode', 'settings.legacyQueueMode must be one of sync, async'],
  ['admin', 'PATCH', '/admin/v1/instances/:id', { settings: { enabled: 'no' } }, 'settings.enabled', 'settings.enabled must be true or false'],
  ['admin', 'PATCH', '/admin/v1/instances/:id', { settings: { turbo: true } }, 'settings.turbo', 'settings.turbo is not allowed here (unknown field)'],
  ['admin', 'POST', '/admin/v1/instances/:id/pairing-code', { phoneNumber: '+4915112345678' }, 'phoneNumber', 'phoneNumber must be 7 to 15 digits, the international number without +'],
  ['admin', 'PUT', '/admin/v1/instances/:id/webhook', { url: 'ftp://hooks.example/x', secret: 's'.repeat(16) }, 'url', 'url must be an http:// or https:// URL'],
  ['admin', 'PUT', '/admin/v1/instances/:id/webhook', { url: 'https://hooks.example/x', secret: 'short-secret' }, 'secret', 'secret must be 16 to 512 characters long'],
  ['admin', 'PUT', '/admin/v1/instances/:id/webhook', { url: 'https://hooks.example/x', secret: 's'.repeat(16), events: ['everything'] }, 'events.0', 'events.0 must be * or an event name of docs/webhooks.md (e.g. message, ready, message.sent)'],
  ['admin', 'PUT', '/admin/v1/instances/:id/webhook', { url: 'https://hooks.example/x', secret: 's'.repeat(16), events: [] }, 'events', 'events must have 1 to 100 items'],
  ['admin', 'GET', '/admin/v1/instances/:id/webhook/deliveries?limit=500', undefined, 'limit', 'limit must be an integer from 1 to 200'],
  ['admin', 'GET', '/admin/v1/instances/:id/webhook/deliveries?limit=-1', undefined, 'limit', 'limit must be an integer from 1 to 200'],
  ['admin', 'GET', '/admin/v1/instances/:id/webhook/deliveries?limit=ten', undefined, 'limit', 'limit must be an integer from 1 to 200'],
  // the sandbox network's control API
  ['admin', 'POST', '/sandbox/v1/instances/:id/battery', { battery: 101, plugged: true }, 'battery', 'battery must be an integer from 0 to 100'],
  ['admin', 'POST', `/sandbox/v1/instances/:id/messages/${MSG}/ack`, { ack: 1 }, 'ack', 'ack must be one of 2, 3, 4'],
  ['admin', 'POST', '/sandbox/v1/instances/:id/faults', { kind: 'meteor' }, 'kind', 'kind must be one of not_registered, no_id, hang, call_error, invalid_input, session_crash, browser_death, disconnect'],
  ['admin', 'POST', '/sandbox/v1/instances/:id/faults', { kind: 'hang', count: 0 }, 'count', 'count must be an integer from 1 to 100'],
  ['admin', 'POST', '/sandbox/v1/instances/:id/faults', { kind: 'hang', when: 'now' }, 'when', 'when is not allowed here (unknown field)'],
];

test('every bad field answers 400 VALIDATION_FAILED with "<field> must …" naming what is allowed', async () => {
  const wrong: string[] = [];
  for (const [who, method, route, body, field, message] of ROWS) {
    const path = route.replace(':id', id);
    const r = who === 'key' ? await t.api(key, method, path, body) : await t.admin(method, path, body);
    const got = `${r.status} ${r.body.code} ${String(r.body.data?.field)}: ${r.body.error}`;
    const want = `400 VALIDATION_FAILED ${field}: ${message}`;
    if (got !== want) wrong.push(`${method} ${route} ${JSON.stringify(body)}\n    want ${want}\n    got  ${got}`);
  }
  assert.deepEqual(wrong, [], `\n${wrong.join('\n')}`);
});

test('a message never carries the value sent (a secret may be in it)', async () => {
  const secret = 'tooShortSecret';
  const r = await t.admin('PUT', `/admin/v1/instances/${id}/webhook`, { url: 'https://hooks.example/x', secret });
  assert.equal(r.status, 400);
  assert.ok(!r.text.includes(secret), r.text);
  const s = await t.api(key, 'POST', '/api/v2/send-message', { ...TO, message: 'hi', idempotencyKey: 'x'.repeat(200) });
  assert.equal(s.status, 400);
  assert.ok(!s.text.includes('x'.repeat(200)));
});

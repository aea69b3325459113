/**
 * What the fuzzer knows about a route beyond the route table (gw.routes): plausible values of each path
 * parameter, the query parameters it reads, and a plausible body (the template the mutations start from).
 * The routes themselves always come from the table; a route without a template here gets a generic body.
 *
 * Values are drawn from the fuzz world: instances A and B (linked, fast) are what instance routes act on;
 * operator and sandbox control routes that can break an instance (delete, rotate, logout, faults, unlink)
 * act only on the sacrificial instance C, so that the run keeps exercising real handlers to its end.
 */
import type { RouteInfo } from '../../src/http/router.js';
import type { Rng } from './fuzz-values.js';

export interface FuzzInstance {
  id: string;
  key: string;
  phone: string;
}

export interface FuzzWorld {
  a: FuzzInstance;
  b: FuzzInstance;
  /** sacrificial: the operator and sandbox control routes that can break an instance act on it */
  c: FuzzInstance;
  /** the one operator DELETE may remove (not linked) */
  d: { id: string };
  /** a phone that is no instance (A writes to it) and one the account routes may change */
  recipient: string;
  victimPhone: string;
  /** A's jobs: one waiting (notBefore in hours), one sent */
  waitingJob: string;
  sentJob: string;
  /** network message ids: A's sent message, an inbound one from the recipient */
  sentMsg: string;
  inboundMsg: string;
  /** a group A is in (admin), created on the sandbox; and one that A may leave */
  groupId: string;
  spareGroup: string;
  /** a media id uploaded by A; and one that DELETE may remove */
  mediaId: string;
  spareMedia: string;
  /** an inbound message that DELETE may remove; an inbound message with an image */
  spareMsg: string;
  mediaMsg: string;
  adminToken: string;
  webhookSecret: string;
  /** every secret the run knows: they must never come back in an answer */
  secrets: string[];
}

const RISKY_SANDBOX = /\/(unlink|fail|faults|link|pairing\/confirm)$/;

/** A plausible value for each named parameter of `route`. */
export function plausibleParam(rng: Rng, w: FuzzWorld, route: RouteInfo, name: string): string {
  const chat = `${w.recipient}@c.us`;
  switch (name) {
    case 'id':
      if (route.auth === 'admin') return route.method === 'DELETE' && route.path === '/admin/v1/instances/:id' ? w.d.id : w.c.id;
      return rng.pick([w.waitingJob, w.sentJob, w.waitingJob, route.method === 'DELETE' ? w.spareMsg : w.sentMsg]);
    case 'jobId':
      return rng.pick([w.waitingJob, w.sentJob]);
    case 'instanceId':
      return RISKY_SANDBOX.test(route.path) ? w.c.id : rng.pick([w.a.id, w.c.id]);
    case 'msgId':
    case 'messageId':
      if (route.method === 'DELETE' && route.path === '/api/v2/messages/:msgId') return w.spareMsg;
      if (route.path.endsWith('/media')) return rng.pick([w.mediaMsg, w.mediaMsg, w.inboundMsg]);
      return rng.pick([w.sentMsg, w.inboundMsg, w.inboundMsg]);
    case 'chatId':
      return rng.pick([chat, chat, w.groupId, `${w.b.phone}@c.us`]);
    case 'groupId':
      return route.path.endsWith('/leave') ? w.spareGroup : w.groupId;
    case 'mediaId':
      return route.method === 'DELETE' ? w.spareMedia : w.mediaId;
    case 'contactId':
      return rng.pick([chat, `${w.b.phone}@c.us`]);
    case 'phone':
      if (route.path.startsWith('/sandbox/v1/accounts/')) return route.method === 'GET' ? rng.pick([w.victimPhone, w.recipient]) : w.victimPhone;
      return rng.pick([w.recipient, w.b.phone, `+${w.recipient}`, '4915550000000']);
    default:
      return 'x';
  }
}

/** The query parameters a route reads, with values a client would send. */
export function knownQuery(route: RouteInfo): Record<string, readonly string[]> {
  const p = route.path;
  if (p === '/api/v2/queue/items') return { state: ['scheduled', 'sent', 'failed', 'queued'], limit: ['1', '10', '200'], cursor: ['0', '1', '5'] };
  if (p === '/api/v2/chats') return { limit: ['1', '50', '200', '500'], cursor: ['0', '1', '10'], archived: ['1', 'true', '0'] };
  if (p === '/api/v2/chats/:chatId/messages') return { limit: ['1', '50', '500'], fromMe: ['true', 'false', '1'] };
  if (p === '/api/v2/messages') return { idempotencyKey: ['fuzz-key-00000001', 'fuzz-key-00000002'] };
  if (p.endsWith('/media') || p === '/api/v2/media/:mediaId') return { download: ['1', 'true', '0'] };
  if (p.endsWith('/webhook/deliveries')) return { limit: ['1', '50', '200'], cursor: ['x', 'MTIz'], state: ['pending', 'delivered', 'failed'] };
  if (p.endsWith('/ledger')) return { since: ['0', '1', '1700000000000'] };
  if (p.endsWith('/chats/:chatId/messages')) return { limit: ['1', '10'] };
  return {};
}

const COMMON = (rng: Rng, w: FuzzWorld) => ({
  ...(rng.chance(0.8) ? { phone: w.recipient } : { chatId: `${w.recipient}@c.us` }),
  ...(rng.chance(0.2) ? { idempotencyKey: `fuzz-key-${rng.int(0, 30).toString().padStart(8, '0')}` } : {}),
  ...(rng.chance(0.2) ? { priority: rng.int(1, 9) } : {}),
  ...(rng.chance(0.1) ? { ttlSeconds: rng.int(60, 90_000) } : {}),
  ...(rng.chance(0.1) ? { notBefore: rng.pick([new Date(Date.now() + rng.int(-86_400, 86_400) * 1000).toISOString(), '9999-12-31T23:59:59Z', '1970-01-01T00:00:00Z', '2026-02-30T10:00:00+02:00']) } : {}),
  ...(rng.chance(0.1) ? { options: { linkPreview: false, mentions: [`${w.b.phone}@c.us`] } } : {}),
});
const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const mediaSource = (rng: Rng, w: FuzzWorld, mimetype: string) =>
  rng.pick([
    { mediaBase64: PNG_B64, mimetype },
    { mediaId: w.mediaId },
    { mediaUrl: rng.pick(['http://127.0.0.1/x.png', 'http://169.254.169.254/latest', 'ftp://example.invalid/a', 'http://[::1]/a', 'not a url', 'http://0x7f000001/']) },
  ]);

/** A plausible body for the route (what a correct client sends), or null for a route that takes none. */
export function template(rng: Rng, w: FuzzWorld, route: RouteInfo): unknown {
  const p = route.path;
  const m = route.method;
  const chat = `${w.recipient}@c.us`;
  if (m === 'GET') return null;
  switch (`${m} ${p}`) {
    case 'POST /api/v2/send-message':
    case 'POST /api/send-message':
      return { ...COMMON(rng, w), message: rng.pick(['hello from the fuzzer', 'x', 'äöü 😀']) };
    case 'POST /api/v2/send-media':
    case 'POST /api/send-media':
      return { ...COMMON(rng, w), ...mediaSource(rng, w, 'image/png'), caption: 'c', filename: 'a.png' };
    case 'POST /api/v2/send-voice':
      return { ...COMMON(rng, w), ...mediaSource(rng, w, rng.pick(['audio/ogg', 'audio/mpeg', 'video/mp4'])) };
    case 'POST /api/v2/send-document':
      return { ...COMMON(rng, w), ...mediaSource(rng, w, 'application/pdf'), filename: 'doc.pdf' };
    case 'POST /api/v2/send-sticker':
      return { ...COMMON(rng, w), ...mediaSource(rng, w, rng.pick(['image/png', 'video/mp4', 'text/plain'])), stickerName: 's', stickerAuthor: 'a' };
    case 'POST /api/v2/send-video':
      return { ...COMMON(rng, w), ...mediaSource(rng, w, 'video/mp4'), asGif: rng.chance(0.5) };
    case 'POST /api/v2/send-location':
      return { ...COMMON(rng, w), latitude: 52.52, longitude: 13.405, name: 'Berlin' };
    case 'POST /api/v2/send-contact':
      return { ...COMMON(rng, w), contactIds: [`${w.b.phone}@c.us`] };
    case 'POST /api/v2/send-poll':
      return { ...COMMON(rng, w), name: 'lunch?', options: ['yes', 'no'], allowMultipleAnswers: false };
    case 'POST /api/v2/messages/:msgId/forward':
      return { toChatId: rng.pick([chat, `${w.b.phone}@c.us`]) };
    case 'POST /api/v2/groups':
      return { title: 'fuzz group', participants: [chat] };
    case 'POST /api/send-bulk':
      if (rng.chance(0.005)) return { messages: Array.from({ length: rng.int(500, 2_000) }, (_v, i) => ({ phone: w.recipient, message: `bulk ${i}` })) };
      return { messages: [{ phone: w.recipient, message: 'bulk 1' }, { chatId: `${w.b.phone}@c.us`, message: 'bulk 2' }] };
    case 'POST /api/v2/groups/:groupId/participants':
    case 'DELETE /api/v2/groups/:groupId/participants':
    case 'POST /api/v2/groups/:groupId/admins':
    case 'DELETE /api/v2/groups/:groupId/admins':
      return { participants: [rng.pick([chat, `${w.b.phone}@c.us`])] };
    case 'PATCH /api/v2/groups/:groupId':
      return rng.pick([{ subject: 'renamed' }, { description: 'about' }, { subject: 's', description: 'd' }]);
    case 'POST /api/v2/messages/:msgId/reaction':
      return { emoji: rng.pick(['👍', '', '❤️']) };
    case 'POST /api/v2/chats/:chatId/typing':
    case 'POST /api/v2/chats/:chatId/recording':
      return { durationMs: rng.pick([1000, 25_000, 300_000, 300_001]) };
    case 'PATCH /api/v2/messages/:msgId':
      return { message: 'edited' };
    case 'DELETE /api/v2/messages/:msgId':
      return { everyone: rng.chance(0.5) };
    case 'POST /admin/v1/instances':
      return { name: `fz-${rng.int(0, 40)}`, driver: 'sandbox', settings: { quietHours: null } };
    case 'PATCH /admin/v1/instances/:id':
      return {
        settings: rng.pick([
          { maxPerHour: rng.pick([0, 1, 100, null]) },
          { maxPer24h: rng.pick([0, 1, 10_000, null]) },
          { minDelayMs: rng.pick([0, 5, 10]), maxDelayMs: rng.pick([0, 10, 86_400_000]) },
          { enabled: rng.chance(0.5) },
          { legacyQueueMode: rng.pick(['async', 'sync', 'queued']) },
          { storeIncomingMedia: rng.chance(0.5) },
          { defaultTtlSeconds: rng.pick([60, 59, 2_592_000, 2_592_001]) },
          { quietHours: null },
          { quietHours: { start: rng.pick(['22:00', '00:00', '23:59', '24:00', '7:00', '']), end: rng.pick(['06:00', '22:00', '25:61']), tz: rng.pick(['Europe/Berlin', 'UTC', 'Mars/Phobos', '', '+05:00', 'Etc/GMT+14']) } },
        ]),
      };
    case 'POST /admin/v1/instances/:id/pairing-code':
      return { phoneNumber: w.victimPhone };
    case 'PUT /admin/v1/instances/:id/webhook':
      return { url: 'http://127.0.0.1:9/hook', secret: w.webhookSecret, allowPrivate: true, ...(rng.chance(0.5) ? { events: ['message'] } : {}) };
    case 'POST /admin/v1/instances/:id/webhook/test':
      return { message: 'ping' };
    case 'POST /sandbox/v1/instances/:instanceId/link':
      return { phoneNumber: w.victimPhone };
    case 'POST /sandbox/v1/instances/:instanceId/pairing/confirm':
      return { code: 'ABCD1234' };
    case 'POST /sandbox/v1/instances/:instanceId/messages':
      return rng.pick([{ from: w.recipient, body: 'hi' }, { from: w.recipient, type: 'location', location: { latitude: 1, longitude: 2 } }, { from: w.recipient, groupId: w.groupId, body: 'in group' }]);
    case 'POST /sandbox/v1/instances/:instanceId/messages/:messageId/vote':
      return { from: w.recipient, selectedOptions: ['yes'] };
    case 'POST /sandbox/v1/instances/:instanceId/messages/:messageId/reaction':
      return { from: w.recipient, emoji: '👍' };
    case 'POST /sandbox/v1/instances/:instanceId/messages/:messageId/edit':
      return { body: 'edited by the other side' };
    case 'POST /sandbox/v1/instances/:instanceId/messages/:messageId/revoke':
      return { everyone: true };
    case 'POST /sandbox/v1/instances/:instanceId/messages/:messageId/ack':
      return { ack: rng.pick([2, 3, 4]) };
    case 'POST /sandbox/v1/instances/:instanceId/calls':
      return { from: w.recipient, isVideo: false };
    case 'POST /sandbox/v1/instances/:instanceId/contact-changed':
      return { oldPhone: w.victimPhone, newPhone: '4915550009999' };
    case 'POST /sandbox/v1/instances/:instanceId/battery':
      return { battery: 50, plugged: true };
    case 'POST /sandbox/v1/instances/:instanceId/chats/:chatId/archive':
      return { archived: rng.chance(0.5) };
    case 'POST /sandbox/v1/instances/:instanceId/groups':
      return { from: w.recipient, title: 'g', participants: [w.victimPhone] };
    case 'POST /sandbox/v1/groups/:groupId/participants':
      return { by: w.recipient, add: [w.victimPhone] };
    case 'POST /sandbox/v1/groups/:groupId/leave':
      return { phone: w.victimPhone };
    case 'PATCH /sandbox/v1/groups/:groupId':
      return { by: w.recipient, subject: 'subject' };
    case 'POST /sandbox/v1/instances/:instanceId/faults':
      return { kind: rng.pick(['not_registered', 'call_error', 'hang', 'invalid_input']), count: 1 };
    case 'POST /sandbox/v1/instances/:instanceId/fail':
      return { kind: rng.pick(['session_crash', 'browser_death', 'disconnect']) };
    case 'PUT /sandbox/v1/accounts/:phone/fault':
      return { kind: 'not_registered' };
    case 'PUT /sandbox/v1/accounts/:phone':
      return { registered: true, pushname: 'Victim' };
    default:
      return {};
  }
}

/** How often a route is drawn (1 = as often as any): creating instances is rare, they live for the whole run. */
export function weightOf(route: RouteInfo): number {
  if (route.method === 'POST' && route.path === '/admin/v1/instances') return 0.2;
  if (route.path === '/debug/actors/stream' || route.path === '/console/events') return 0.2;
  return 1;
}

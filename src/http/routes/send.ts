/**
 * The v2 send routes (SPEC.md "v2 send routes"): validate, then hand the job to the instance's queue, which
 * decides idempotency, QUEUE_FULL and TTL_UNREACHABLE and answers once the job is in PostgreSQL.
 */
import Router from '@koa/router';
import { createRouter } from '../router.js';
import type { Context } from 'koa';
import { hash } from 'node:crypto';
import { DomainError } from '../../errors.js';
import { OwnNumberRefused, parseGroupCreate, parseSend, type ParsedSend, type SendKind } from './send-schemas.js';
import type { AcceptRequest } from '../../queue/worker.js';
import { sendPart } from '../../queue/payload.js';
import { checkSourceType } from './send-payloads.js';
import { acceptedOrReplay, answerAccepted, gatedAccept, lookupReplay, ownNumber, ReplayInstead, type Accepted, type QueueGateDeps } from './queue-gate.js';
import type { InstancePort } from '../../actors/port.js';

export interface SendRouteDeps extends QueueGateDeps {
  /**
   * acceptance-time media check (SSRF, size, mediaId of this instance); throws DomainError. Answers the
   * source's own media type where it tells one (a stored media's, a URL's Content-Type), else null.
   */
  validateMedia(instanceId: string, payload: Record<string, unknown>): Promise<string | null>;
}

const ROUTES: [string, Exclude<SendKind, 'group_create' | 'forward'>][] = [
  ['send-message', 'text'],
  ['send-media', 'media'],
  ['send-voice', 'voice'],
  ['send-document', 'document'],
  ['send-sticker', 'sticker'],
  ['send-video', 'video'],
  ['send-location', 'location'],
  ['send-contact', 'contact'],
  ['send-poll', 'poll'],
];
const MEDIA_KINDS = new Set<SendKind>(['media', 'voice', 'document', 'sticker', 'video']);

/**
 * The fingerprint idempotency compares: what would be sent, when and how, never the key itself. Its text is
 * that of the payload with every object's keys sorted; a payload whose keys are in that order already (the
 * usual one: built field by field) is written as it is, without a sorted copy.
 */
export function payloadHash(p: Pick<ParsedSend, 'kind' | 'chatId' | 'payload' | 'priority' | 'notBefore' | 'ttlSeconds'>): string {
  const payload = isSorted(p.payload) ? p.payload : sortKeys(p.payload);
  const canonical = JSON.stringify([p.kind, p.chatId, payload, p.priority, p.notBefore, p.ttlSeconds]);
  return hash('sha256', canonical, 'hex');
}

/**
 * True when `sortKeys(v)` would write the same text as `v`: every plain object's keys in ascending order
 * (anything but plain objects, arrays and primitives answers false, and is left to sortKeys).
 */
function isSorted(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return true;
  if (Array.isArray(v)) return v.every(isSorted);
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) return false;
  let prev: string | null = null;
  for (const k in v) {
    if (!Object.hasOwn(v, k)) return false;
    if (prev !== null && !(prev < k)) return false;
    if (!isSorted((v as Record<string, unknown>)[k])) return false;
    prev = k;
  }
  return true;
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, x]) => [k, sortKeys(x)]));
  }
  return v;
}

/**
 * The request's X-Idempotency-Key as sent: undefined only when there is none. An empty one is a key that is
 * not valid (400), not a request without a key: a client whose key came out empty would otherwise lose its
 * retries' protection without being told.
 */
function idempotencyHeader(ctx: Context): string | undefined {
  const v = ctx.req.headers['x-idempotency-key'];
  // node joins a repeated header with ', ' (not a valid key either); an array is only for set-cookie
  return Array.isArray(v) ? v.join(', ') : v;
}

export function toAcceptRequest(p: ParsedSend, originRoute: string): AcceptRequest {
  // the send last: a literal that starts with a spread is slow to build (src/queue/sql/row.ts)
  return {
    originRoute,
    chatId: p.chatId === '' ? null : p.chatId,
    phone: p.phone,
    // only a keyed request is ever compared with another (a replay); without a key nothing reads the fingerprint
    payloadHash: p.idempotencyKey === null ? null : payloadHash(p),
    idempotencyKey: p.idempotencyKey,
    priority: p.priority,
    notBefore: p.notBefore,
    ttlSeconds: p.ttlSeconds,
    ...sendPart(p),
  };
}

/**
 * A media send's source checked (`validateMedia`, and a sticker's type), for a send and for a requeue (queue.ts). A
 * keyed send whose stored media or URL no longer passes is first looked up: the retry of a send accepted before is
 * its replay whatever became of the media (found from the outside: 404 MEDIA_NOT_FOUND once the stored media was
 * deleted or expired, which says there is no such target, while the job had been sent; media lives 72 h, keys 7
 * days). `request` is the accept request whose key is looked up.
 */
export async function checkMediaOrReplay(
  validateMedia: SendRouteDeps['validateMedia'],
  port: InstancePort,
  kind: SendKind,
  payload: Record<string, unknown>,
  warnings: string[],
  request: () => AcceptRequest,
): Promise<void> {
  try {
    checkSourceType(kind, payload, await validateMedia(port.instanceId, payload), warnings);
  } catch (err) {
    // base64 is checked by its own bytes: refused now, it was refused then too (a 400 stays a 400)
    if ('mediaBase64' in payload) throw err;
    await replayOr(err, port, request, warnings);
  }
}

/**
 * A send refused for what holds only now (its media gone, its recipient the instance's own number since a new
 * link): when its key names a job already, that job's replay is the answer (ReplayInstead), else `refusal`. A
 * retry is told what became of the send it repeats, never "nothing accepted" while that job waits or was sent.
 */
export async function replayOr(refusal: unknown, port: InstancePort, request: () => AcceptRequest, warnings: string[]): Promise<never> {
  let replay: Accepted | null;
  try {
    replay = await lookupReplay(port, request());
  } catch (lookup) {
    // the key names a job of another payload: rule 2's 409 whatever the instance's state (found by the probe of
    // the fix: offline, paused or switched off, the gate's 503 said no job had the key)
    if (lookup instanceof DomainError && lookup.code === 'IDEMPOTENCY_PAYLOAD_MISMATCH') throw new ReplayInstead(lookup, warnings);
    // the key could not be looked up: that is the answer (found by the probe of the fix: the media's 404 said
    // no job had it while the store held the key table)
    throw lookup;
  }
  if (replay) throw new ReplayInstead(replay, warnings);
  throw refusal;
}

/**
 * A send parsed with the instance's own number refused as its recipient (`parse(own)`), where a keyed retry of a
 * send accepted before the instance was linked to that number is its replay (found from the outside: 400 "nothing
 * accepted" for the retry, while the job it repeated waited). The replay is looked up with the send as parsed
 * without that check: its fingerprint is the one the first send stored.
 */
async function parsedOrReplay(port: InstancePort, route: string, own: string | null, parse: (own: string | null) => ParsedSend): Promise<ParsedSend> {
  try {
    return parse(own);
  } catch (err) {
    if (!(err instanceof OwnNumberRefused)) throw err;
    const parsed = parse(null);
    return replayOr(err, port, () => toAcceptRequest(parsed, route), parsed.warnings);
  }
}

export function sendRouter(deps: SendRouteDeps): Router {
  const router = createRouter('/api/v2');

  const accept = async (ctx: Context, kind: Exclude<SendKind, 'group_create'>, route: string, extra: { msgId?: string } = {}) => {
    const port = deps.portOf(ctx);
    let warnings: string[] = [];
    const r = await acceptedOrReplay(gatedAccept(ctx, port, async (view) => {
      const parsed = await parsedOrReplay(port, route, ownNumber(ctx, view), (own) => parseSend(kind, ctx.request.body, idempotencyHeader(ctx), own, extra));
      if (MEDIA_KINDS.has(kind)) await checkMediaOrReplay(deps.validateMedia, port, kind, parsed.payload, parsed.warnings, () => toAcceptRequest(parsed, route));
      warnings = parsed.warnings;
      return toAcceptRequest(parsed, route);
    }));
    answerAccepted(ctx, deps.clock, r.accepted, r.warnings ?? warnings);
  };

  for (const [path, kind] of ROUTES) router.post(`/${path}`, (ctx) => accept(ctx, kind, `/api/v2/${path}`));
  router.post('/messages/:msgId/forward', async (ctx, next) => {
    const msgId = ctx.params.msgId ?? '';
    if (msgId.startsWith('wq_')) {
      throw new DomainError('VALIDATION_FAILED', 'forward takes a network message id, not a queue job id', { field: 'msgId' });
    }
    if (msgId.length === 0) return next();
    await accept(ctx, 'forward', '/api/v2/messages/:msgId/forward', { msgId });
  });
  router.post('/groups', async (ctx) => {
    const port = deps.portOf(ctx);
    let warnings: string[] = [];
    const r = await acceptedOrReplay(gatedAccept(ctx, port, async (view) => {
      const parsed = await parsedOrReplay(port, '/api/v2/groups', ownNumber(ctx, view), (own) => parseGroupCreate(ctx.request.body, idempotencyHeader(ctx), own));
      warnings = parsed.warnings;
      return toAcceptRequest(parsed, '/api/v2/groups');
    }));
    answerAccepted(ctx, deps.clock, r.accepted, r.warnings ?? warnings);
  });
  return router;
}

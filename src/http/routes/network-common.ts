/**
 * What the network route families (interactions, reads, groups) share: their dependencies, the reading of
 * path parameters and ids (the id forms and phone rules of src/phone.ts), and the translation of a driver's NOT_FOUND into the
 * 404 code of the resource the route is about (the instance handle maps every other DriverError to 500
 * WA_CALL_FAILED, SPEC.md "Errors").
 */
import type { Context } from 'koa';
import { DriverError } from '../../drivers/contract.js';
import { DomainError, validationFailed } from '../../errors.js';
import type { InstanceHandle } from '../../actors/handle.js';
import type { Clock } from '../../clock.js';
import type { InteractionLimiter } from '../rate-limit.js';
import type { PresenceManager } from '../../actors/presence.js';
import { CHAT_ID, CONTACT_ID, normalizePhone, phoneToChatId } from '../../phone.js';

export interface NetworkRouteDeps {
  /** the instance of the request (the API-key auth in front of the router has set ctx.state.instance) */
  handleOf(ctx: Context): InstanceHandle;
  /** the gateway clock; the routers themselves read time only through the limiter and presence manager */
  clock: Clock;
  /** the interaction limiter (INTERACTION_RATE_POINTS per 60 s per instance) */
  limiter: InteractionLimiter;
  presence: PresenceManager;
  /** FETCH_MESSAGES_MAX: ceiling of `limit` on the chat and message lists (default 200) */
  fetchMessagesMax: number;
}

/**
 * What one router needs (`K`), while accepting the whole set, so the composition root can hand every router
 * the same deps object.
 */
export type RouteDeps<K extends keyof NetworkRouteDeps> = Pick<NetworkRouteDeps, K> & Partial<NetworkRouteDeps>;

/** SPEC.md "Queue endpoints" routing rule: in /api/v2/messages/:id an id starting with wq_ is a queue job. */
export const isJobId = (id: string): boolean => id.startsWith('wq_');

/** A path parameter, already URL-decoded by the router. */
export function param(ctx: Context, name: string): string {
  const params = (ctx as Context & { params?: Record<string, string> }).params ?? {};
  return params[name] ?? '';
}

const MESSAGE_ID = /^[^\s/]{1,256}$/;

/** a group participant: a person (`@c.us` / `@lid`), never a group */
export const PARTICIPANT_ID_PATTERN = CONTACT_ID;

/**
 * A chat or contact id from the path: a full id (`…@c.us`, `…@lid`, `…@g.us`), or, for convenience, a phone
 * number, which becomes `<normalised>@c.us`. Anything else is 400 VALIDATION_FAILED naming the parameter.
 */
export function chatIdParam(ctx: Context, name: string): string {
  const raw = param(ctx, name).trim();
  if (CHAT_ID.test(raw)) return raw;
  const phone = normalizePhone(raw);
  if (phone) return phoneToChatId(phone);
  throw validationFailed(name, `${name} must be an id ending in @c.us, @lid or @g.us, or a phone number`);
}

/** A network message id from the path (`true_<chatId>_<HEX>`); a wq_ id is a job and never reaches here. */
export function messageIdParam(ctx: Context, name = 'msgId'): string {
  const raw = param(ctx, name);
  if (isJobId(raw)) {
    throw validationFailed(name, `${name} is a queue job id; use the network message id (data.messageId of the job)`);
  }
  if (!MESSAGE_ID.test(raw)) throw validationFailed(name, `${name} is not a message id`);
  return raw;
}

/** Run a driver call, turning the driver's NOT_FOUND into the route's own 404 (or other) DomainError. */
export async function orNotFound<T>(p: Promise<T>, make: () => DomainError): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof DriverError && err.code === 'NOT_FOUND') throw make();
    throw err;
  }
}

export const chatNotFound = (chatId: string) => new DomainError('CHAT_NOT_FOUND', 'no such chat', { chatId });
export const messageNotFound = (msgId: string) => new DomainError('MESSAGE_NOT_FOUND', 'no such message', { msgId });
export const contactNotFound = (contactId: string) =>
  new DomainError('CONTACT_NOT_FOUND', 'no such contact', { contactId });

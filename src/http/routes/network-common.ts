/**
 * What the network route families (interactions, reads, groups) share: their dependencies, the reading of
 * path parameters and ids (the id forms and phone rules of src/phone.ts), and the asking of the instance's
 * session through its port (`askNetwork`): a driver's NOT_FOUND answers as the 404 of the resource the route is
 * about (`notFound`), every other driver failure as the session maps it (SPEC.md "Errors").
 */
import type { Context } from 'koa';
import { DomainError, validationFailed } from '../../errors.js';
import type { InstancePort, NetworkAsk, ReplyError, ReplyOf } from '../../actors/port.js';
import type { Clock } from '../../clock.js';
import type { InteractionLimiter } from '../rate-limit.js';
import type { PresenceManager } from '../../actors/presence.js';
import { CHAT_ID, CONTACT_ID, normalizePhone, phoneToChatId } from '../../phone.js';
import { trimmedMatching } from '../validate.js';

export interface NetworkRouteDeps {
  /** the port of the request's instance (the API-key auth in front of the router has set ctx.state.instance) */
  portOf(ctx: Context): InstancePort;
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

/**
 * A person's id in a body (`@c.us` / `@lid`, never a group), blanks around it dropped: a group's participants, a
 * send's or an edit's mentions, a contact card. One struct, so that each of them reads an id alike.
 */
export const CONTACT_ID_FIELD = trimmedMatching(CONTACT_ID, 'a contact id: digits@c.us or digits@lid');

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
  const raw = notAJobId(param(ctx, name), name);
  if (!MESSAGE_ID.test(raw)) throw validationFailed(name, `${name} is not a message id`);
  return raw;
}

/** `raw`, unless it is a queue job's id where only a network message id can be meant: 400 naming `name`. */
export function notAJobId(raw: string, name = 'msgId'): string {
  if (isJobId(raw)) throw validationFailed(name, `${name} is a queue job id; use the network message id (data.messageId of the job)`);
  return raw;
}

/** Ask the instance's session for one network operation under the route's gateway deadline. */
export function askNetwork<A extends NetworkAsk>(port: InstancePort, ask: A, deadlineMs: number): Promise<ReplyOf<A>> {
  return port.ask(ask, deadlineMs);
}

/** A route's own 404 as the data a network ask carries (`notFound`). */
export const notFound = (e: DomainError): ReplyError => ({ code: e.code, message: e.message, data: e.data });

export const chatNotFound = (chatId: string) => new DomainError('CHAT_NOT_FOUND', 'no such chat', { chatId });
export const messageNotFound = (msgId: string) => new DomainError('MESSAGE_NOT_FOUND', 'no such message', { msgId });
export const contactNotFound = (contactId: string) =>
  new DomainError('CONTACT_NOT_FOUND', 'no such contact', { contactId });

/**
 * Reading endpoints (SPEC.md "Reading endpoints"): chats, one chat, a chat's messages, one message,
 * contacts, profile pictures and number lookups (the v1 `GET /api/check-number/:phone` is in legacy-reads.ts). Each asks the
 * instance's port (src/actors/port.ts) with the 30 s read deadline; none is under the interaction limiter
 * (SPEC.md puts only the interaction and group endpoints there).
 *
 * Decisions where SPEC.md is silent:
 * - chat list order: pinned first, then most recent activity, then id, so offsets page stably;
 * - `archived` `1`/`true` lists only archived chats, `0`/`false` only unarchived ones, absent lists all;
 * - an unknown contact is `404 CONTACT_NOT_FOUND`; a contact without a picture has `pictureUrl: null`.
 */
import Router from '@koa/router';
import { createRouter } from '../router.js';
import type { Context, Next } from 'koa';
import { ok } from '../envelope.js';
import { DomainError, validationFailed } from '../../errors.js';
import { QUERY_INTEGER } from '../validate.js';
import { DEADLINES, type InstancePort } from '../../actors/port.js';
import { toChat, toContact, toMessage } from '../../wire/objects.js';
import { normalizePhone } from '../../phone.js';
import {
  askNetwork,
  chatIdParam,
  chatNotFound,
  contactNotFound,
  isJobId,
  messageIdParam,
  messageNotFound,
  notFound,
  param,
  type RouteDeps,
} from './network-common.js';

export type ReadsRouteDeps = RouteDeps<'portOf' | 'fetchMessagesMax'>;

export const DEFAULT_LIST_LIMIT = 50;

export function readsRouter(deps: ReadsRouteDeps): Router {
  const router = createRouter();

  router.get('/api/v2/chats', async (ctx) => {
    const { limit } = listLimit(ctx, deps.fetchMessagesMax);
    const offset = cursorOf(ctx);
    const archived = boolQuery(ctx, 'archived');
    const chats = await askNetwork(deps.portOf(ctx), { type: 'network', op: 'getChats', args: [], label: 'chats.list' }, DEADLINES.read);
    const listed = chats
      .filter((c) => archived === undefined || Boolean(c.archived) === archived)
      .map(toChat)
      .sort((a, b) => Number(b.pinned) - Number(a.pinned) || b.timestamp - a.timestamp || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const items = listed.slice(offset, offset + limit);
    const next = offset + items.length;
    ok(ctx, { items, total: listed.length, nextCursor: next < listed.length ? String(next) : null });
  });

  router.get('/api/v2/chats/:chatId', async (ctx) => {
    const chatId = chatIdParam(ctx, 'chatId');
    const chat = await askNetwork(
      deps.portOf(ctx),
      { type: 'network', op: 'getChatById', args: [chatId], label: 'chats.get', notFound: notFound(chatNotFound(chatId)) },
      DEADLINES.read,
    );
    if (!chat) throw chatNotFound(chatId);
    ok(ctx, toChat(chat));
  });

  router.get('/api/v2/chats/:chatId/messages', async (ctx) => {
    const chatId = chatIdParam(ctx, 'chatId');
    const { limit, capped } = listLimit(ctx, deps.fetchMessagesMax);
    const fromMe = boolQuery(ctx, 'fromMe');
    const port = deps.portOf(ctx);
    const unknownChat = notFound(chatNotFound(chatId));
    // an unknown chat is a 404, not an empty list: the caller most likely has a wrong id
    const chat = await askNetwork(
      port,
      { type: 'network', op: 'getChatById', args: [chatId], label: 'chats.messages', notFound: unknownChat },
      DEADLINES.read,
    );
    if (!chat) throw chatNotFound(chatId);
    const messages = await askNetwork(
      port,
      {
        type: 'network',
        op: 'fetchMessages',
        args: [chatId, fromMe === undefined ? { limit } : { limit, fromMe }],
        label: 'chats.messages',
        notFound: unknownChat,
      },
      DEADLINES.read,
    );
    // a driver that ignores the fromMe filter or over-delivers must not change the contract
    const items = messages.filter((m) => fromMe === undefined || m.fromMe === fromMe).slice(-limit).map(toMessage);
    ok(ctx, { items, limit, capped });
  });

  router.get('/api/v2/messages/:msgId', async (ctx: Context, next: Next) => {
    if (isJobId(param(ctx, 'msgId'))) return next(); // a queue job: the queue router's
    const msgId = messageIdParam(ctx);
    const msg = await askNetwork(
      deps.portOf(ctx),
      { type: 'network', op: 'getMessageById', args: [msgId], label: 'messages.get', notFound: notFound(messageNotFound(msgId)) },
      DEADLINES.read,
    );
    if (!msg) throw messageNotFound(msgId);
    ok(ctx, toMessage(msg));
  });

  router.get('/api/v2/contacts/:contactId', async (ctx) => {
    const contactId = chatIdParam(ctx, 'contactId');
    const contact = await askNetwork(
      deps.portOf(ctx),
      { type: 'network', op: 'getContactById', args: [contactId], label: 'contacts.get', notFound: notFound(contactNotFound(contactId)) },
      DEADLINES.read,
    );
    if (!contact) throw contactNotFound(contactId);
    ok(ctx, toContact(contact));
  });

  router.get('/api/v2/contacts/:contactId/picture', async (ctx) => {
    const contactId = chatIdParam(ctx, 'contactId');
    const url = await askNetwork(
      deps.portOf(ctx),
      { type: 'network', op: 'getProfilePicUrl', args: [contactId], label: 'contacts.picture', notFound: notFound(contactNotFound(contactId)) },
      DEADLINES.read,
    );
    ok(ctx, { contactId, pictureUrl: url || null });
  });

  router.get('/api/v2/contacts/:phone/exists', async (ctx) => {
    const phone = phoneParam(ctx);
    ok(ctx, await lookUp(deps.portOf(ctx), phone));
  });

  return router;
}

/** Whether a number is on the network (also the v1 `GET /api/check-number/:phone`, src/http/routes/legacy-reads.ts). */
export async function lookUp(port: InstancePort, phone: string) {
  const id = await askNetwork(port, { type: 'network', op: 'getNumberId', args: [phone], label: 'contacts.exists' }, DEADLINES.read);
  return { phone, registered: id !== null, whatsappId: id ?? null };
}

export function phoneParam(ctx: Context): string {
  const phone = normalizePhone(param(ctx, 'phone'));
  if (!phone) throw validationFailed('phone', 'phone must be an international number (digits, optional leading +) or a German national number starting with 0');
  return phone;
}

/**
 * `limit`: default 50, an integer ≥ 1 in the one spelling of query integers (QUERY_INTEGER: no blanks, no sign,
 * not empty), clamped to FETCH_MESSAGES_MAX; `capped` says the clamp applied.
 */
export function listLimit(ctx: Context, max: number): { limit: number; capped: boolean } {
  const raw = singleQuery(ctx, 'limit');
  if (raw === undefined) return { limit: Math.min(DEFAULT_LIST_LIMIT, max), capped: DEFAULT_LIST_LIMIT > max };
  if (!QUERY_INTEGER.test(raw) || Number(raw) < 1) throw validationFailed('limit', 'limit must be an integer of at least 1');
  const n = Number(raw);
  return n > max ? { limit: max, capped: true } : { limit: n, capped: false };
}

/** No list has more entries than this; a larger offset is no cursor the gateway gave. */
const MAX_CURSOR = 999_999_999;

/** `cursor`: the offset returned as `nextCursor` by the previous page. */
function cursorOf(ctx: Context): number {
  const raw = singleQuery(ctx, 'cursor');
  if (raw === undefined) return 0;
  if (!QUERY_INTEGER.test(raw) || Number(raw) > MAX_CURSOR) throw validationFailed('cursor', 'cursor must be the nextCursor of a previous page');
  return Number(raw);
}

/** A boolean query flag: `1`/`true` and `0`/`false`; absent → undefined; anything else → 400 naming it. */
function boolQuery(ctx: Context, name: string): boolean | undefined {
  const raw = singleQuery(ctx, name);
  if (raw === undefined || raw === '') return undefined;
  const v = raw.trim().toLowerCase();
  if (v === '1' || v === 'true') return true;
  if (v === '0' || v === 'false') return false;
  throw validationFailed(name, `${name} must be 1, true, 0 or false`);
}

function singleQuery(ctx: Context, name: string): string | undefined {
  const v = ctx.query[name];
  if (Array.isArray(v)) throw validationFailed(name, `${name} may be given once`);
  return v;
}

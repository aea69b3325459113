/**
 * Interaction endpoints (SPEC.md "Interaction endpoints"): reactions, seen, typing/recording, clearing the
 * chat state, edit and delete of network messages. They produce no visible message: each one counts against
 * the interaction limiter (never the send limits), then runs through the instance actor with the 30 s
 * deadline, so an offline session answers 503 INSTANCE_OFFLINE and a failed network call 500 WA_CALL_FAILED.
 *
 * The limiter counts a call as soon as the route is chosen, before the body is validated: a rejected body
 * still cost the caller a call, as with any request-counting limiter. A `wq_` id on
 * PATCH/DELETE /api/v2/messages/:id is a queue job and is passed on untouched and uncounted.
 */
import Router from '@koa/router';
import { createRouter } from '../router.js';
import type { Context, Next } from 'koa';
import { array, boolean, defaulted, integer, min, object, optional, pattern, size, string, type } from 'superstruct';
import { ok } from '../envelope.js';
import { DomainError } from '../../errors.js';
import { parse } from '../validate.js';
import { consumeInteraction } from '../rate-limit.js';
import { DEADLINES, type InstanceHandle } from '../../actors/handle.js';
import { effectiveDuration, type PresenceKind } from '../../actors/presence.js';
import type { Driver, SendOptions } from '../../drivers/contract.js';
import {
  chatIdParam,
  chatNotFound,
  isJobId,
  messageIdParam,
  messageNotFound,
  orNotFound,
  param,
  type RouteDeps,
} from './network-common.js';

export type InteractionsRouteDeps = RouteDeps<'handleOf' | 'limiter' | 'presence'>;

const ReactionSchema = object({ emoji: size(string(), 1, 32) });
/** durationMs: optional, integer ≥ 1; values above 300000 are capped, not refused (SPEC.md "capped"). */
const PresenceSchema = object({ durationMs: optional(min(integer(), 1)) });
/** Edit options: the subset of the send `options` whitelist that an edit can carry; other keys are dropped. */
const EditOptionsSchema = type({
  linkPreview: optional(boolean()),
  mentions: optional(array(pattern(string(), /@c\.us$/))),
});
const EditSchema = object({ message: size(string(), 1, 65_536), options: optional(EditOptionsSchema) });
const DeleteSchema = object({ everyone: defaulted(boolean(), false) });

export function interactionsRouter(deps: InteractionsRouteDeps): Router {
  const router = createRouter();
  /** Count the call and return the instance's handle. */
  const limited = (ctx: Context): InstanceHandle => {
    const handle = deps.handleOf(ctx);
    consumeInteraction(ctx, deps.limiter, handle.id);
    return handle;
  };
  const interact = <T>(handle: InstanceHandle, op: string, fn: (d: Driver) => Promise<T>) =>
    handle.call(op, fn, DEADLINES.interaction);

  router.post('/api/v2/messages/:msgId/reaction', async (ctx) => {
    const handle = limited(ctx);
    const msgId = messageIdParam(ctx);
    const { emoji } = parse(ctx.request.body, ReactionSchema);
    await interact(handle, 'message.react', (d) => orNotFound(d.react(msgId, emoji), () => messageNotFound(msgId)));
    ok(ctx, { msgId, emoji });
  });

  router.delete('/api/v2/messages/:msgId/reaction', async (ctx) => {
    const handle = limited(ctx);
    const msgId = messageIdParam(ctx);
    // whatsapp-web.js removes one's reaction by reacting with the empty string
    await interact(handle, 'message.unreact', (d) => orNotFound(d.react(msgId, ''), () => messageNotFound(msgId)));
    ok(ctx, { msgId, emoji: null });
  });

  router.post('/api/v2/chats/:chatId/seen', async (ctx) => {
    const handle = limited(ctx);
    const chatId = chatIdParam(ctx, 'chatId');
    const seen = await interact(handle, 'chat.seen', (d) => orNotFound(d.sendSeen(chatId), () => chatNotFound(chatId)));
    ok(ctx, { chatId, seen: Boolean(seen) });
  });

  const presence = (kind: PresenceKind) => async (ctx: Context) => {
    const handle = limited(ctx);
    const chatId = chatIdParam(ctx, 'chatId');
    const { durationMs } = parse(ctx.request.body, PresenceSchema);
    const duration = effectiveDuration(durationMs);
    const show = (d: Driver) => (kind === 'typing' ? d.sendStateTyping(chatId) : d.sendStateRecording(chatId));
    const info = await deps.presence.start(handle.id, chatId, kind, duration, {
      fire: () => interact(handle, `chat.${kind}`, (d) => orNotFound(show(d), () => chatNotFound(chatId))),
      clear: () => interact(handle, 'chat.clearState', (d) => d.clearState(chatId)),
    });
    ok(ctx, { chatId, expiresAt: new Date(info.expiresAt).toISOString(), durationMs: duration });
  };
  router.post('/api/v2/chats/:chatId/typing', presence('typing'));
  router.post('/api/v2/chats/:chatId/recording', presence('recording'));

  router.delete('/api/v2/chats/:chatId/state', async (ctx) => {
    const handle = limited(ctx);
    const chatId = chatIdParam(ctx, 'chatId');
    const cancelled = deps.presence.cancel(handle.id, chatId);
    await interact(handle, 'chat.clearState', (d) => orNotFound(d.clearState(chatId), () => chatNotFound(chatId)));
    ok(ctx, { chatId, cancelled });
  });

  router.patch('/api/v2/messages/:msgId', async (ctx: Context, next: Next) => {
    if (isJobId(param(ctx, 'msgId'))) return next();
    const handle = limited(ctx);
    const msgId = messageIdParam(ctx);
    const { message, options } = parse(ctx.request.body, EditSchema);
    const edited = await interact(handle, 'message.edit', (d) =>
      orNotFound(d.editMessage(msgId, message, editOptions(options)), () => messageNotFound(msgId)),
    );
    if (!edited) {
      // whatsapp-web.js answers null when the message cannot be edited (not ours, not text, too old): the
      // request asks for what the network never allows, a client error (409), not a failed call (500)
      throw new DomainError('CONFLICT', 'this message cannot be edited: only own text messages can be edited, within 15 minutes', {
        reason: 'not_editable',
        msgId,
      });
    }
    ok(ctx, { messageId: edited.id._serialized || msgId });
  });

  router.delete('/api/v2/messages/:msgId', async (ctx: Context, next: Next) => {
    if (isJobId(param(ctx, 'msgId'))) return next();
    const handle = limited(ctx);
    const msgId = messageIdParam(ctx);
    const { everyone } = parse(ctx.request.body, DeleteSchema);
    await interact(handle, 'message.delete', (d) => orNotFound(d.deleteMessage(msgId, everyone), () => messageNotFound(msgId)));
    ok(ctx, { msgId, everyone });
  });

  return router;
}

function editOptions(o: { linkPreview?: boolean | undefined; mentions?: string[] | undefined } | undefined): SendOptions {
  const out: SendOptions = {};
  if (o?.linkPreview !== undefined) out.linkPreview = o.linkPreview;
  if (o?.mentions !== undefined) out.mentions = o.mentions;
  return out;
}

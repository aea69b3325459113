/**
 * Interaction endpoints (SPEC.md "Interaction endpoints"): reactions, seen, typing/recording, clearing the
 * chat state, edit and delete of network messages. They produce no visible message: each one counts against
 * the interaction limiter (never the send limits), then asks the instance's port (src/actors/port.ts) with the
 * 30 s deadline, so an offline session answers 503 INSTANCE_OFFLINE and a failed network call 500 WA_CALL_FAILED.
 *
 * The limiter counts a call as soon as the route is chosen, before the body is validated: a rejected body
 * still cost the caller a call, as with any request-counting limiter. A `wq_` id on
 * PATCH/DELETE /api/v2/messages/:id is a queue job and is passed on untouched and uncounted.
 */
import Router from '@koa/router';
import { createRouter, takes } from '../router.js';
import type { Context, Next } from 'koa';
import { array, boolean, defaulted, integer, min, object, optional, type } from 'superstruct';
import { ok } from '../envelope.js';
import { DomainError } from '../../errors.js';
import { chars, parse } from '../validate.js';
import { consumeInteraction } from '../rate-limit.js';
import { DEADLINES, type InstancePort, type NetworkAsk, type ReplyOf } from '../../actors/port.js';
import { effectiveDuration, type PresenceKind } from '../../actors/presence.js';
import type { SendOptions } from '../../drivers/contract.js';
import {
  askNetwork,
  chatIdParam,
  CONTACT_ID_FIELD,
  chatNotFound,
  isJobId,
  messageIdParam,
  messageNotFound,
  notFound,
  param,
  type RouteDeps,
} from './network-common.js';

export type InteractionsRouteDeps = RouteDeps<'portOf' | 'limiter' | 'presence'>;

/** An emoji is often several code points (👍🏽 is 2, a family 7): 32 characters leave room for any one. */
export const ReactionSchema = object({ emoji: chars(1, 32) });
/** durationMs: optional, integer ≥ 1; values above 300000 are capped, not refused (SPEC.md "capped"). */
export const PresenceSchema = object({ durationMs: optional(min(integer(), 1)) });
/** Edit options: the subset of the send `options` whitelist that an edit can carry; other keys are dropped. */
const EditOptionsSchema = type({
  linkPreview: optional(boolean()),
  // the same person ids as a send's mentions (src/http/routes/send-schemas.ts), blanks around them dropped; found from
  // the outside: any text ending in @c.us was taken ("garbage@c.us"), a @lid refused, and the refusal quoted a regex
  mentions: optional(array(CONTACT_ID_FIELD)),
});
export const EditSchema = object({ message: chars(1, 65_536), options: optional(EditOptionsSchema) });
export const DeleteSchema = object({ everyone: defaulted(boolean(), false) });

export function interactionsRouter(deps: InteractionsRouteDeps): Router {
  const router = createRouter();
  /** Count the call and return the instance's port. */
  const limited = (ctx: Context): InstancePort => {
    const port = deps.portOf(ctx);
    consumeInteraction(ctx, deps.limiter, port.instanceId);
    return port;
  };
  const interact = <A extends NetworkAsk>(port: InstancePort, ask: A): Promise<ReplyOf<A>> =>
    askNetwork(port, ask, DEADLINES.interaction);

  router.post('/api/v2/messages/:msgId/reaction', takes({ body: true }), async (ctx) => {
    const port = limited(ctx);
    const msgId = messageIdParam(ctx);
    const { emoji } = parse(ctx.request.body, ReactionSchema);
    await interact(port, { type: 'network', op: 'react', args: [msgId, emoji], label: 'message.react', notFound: notFound(messageNotFound(msgId)) });
    ok(ctx, { msgId, emoji });
  });

  router.delete('/api/v2/messages/:msgId/reaction', takes(), async (ctx) => {
    const port = limited(ctx);
    const msgId = messageIdParam(ctx);
    // whatsapp-web.js removes one's reaction by reacting with the empty string
    await interact(port, { type: 'network', op: 'react', args: [msgId, ''], label: 'message.unreact', notFound: notFound(messageNotFound(msgId)) });
    ok(ctx, { msgId, emoji: null });
  });

  router.post('/api/v2/chats/:chatId/seen', takes(), async (ctx) => {
    const port = limited(ctx);
    const chatId = chatIdParam(ctx, 'chatId');
    const seen = await interact(port, { type: 'network', op: 'sendSeen', args: [chatId], label: 'chat.seen', notFound: notFound(chatNotFound(chatId)) });
    ok(ctx, { chatId, seen: Boolean(seen) });
  });

  const presence = (kind: PresenceKind) => async (ctx: Context) => {
    const port = limited(ctx);
    const chatId = chatIdParam(ctx, 'chatId');
    const { durationMs } = parse(ctx.request.body, PresenceSchema);
    const duration = effectiveDuration(durationMs);
    const op = kind === 'typing' ? 'sendStateTyping' : 'sendStateRecording';
    const unknownChat = notFound(chatNotFound(chatId));
    // the keep-alive's callbacks stay on this side of the port: each re-fire and the final clear is an ask of its own
    const info = await deps.presence.start(port.instanceId, chatId, kind, duration, {
      fire: async () => {
        await interact(port, { type: 'network', op, args: [chatId], label: `chat.${kind}`, notFound: unknownChat });
      },
      clear: async () => {
        await interact(port, { type: 'network', op: 'clearState', args: [chatId], label: 'chat.clearState' });
      },
    });
    ok(ctx, { chatId, expiresAt: new Date(info.expiresAt).toISOString(), durationMs: duration });
  };
  router.post('/api/v2/chats/:chatId/typing', takes({ body: true }), presence('typing'));
  router.post('/api/v2/chats/:chatId/recording', takes({ body: true }), presence('recording'));

  router.delete('/api/v2/chats/:chatId/state', takes(), async (ctx) => {
    const port = limited(ctx);
    const chatId = chatIdParam(ctx, 'chatId');
    const cancelled = deps.presence.cancel(port.instanceId, chatId);
    await interact(port, { type: 'network', op: 'clearState', args: [chatId], label: 'chat.clearState', notFound: notFound(chatNotFound(chatId)) });
    ok(ctx, { chatId, cancelled });
  });

  router.patch('/api/v2/messages/:msgId', takes({ body: true }), async (ctx: Context) => {
    // jobs are not edited (no queue route has PATCH): a wq_ id is 400 naming the network message id to use
    const msgId = messageIdParam(ctx);
    const port = limited(ctx);
    const { message, options } = parse(ctx.request.body, EditSchema);
    const edited = await interact(port, {
      type: 'network',
      op: 'editMessage',
      args: [msgId, message, editOptions(options)],
      label: 'message.edit',
      notFound: notFound(messageNotFound(msgId)),
    });
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

  router.delete('/api/v2/messages/:msgId', takes({ body: true, passes: (ctx) => isJobId(param(ctx, 'msgId')) }), async (ctx: Context, next: Next) => {
    if (isJobId(param(ctx, 'msgId'))) return next();
    const port = limited(ctx);
    const msgId = messageIdParam(ctx);
    const { everyone } = parse(ctx.request.body, DeleteSchema);
    await interact(port, { type: 'network', op: 'deleteMessage', args: [msgId, everyone], label: 'message.delete', notFound: notFound(messageNotFound(msgId)) });
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

/**
 * GET /api/v2/messages/:msgId/media (SPEC.md "Media endpoints"): the attachment of a network message.
 * Metadata by default (`stored:false, reason:'store_disabled'` unless the instance keeps incoming media;
 * with storage on, the file is stored on first request if the `message` event did not store it already);
 * `?download=1` streams the bytes. The message and its attachment are asks of the instance's port
 * (src/actors/port.ts); the instance's settings are those of the record the API-key guard loaded.
 */
import Router from '@koa/router';
import { createRouter } from '../router.js';
import type { Context } from 'koa';
import { ok } from '../envelope.js';
import { DomainError } from '../../errors.js';
import { DEADLINES, type InstancePort } from '../../actors/port.js';
import type { Instance } from '../../store/instances.js';
import type { MediaStore } from '../../media/store.js';
import { incomingInfo, incomingMedia, messageMediaView } from '../../media/record.js';
import { contentDisposition } from './media.js';
import { normaliseMimetype } from '../../media/mimetype.js';
import type { MessageMedia } from '../../drivers/contract.js';
import { messageNotFound, notAJobId, notFound } from './network-common.js';

export interface MessageMediaRouteDeps {
  /** the port of the request's instance (the API-key guard set ctx.state.instance) */
  portOf(ctx: Context): InstancePort;
  store: MediaStore;
}

export function messageMediaRouter(deps: MessageMediaRouteDeps): Router {
  const router = createRouter('/api/v2/messages');

  router.get('/:msgId/media', async (ctx: Context) => {
    // a job has no attachment route: its sent message's id (data.messageId) has (found from the outside: 404 "no route")
    const msgId = notAJobId(String(ctx.params.msgId ?? ''));
    const port = deps.portOf(ctx);
    const instanceId = port.instanceId;
    const message = await port.ask(
      { type: 'network', op: 'getMessageById', args: [msgId], notFound: notFound(messageNotFound(msgId)) },
      DEADLINES.read,
    );
    if (!message) throw messageNotFound(msgId);
    if (!message.hasMedia) throw new DomainError('NO_MEDIA', 'the message has no attachment', { msgId });
    const info = incomingInfo(message.mediaInfo);
    const enabled = (ctx.state.instance as Instance).settings.storeIncomingMedia;
    let stored = await deps.store.findByMessage(instanceId, msgId);
    let fetched: MessageMedia | null = null;
    const download = async () => {
      fetched ??= await port.ask({ type: 'network', op: 'downloadMedia', args: [msgId] }, DEADLINES.read);
      if (!fetched) throw new DomainError('NO_MEDIA', 'the network no longer has this attachment', { msgId });
      return fetched;
    };
    if (enabled && !stored) {
      const media = await download();
      stored = await deps.store.put(instanceId, incomingMedia(media, msgId));
    }
    const wantsBytes = ctx.query.download === '1' || ctx.query.download === 'true';
    if (!wantsBytes) return ok(ctx, messageMediaView(info, enabled, stored));
    ctx.set('Cache-Control', 'private, max-age=300');
    ctx.set('X-Content-Type-Options', 'nosniff');
    // the type as the network gave it (the sender's to choose) may hold what a header cannot carry (a line break, a
    // character beyond Latin-1): node refused to set it, a 500. Served as GET /api/v2/media/:id serves a type
    const contentType = (mimetype: string) => normaliseMimetype(mimetype) ?? 'application/octet-stream';
    if (stored) {
      const opened = await deps.store.open(instanceId, stored.mediaId);
      ctx.set('Content-Type', contentType(opened.record.mimetype));
      ctx.set('Content-Disposition', contentDisposition(opened.record.filename, opened.record.mediaId));
      ctx.length = opened.size;
      ctx.body = opened.stream;
      return;
    }
    const media = await download();
    const bytes = Buffer.from(media.data, 'base64');
    ctx.set('Content-Type', contentType(media.mimetype));
    ctx.set('Content-Disposition', contentDisposition(media.filename ?? null, msgId.replace(/[^A-Za-z0-9]/g, '').slice(-16)));
    ctx.length = bytes.length;
    ctx.body = bytes;
  });
  return router;
}

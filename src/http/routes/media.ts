/**
 * Media endpoints (SPEC.md "Media endpoints"): upload, metadata or download, delete. Mounted by the lead
 * behind API-key auth, which decides the instance; media ids are only ever looked up within that instance.
 */
import Router from '@koa/router';
import { createRouter } from '../router.js';
import type { ParameterizedContext } from 'koa';
import { closeUnreadRequest, receiveUpload } from '../../media/upload.js';
import { normaliseMimetype } from '../../media/mimetype.js';
import { cleanFilename, toMediaMetadata, toStoredMedia } from '../../media/record.js';
import type { MediaStore } from '../../media/store.js';
import type { Clock } from '../../clock.js';
import { DEADLINES } from '../../actors/port.js';

export interface MediaRouterDeps {
  store: MediaStore;
  /** MEDIA_UPLOAD_MAX_BYTES (64 MiB) */
  uploadMaxBytes: number;
  getInstanceId: (ctx: ParameterizedContext) => string;
  /** throws when the request's credential stopped being valid while its body was read (src/http/auth.ts keyStillValid) */
  keyStillValid?: (ctx: ParameterizedContext) => Promise<void>;
  /** the clock the upload's deadline (DEADLINES.upload) runs on; none: no deadline of the gateway's own */
  clock?: Clock;
}

const isDownload = (v: unknown) => v === '1' || v === 'true';

/**
 * RFC 6266 `attachment` with an ASCII fallback and the exact name in RFC 5987 `filename*`. The fallback keeps
 * only printable ASCII without quote, backslash or percent, so neither header injection nor a quoted-string
 * escape is possible.
 */
export function contentDisposition(filename: string | null, fallback: string): string {
  // never a path, whatever the record holds (a name stored before incoming names were cleaned)
  const name = cleanFilename(filename) ?? fallback;
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

export function createMediaRouter(deps: MediaRouterDeps): Router {
  const router = createRouter();

  router.post('/api/v2/media', async (ctx) => {
    const instanceId = deps.getInstanceId(ctx);
    try {
      // the file is kept only if the key that let the upload in still works once all of it has arrived
      const { keyStillValid, clock } = deps;
      const record = await receiveUpload(ctx.req, ctx.res, instanceId, {
        ...deps,
        ...(keyStillValid ? { beforeCommit: () => keyStillValid(ctx) } : {}),
        ...(clock ? { deadline: { clock, ms: DEADLINES.upload } } : {}),
      });
      ctx.status = 201;
      ctx.body = { success: true, data: toStoredMedia(record) };
    } catch (err) {
      closeUnreadRequest(ctx.req, ctx.res);
      throw err;
    }
  });

  router.get('/api/v2/media/:mediaId', async (ctx) => {
    const instanceId = deps.getInstanceId(ctx);
    const mediaId = ctx.params.mediaId ?? '';
    if (!isDownload(ctx.query.download)) {
      ctx.body = { success: true, data: toMediaMetadata(await deps.store.get(instanceId, mediaId)) };
      return;
    }
    // HEAD (routed here by @koa/router) gets the headers without opening the file
    const media = ctx.method === 'HEAD' ? null : await deps.store.open(instanceId, mediaId);
    const record = media?.record ?? (await deps.store.get(instanceId, mediaId));
    if (media) ctx.body = media.stream;
    else ctx.status = 200;
    ctx.set('Content-Type', normaliseMimetype(record.mimetype) ?? 'application/octet-stream');
    ctx.length = media?.size ?? record.size;
    ctx.set('Content-Disposition', contentDisposition(record.filename, record.mediaId));
    ctx.set('Cache-Control', 'private, max-age=300');
    ctx.set('X-Content-Type-Options', 'nosniff');
  });

  router.delete('/api/v2/media/:mediaId', async (ctx) => {
    const instanceId = deps.getInstanceId(ctx);
    const mediaId = ctx.params.mediaId ?? '';
    await deps.store.delete(instanceId, mediaId);
    ctx.body = { success: true, data: { mediaId, deleted: true } };
  });

  return router;
}

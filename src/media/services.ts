/**
 * The media pieces as the gateway uses them: the store, acceptance-time validation and dispatch-time
 * resolution of a job's media source, the incoming-media block of `message` events, and the retention
 * sweeper (a timer on the runtime clock; crash-safe because the store's sweep reconciles disk and index).
 */
import type { Pool } from '../store/pool.js';
import type { Clock, TimerHandle } from '../clock.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { MessageMedia, WireMessage } from '../drivers/contract.js';
import type { Instance } from '../store/instances.js';
import { createMediaStore, type MediaStore } from './store.js';
import { resolveMediaSource, validateMediaSourceAtAcceptance, type MediaSourceInput } from './resolve.js';
import type { IncomingMedia } from '../actors/network-events.js';
import { incomingInfo, incomingMedia, incomingMediaBlock } from './record.js';

export interface MediaServices extends IncomingMedia {
  store: MediaStore;
  /** the checks of a send's media source at acceptance; answers the source's own type where it tells one */
  validateAtAcceptance(instanceId: string, payload: Record<string, unknown>): Promise<string | null>;
  resolveForDispatch(instanceId: string, payload: Record<string, unknown>, signal: AbortSignal): Promise<MessageMedia>;
  stop(): void;
}

const SWEEP_EVERY_MS = 10 * 60_000;

function sourceOf(p: Record<string, unknown>): MediaSourceInput {
  const s = (k: string) => (typeof p[k] === 'string' ? (p[k] as string) : null);
  return { mediaUrl: s('mediaUrl'), mediaBase64: s('mediaBase64'), mediaId: s('mediaId'), mimetype: s('mimetype'), filename: s('filename') };
}

export function createMediaServices(deps: { pool: Pool; clock: Clock; config: Config; log: Logger }): MediaServices {
  const { config, clock } = deps;
  const store = createMediaStore({
    pool: deps.pool,
    dataDir: config.DATA_DIR,
    clock,
    retentionHours: config.MEDIA_RETENTION_HOURS,
    instanceMaxMb: config.MEDIA_STORE_MAX_MB,
    // a cluster (nodes forward to each other with the shared secret): every node may need the bytes
    shared: config.CLUSTER_SECRET !== undefined,
  });
  const sourceDeps = { store, urlMaxBytes: config.MEDIA_MAX_BYTES, base64MaxBytes: config.MEDIA_BASE64_MAX_BYTES, clock };
  let timer: TimerHandle | null = null;
  let stopped = false;
  const sweep = () => {
    timer = null;
    void store
      .sweep(clock.now())
      .catch((err: unknown) => deps.log.warn({ err }, 'media sweep failed'))
      .finally(() => {
        if (!stopped) timer = clock.setTimeout(sweep, SWEEP_EVERY_MS);
      });
  };
  timer = clock.setTimeout(sweep, 5_000);

  return {
    store,
    async validateAtAcceptance(instanceId, payload) {
      const v = await validateMediaSourceAtAcceptance(instanceId, sourceOf(payload), sourceDeps);
      // base64 has no type of its own: its mimetype is required
      return v.kind === 'id' ? v.record.mimetype : v.kind === 'url' ? v.mimetype : null;
    },
    resolveForDispatch(instanceId, payload, signal) {
      return resolveMediaSource(instanceId, sourceOf(payload), { ...sourceDeps, signal });
    },
    // `fetch` is the session's own download of this message's attachment (src/actors/network-events.ts).
    async describe(instance: Instance, m: WireMessage, fetch) {
      const info = incomingInfo(m.mediaInfo);
      const enabled = instance.settings.storeIncomingMedia;
      if (!enabled) return incomingMediaBlock(info, enabled, null);
      try {
        const media = await fetch();
        if (!media) return incomingMediaBlock(info, enabled, null);
        const record = await store.put(instance.id, incomingMedia(media, m.id._serialized));
        return incomingMediaBlock({ ...info, size: record.size }, enabled, record);
      } catch (err) {
        deps.log.warn({ err, instanceId: instance.id }, 'incoming media not stored');
        return incomingMediaBlock(info, enabled, null);
      }
    },
    stop() {
      stopped = true;
      if (timer !== null) clock.clearTimeout(timer);
    },
  };
}

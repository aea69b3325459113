/**
 * The media source of a send (SPEC.md "Media endpoints", Media source): exactly one of `mediaUrl`,
 * `mediaBase64` + `mimetype`, or `mediaId`.
 *
 * Checked twice on purpose. At acceptance (`validateMediaSourceAtAcceptance`) the caller gets an early 400,
 * 404 or 413: a URL's syntax and DNS answers are checked and the URL is probed (probe.ts: HEAD, or a GET
 * dropped after its headers; redirects, hop count, declared size and status judged, no bytes kept). At
 * dispatch (`resolveMediaSource`) the bytes are fetched for real with every check again: DNS, redirects and
 * the answer may have changed since acceptance, a stored media may have expired meanwhile.
 */
import type { MessageMedia } from '../drivers/contract.js';
import { payloadTooLarge, validationFailed } from '../errors.js';
import type { Clock } from '../clock.js';
import { dispositionParams } from './multipart.js';
import { probeMediaUrl } from './probe.js';
import { cleanFilename, type MediaRecord } from './record.js';
import { assertPublicUrl, safeFetch, urlRefused, type AddressPolicy, type Resolver } from './ssrf.js';
import type { MediaStore } from './store.js';
import { normaliseMimetype } from './mimetype.js';

const MiB = 1024 * 1024;

export interface MediaSourceInput {
  mediaUrl?: string | null;
  mediaBase64?: string | null;
  mediaId?: string | null;
  mimetype?: string | null;
  filename?: string | null;
}

export interface MediaSourceDeps extends AddressPolicy {
  store: MediaStore;
  /** MEDIA_MAX_BYTES, default 16 MiB */
  urlMaxBytes?: number;
  /** MEDIA_BASE64_MAX_BYTES, default 7 MiB */
  base64MaxBytes?: number;
  /** default 30 s */
  fetchTimeoutMs?: number;
  resolver?: Resolver;
  signal?: AbortSignal;
  /** the runtime clock: the dispatch fetch's deadline */
  clock?: Clock;
  /** the acceptance probe's deadline, default 10 s (probe.ts) */
  probeTimeoutMs?: number;
  /** the acceptance probe's clock, default real time: it measures sockets (tests inject a simulated one) */
  probeClock?: Clock;
}

export type ValidatedMediaSource =
  /** `mimetype`: the probed answer's Content-Type (the type dispatch sends it as when none is given), or null */
  | { kind: 'url'; url: string; mimetype: string | null }
  | { kind: 'base64'; size: number }
  | { kind: 'id'; record: MediaRecord };

/** The fields a media send may name its source with: exactly one of them (a route's body, a stored payload). */
export const MEDIA_SOURCES = ['mediaUrl', 'mediaBase64', 'mediaId'] as const;
type SourceField = (typeof MEDIA_SOURCES)[number];

function pickSource(src: MediaSourceInput): { field: SourceField; value: string } {
  const present = MEDIA_SOURCES.filter((f) => src[f] !== undefined && src[f] !== null);
  const first = present[0];
  if (!first) throw validationFailed('mediaUrl', 'exactly one of mediaUrl, mediaBase64 or mediaId is required');
  if (present.length > 1) throw validationFailed(present[1] ?? first, 'give only one of mediaUrl, mediaBase64 or mediaId');
  const value = src[first];
  if (typeof value !== 'string' || value.trim() === '') throw validationFailed(first, `${first} must be a non-empty string`);
  return { field: first, value };
}

function givenMimetype(src: MediaSourceInput): string | null {
  if (src.mimetype === undefined || src.mimetype === null) return null;
  const m = normaliseMimetype(src.mimetype);
  if (!m) throw validationFailed('mimetype', 'mimetype must be a media type like image/png');
  return m;
}

/** Plain base64 (whitespace tolerated, padding optional) → bytes; a data: URL prefix is refused. */
export function decodeBase64Media(value: string, maxBytes: number): Buffer {
  if (/^\s*data:/i.test(value)) {
    throw validationFailed('mediaBase64', 'mediaBase64 must be plain base64, without a data: URL prefix');
  }
  const compact = value.replace(/[\r\n\t ]/g, '');
  const payload = compact.replace(/={1,2}$/, '');
  if (Math.floor((payload.length * 3) / 4) > maxBytes) throw payloadTooLarge(maxBytes);
  if (payload === '' || !/^[A-Za-z0-9+/]*$/.test(payload) || payload.length % 4 === 1 || (payload !== compact && compact.length % 4 !== 0)) {
    throw validationFailed('mediaBase64', 'mediaBase64 is not valid base64');
  }
  return Buffer.from(payload, 'base64');
}

const urlOptions = (deps: MediaSourceDeps) => ({
  resolver: deps.resolver,
  allowPrivate: deps.allowPrivate,
  allowAddress: deps.allowAddress,
  field: 'mediaUrl',
});

/** Acceptance-time checks; a URL is probed (no body read), nothing is kept. */
export async function validateMediaSourceAtAcceptance(
  instanceId: string,
  src: MediaSourceInput,
  deps: MediaSourceDeps,
): Promise<ValidatedMediaSource> {
  const { field, value } = pickSource(src);
  const mimetype = givenMimetype(src);
  switch (field) {
    case 'mediaUrl': {
      await assertPublicUrl(value, urlOptions(deps));
      const probed = await probeMediaUrl(value, {
        ...urlOptions(deps),
        maxBytes: deps.urlMaxBytes ?? 16 * MiB,
        maxRedirects: 3,
        timeoutMs: deps.probeTimeoutMs,
        clock: deps.probeClock,
      });
      return { kind: 'url', url: value, mimetype: normaliseMimetype(probed.mimetype) };
    }
    case 'mediaBase64': {
      if (!mimetype) throw validationFailed('mimetype', 'mimetype is required with mediaBase64');
      const bytes = decodeBase64Media(value, deps.base64MaxBytes ?? 7 * MiB);
      return { kind: 'base64', size: bytes.length };
    }
    case 'mediaId':
      return { kind: 'id', record: await deps.store.get(instanceId, value) };
  }
}

function filenameFromResponse(headers: Record<string, string>, finalUrl: string): string | null {
  const disposition = headers['content-disposition'];
  if (disposition) {
    const name = cleanFilename(dispositionParams(`x; ${disposition.replace(/^[^;]*;?/, '')}`).filename);
    if (name) return name;
  }
  try {
    const last = new URL(finalUrl).pathname.split('/').pop() ?? '';
    return cleanFilename(decodeURIComponent(last));
  } catch {
    return null;
  }
}

/** Dispatch-time: the bytes of the source as the driver's MessageMedia (base64 without prefix). */
export async function resolveMediaSource(instanceId: string, src: MediaSourceInput, deps: MediaSourceDeps): Promise<MessageMedia> {
  const { field, value } = pickSource(src);
  const mimetype = givenMimetype(src);
  const filename = cleanFilename(src.filename);
  switch (field) {
    case 'mediaUrl': {
      const res = await safeFetch(value, {
        ...urlOptions(deps),
        maxBytes: deps.urlMaxBytes ?? 16 * MiB,
        maxRedirects: 3,
        timeoutMs: deps.fetchTimeoutMs ?? 30_000,
        signal: deps.signal,
        clock: deps.clock,
      });
      if (res.status < 200 || res.status > 299) {
        throw urlRefused('mediaUrl', `answered HTTP ${res.status}`, { reason: 'http_status', status: res.status });
      }
      if (res.body.length === 0) throw urlRefused('mediaUrl', 'answered with an empty body', { reason: 'empty' });
      return {
        mimetype: mimetype ?? normaliseMimetype(res.mimetype) ?? 'application/octet-stream',
        data: res.body.toString('base64'),
        filename: filename ?? filenameFromResponse(res.headers, res.finalUrl),
        filesize: res.body.length,
      };
    }
    case 'mediaBase64': {
      if (!mimetype) throw validationFailed('mimetype', 'mimetype is required with mediaBase64');
      const bytes = decodeBase64Media(value, deps.base64MaxBytes ?? 7 * MiB);
      return { mimetype, data: bytes.toString('base64'), filename, filesize: bytes.length };
    }
    case 'mediaId': {
      const { record, data } = await deps.store.read(instanceId, value);
      return {
        mimetype: mimetype ?? record.mimetype,
        data: data.toString('base64'),
        filename: filename ?? record.filename,
        filesize: data.length,
      };
    }
  }
}

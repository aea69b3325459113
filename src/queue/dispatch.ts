/**
 * One dispatch: turn a claimed job's payload into a network call and its result into an outcome.
 *
 * The job is already committed as `sending`. The call gets its own deadline; a deadline passed, or any failure
 * after the call started that does not prove the message stayed out, is `unknown`: never retried. Only a
 * provable refusal (recipient not registered, bad input, media that could not be fetched) is `failed`.
 */
import { DriverError, type Driver, type Location, type MessageMedia, type SendContent, type SendOptions } from '../drivers/contract.js';
import { ApiError } from '../http/errors.js';
import { raceClock, type Clock } from '../clock.js';
import type { Job } from './jobs.js';
import type { DispatchOutcome } from './worker.js';

export type MediaResolver = (instanceId: string, payload: Record<string, unknown>, signal: AbortSignal) => Promise<MessageMedia>;

export interface DispatchDeps {
  clock: Clock;
  driver: () => Driver | null;
  callTimeoutMs: number;
  resolveMedia: MediaResolver;
}

const MEDIA_KINDS = new Set(['media', 'voice', 'document', 'sticker', 'video']);

class DeadlineExceeded extends Error {}

/** Run `work` with an AbortSignal that fires, and a DeadlineExceeded rejection, after `ms` on the clock. */
function withDeadline<T>(clock: Clock, ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctl = new AbortController();
  return raceClock(clock, ms, work(ctl.signal), () => {
    ctl.abort();
    throw new DeadlineExceeded(`no answer from the network within ${ms} ms`);
  });
}

async function contentOf(job: Job, deps: DispatchDeps, signal: AbortSignal): Promise<{ content: SendContent; options: SendOptions }> {
  const p = job.payload;
  const options: SendOptions = { ...((p.options as SendOptions | undefined) ?? {}), waitUntilMsgSent: true };
  if (job.kind === 'text') return { content: { kind: 'text', body: String(p.body) }, options };
  if (MEDIA_KINDS.has(job.kind)) {
    const media = await deps.resolveMedia(job.instanceId, p, signal);
    const caption = typeof p.caption === 'string' ? p.caption : undefined;
    return { content: { kind: 'media', media, ...(caption !== undefined ? { caption } : {}) }, options };
  }
  if (job.kind === 'location') return { content: { kind: 'location', location: p.location as Location }, options };
  if (job.kind === 'contact') return { content: { kind: 'contacts', contactIds: p.contactIds as string[] }, options };
  if (job.kind === 'poll') {
    return {
      content: {
        kind: 'poll',
        poll: { pollName: String(p.name), pollOptions: p.pollOptions as string[], options: { allowMultipleAnswers: p.allowMultipleAnswers === true } },
      },
      options,
    };
  }
  throw new ApiError(400, 'VALIDATION_FAILED', `unknown job kind ${job.kind}`);
}

/** Send one claimed job. Never throws: every way it can end is an outcome. */
export async function dispatchJob(job: Job, deps: DispatchDeps): Promise<DispatchOutcome> {
  const driver = deps.driver();
  if (!driver) return { kind: 'failed', resultCode: 'INSTANCE_OFFLINE', errorMessage: 'the instance has no session' };
  let started = false;
  try {
    return await withDeadline(deps.clock, deps.callTimeoutMs, async (signal) => {
      if (job.kind === 'forward') {
        started = true;
        await driver.forwardMessage(String(job.payload.msgId), String(job.payload.toChatId));
        // The network gives no id for a forward: always `assumed`, with a synthetic id (SPEC.md).
        return { kind: 'assumed', messageId: `fwd_${deps.clock.now()}` } as const;
      }
      if (job.kind === 'group_create') {
        started = true;
        const r = await driver.createGroup(String(job.payload.title), job.payload.participants as string[], (job.payload.options as Record<string, unknown> | undefined) ?? {});
        return { kind: 'confirmed', messageId: r.gid } as const;
      }
      const { content, options } = await contentOf(job, deps, signal);
      started = true;
      const result = await driver.sendMessage(job.chatId ?? '', content, options);
      return result.id ? ({ kind: 'confirmed', messageId: result.id } as const) : ({ kind: 'assumed', messageId: null } as const);
    });
  } catch (err) {
    if (err instanceof DeadlineExceeded) {
      return started
        ? { kind: 'unknown', unknownReason: `${err.message}; the message may or may not have been sent` }
        : { kind: 'failed', resultCode: 'MEDIA_DOWNLOAD_FAILED', errorMessage: 'preparing the message took longer than the call deadline' };
    }
    if (err instanceof ApiError) return { kind: 'failed', resultCode: started ? err.code : 'MEDIA_DOWNLOAD_FAILED', errorMessage: err.message };
    if (err instanceof DriverError) {
      if (err.provablyNotSent) return { kind: 'failed', resultCode: err.code, errorMessage: err.message };
      return { kind: 'unknown', unknownReason: `${err.code}: ${err.message}` };
    }
    return started
      ? { kind: 'unknown', unknownReason: 'the network call failed after it started; the message may or may not have been sent' }
      : { kind: 'failed', resultCode: 'PREPARE_FAILED', errorMessage: 'the message could not be prepared' };
  }
}

/**
 * One dispatch: turn a claimed job's payload into a network call and its result into an outcome.
 *
 * The job is already committed as `sending`. The call gets its own deadline; a deadline passed, or any failure
 * after the call started that does not prove the message stayed out, is `unknown`: never retried. Only a
 * provable refusal (recipient not registered, bad input, media that could not be fetched) is `failed`.
 */
import { DriverError, type Driver, type MessageMedia, type SendContent, type SendOptions } from '../drivers/contract.js';
import { ApiError } from '../http/errors.js';
import { raceClock, type Clock } from '../clock.js';
import type { Job } from './job.js';
import type { MessageOptions } from './payload.js';
import type { DispatchOutcome } from './types.js';

export type MediaResolver = (instanceId: string, payload: Record<string, unknown>, signal: AbortSignal) => Promise<MessageMedia>;

export interface DispatchDeps {
  clock: Clock;
  driver: () => Driver | null;
  callTimeoutMs: number;
  resolveMedia: MediaResolver;
}

class DeadlineExceeded extends Error {}

/** Run `work` with an AbortSignal that fires, and a DeadlineExceeded rejection, after `ms` on the clock. */
function withDeadline<T>(clock: Clock, ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctl = new AbortController();
  return raceClock(clock, ms, work(ctl.signal), () => {
    ctl.abort();
    throw new DeadlineExceeded(`no answer from the network within ${ms} ms`);
  });
}

type Prepared =
  | { call: 'send'; content: SendContent; options: SendOptions }
  | { call: 'forward'; msgId: string; toChatId: string }
  | { call: 'group_create'; title: string; participants: string[]; options: Record<string, unknown> };

/** What the network is asked for, by kind (media fetched first: a failure here is provably not sent). */
async function prepare(job: Job, deps: DispatchDeps, signal: AbortSignal): Promise<Prepared> {
  const send = (content: SendContent, options: MessageOptions = {}): Prepared => ({ call: 'send', content, options: { ...options, waitUntilMsgSent: true } });
  switch (job.kind) {
    case 'text':
      return send({ kind: 'text', body: job.payload.body }, job.payload.options);
    case 'media':
    case 'voice':
    case 'document':
    case 'sticker':
    case 'video': {
      const media = await deps.resolveMedia(job.instanceId, job.payload, signal);
      const caption = 'caption' in job.payload ? job.payload.caption : undefined;
      return send({ kind: 'media', media, ...(caption !== undefined ? { caption } : {}) }, job.payload.options);
    }
    case 'location':
      return send({ kind: 'location', location: job.payload.location }, job.payload.options);
    case 'contact':
      return send({ kind: 'contacts', contactIds: job.payload.contactIds }, job.payload.options);
    case 'poll': {
      const p = job.payload;
      return send({ kind: 'poll', poll: { pollName: p.name, pollOptions: p.pollOptions, options: { allowMultipleAnswers: p.allowMultipleAnswers } } }, p.options);
    }
    case 'forward':
      return { call: 'forward', msgId: job.payload.msgId, toChatId: job.payload.toChatId };
    case 'group_create':
      return { call: 'group_create', title: job.payload.title, participants: job.payload.participants, options: job.payload.options ?? {} };
    default:
      return unreachable(job);
  }
}

function unreachable(job: never): never {
  throw new Error(`no dispatch for job ${JSON.stringify(job)}`);
}

/** Send one claimed job. Never throws: every way it can end is an outcome. */
export async function dispatchJob(job: Job, deps: DispatchDeps): Promise<DispatchOutcome> {
  const driver = deps.driver();
  if (!driver) return { kind: 'failed', resultCode: 'INSTANCE_OFFLINE', errorMessage: 'the instance has no session' };
  let started = false;
  try {
    return await withDeadline(deps.clock, deps.callTimeoutMs, async (signal): Promise<DispatchOutcome> => {
      const prepared = await prepare(job, deps, signal);
      started = true;
      switch (prepared.call) {
        case 'forward':
          await driver.forwardMessage(prepared.msgId, prepared.toChatId);
          // The network gives no id for a forward: always `assumed`, with a synthetic id (SPEC.md).
          return { kind: 'assumed', messageId: `fwd_${deps.clock.now()}` };
        case 'group_create':
          return { kind: 'confirmed', messageId: (await driver.createGroup(prepared.title, prepared.participants, prepared.options)).gid };
        case 'send': {
          const result = await driver.sendMessage(job.chatId ?? '', prepared.content, prepared.options);
          return result.id ? { kind: 'confirmed', messageId: result.id } : { kind: 'assumed', messageId: null };
        }
      }
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

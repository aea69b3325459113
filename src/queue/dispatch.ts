/**
 * One dispatch: turn a claimed job's payload into a network call (`PreparedCall`) and the call's result into
 * an outcome. The call itself is made by whoever holds the driver (the session actor: `perform`).
 *
 * The job is already committed as `sending`. A media job's call is handed over only once the store recorded that
 * it starts (its media ready), so that a crash while the media is fetched is known to have sent nothing
 * (src/queue/sql/startCall.ts). The call gets its own deadline; a deadline passed, or any failure
 * after the call started that does not prove the message stayed out, is `unknown`: never retried. Only a
 * provable refusal (recipient not registered, bad input, media that could not be fetched) is `failed`; a call
 * the session could not take at all is `failed INSTANCE_OFFLINE`, which puts the job back (never reached the
 * network).
 */
import type { MessageMedia, SendContent } from '../drivers/contract.js';
import { DomainError } from '../errors.js';
import { raceClock, type Clock } from '../clock.js';
import type { CallOutcome, PreparedCall } from '../actors/call.js';
import { isStoredJob, isV1Origin, type Job } from './job.js';
import { isMediaKind, type MessageOptions } from './payload.js';
import { mimeEssence, stickerTypeRefusal } from '../media/mimetype.js';
import { CALL_NOT_STARTED, NOT_SENDABLE_NOW } from './outcome.js';
import { isQuiet } from './quiet-hours.js';
import type { QuietHours } from './settings.js';
import type { DispatchOutcome } from './types.js';

export type MediaResolver = (instanceId: string, payload: Record<string, unknown>, signal: AbortSignal) => Promise<MessageMedia>;

export interface DispatchDeps {
  clock: Clock;
  /**
   * Record that a stored media job's call starts now, its media ready (src/queue/sql/startCall.ts): until that
   * is stored, a restart knows the network was never called. False (or a throw): the call is not made.
   */
  startCall: (job: Job) => Promise<boolean>;
  /** make the call where the driver is; resolves with how it ended, never throws */
  perform: (prepared: PreparedCall, deadlineMs: number) => Promise<CallOutcome>;
  callTimeoutMs: number;
  resolveMedia: MediaResolver;
  /**
   * Why the claimed job may not be sent at `at` after all (notSendableAt), or null: asked once its call is prepared,
   * since a media fetch may take up to the call deadline after the slot's re-check.
   */
  notSendable?: (at: number) => string | null;
}

/**
 * Why a claimed job may not be sent at `at`: its validity ended, or the instance's quiet hours began, since its
 * slot was re-checked (its media was fetched meanwhile); null when it may. Found from the outside: a media job whose
 * URL took 20 s went out 15 s into quiet hours and past its expiry.
 */
export function notSendableAt(job: Pick<Job, 'expiresAt'>, quietHours: QuietHours | null, at: number): string | null {
  if (at >= job.expiresAt) return 'its validity ended while its media was prepared; nothing was sent';
  if (isQuiet(at, quietHours)) return 'quiet hours began while its media was prepared; nothing was sent, it waits for their end';
  return null;
}

class DeadlineExceeded extends Error {}

/** The start of a media job's call could not be recorded: not called, so the job waits again (src/queue/outcome.ts). */
const NOT_STARTED: DispatchOutcome = {
  kind: 'failed',
  resultCode: CALL_NOT_STARTED,
  errorMessage: 'the start of the call could not be recorded; nothing was sent',
};

/** Run `work` with an AbortSignal that fires, and a DeadlineExceeded rejection, after `ms` on the clock. */
function withDeadline<T>(clock: Clock, ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctl = new AbortController();
  return raceClock(clock, ms, work(ctl.signal), () => {
    ctl.abort();
    throw new DeadlineExceeded(`no answer from the network within ${ms} ms`);
  });
}

/** What the network is asked for, by kind (media fetched first: a failure here is provably not sent). */
async function prepare(job: Job, deps: DispatchDeps, signal: AbortSignal): Promise<PreparedCall> {
  const chatId = job.chatId ?? '';
  const send = (content: SendContent, options: MessageOptions = {}): PreparedCall => ({ call: 'send', chatId, content, options: { ...options, waitUntilMsgSent: true } });
  switch (job.kind) {
    case 'text':
      return send({ kind: 'text', body: job.payload.body }, job.payload.options);
    case 'media':
    case 'voice':
    case 'document':
    case 'sticker':
    case 'video': {
      const media = await deps.resolveMedia(job.instanceId, job.payload, signal);
      // the type it is sent as, judged again: a URL that answered a still image at acceptance may serve a GIF or a
      // video now (found from the outside: a GIF went out as a sticker); refused here, nothing is sent. A type that
      // is no image at all is left to the network, as at acceptance when the URL told none (its warning)
      if (job.kind === 'sticker' && stickerTypeRefusal(media.mimetype) === 'animated') {
        throw new DomainError('VALIDATION_FAILED', `the media is ${mimeEssence(media.mimetype)} now, not the still image it was accepted as: a sticker is made from a still image (video or GIF to sticker is not supported); nothing was sent`);
      }
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
  const deadline = deps.clock.now() + deps.callTimeoutMs;
  let callAt: number | null = null;
  try {
    return await withDeadline(deps.clock, deps.callTimeoutMs, async (signal): Promise<DispatchOutcome> => {
      const prepared = await prepare(job, deps, signal);
      // a direct send (degraded or disabled queue) has no row: nothing to put back, record or recover at a start
      const storedMedia = isMediaKind(job.kind) && isStoredJob(job);
      // the slot's re-check, once more where preparing took time: a stored job goes back (src/queue/outcome.ts). Not
      // a v1 send's: its synchronous caller is told "the outcome is unknown, do not resend" when its wait ends while
      // the job is being sent, and its job lives only as long as that wait, so put back it would expire unsent
      // (found by the probe of the fix); it is sent as before
      const why = storedMedia && !isV1Origin(job) ? (deps.notSendable?.(deps.clock.now()) ?? null) : null;
      if (why !== null) return { kind: 'failed', resultCode: NOT_SENDABLE_NOW, errorMessage: why };
      if (storedMedia && !(await deps.startCall(job).catch(() => false))) return NOT_STARTED;
      const at = deps.clock.now();
      callAt = at;
      return { ...outcomeOf(await deps.perform(prepared, Math.max(0, deadline - at))), callAt: at };
    });
  } catch (err) {
    if (err instanceof DeadlineExceeded) {
      return callAt !== null
        ? { kind: 'unknown', unknownReason: `${err.message}; the message may or may not have been sent`, callAt }
        : { kind: 'failed', resultCode: 'MEDIA_DOWNLOAD_FAILED', errorMessage: 'preparing the message took longer than the call deadline' };
    }
    // only preparing can throw (perform never does): the media could not be fetched, nothing was sent
    if (err instanceof DomainError) return { kind: 'failed', resultCode: 'MEDIA_DOWNLOAD_FAILED', errorMessage: err.message };
    return { kind: 'failed', resultCode: 'PREPARE_FAILED', errorMessage: 'the message could not be prepared' };
  }
}

/** How a call that was handed to the session ended, as the job's outcome. */
function outcomeOf(o: CallOutcome): DispatchOutcome {
  switch (o.kind) {
    case 'confirmed':
    case 'assumed':
      return o;
    case 'not_sent':
      return { kind: 'failed', resultCode: 'INSTANCE_OFFLINE', errorMessage: o.message };
    case 'driver_error':
      return o.provablyNotSent ? { kind: 'failed', resultCode: o.code, errorMessage: o.message } : { kind: 'unknown', unknownReason: `${o.code}: ${o.message}` };
    case 'call_failed':
      return { kind: 'unknown', unknownReason: 'the network call failed after it started; the message may or may not have been sent' };
  }
}

/**
 * POST /api/send-bulk (SPEC.md "send-bulk rules"): every entry becomes its own job; the answer confirms
 * acceptance, not delivery. A bad entry, and every entry beyond QUEUE_MAX_PENDING, is rejected on its own and
 * never aborts the batch; `data.queued` is the number of entries given (rule 4, deliberately).
 *
 * Decisions where SPEC.md leaves room (docs/api-v1.md):
 * - priority 5, the v2 default: nobody waits on a bulk answer, and a large batch at 9 would hold back the
 *   synchronous v1 sends (priority 9) behind it until their waits ran out;
 * - the instance's default TTL, as for any queued message;
 * - queue mode `disabled` or `memory-degraded`: every entry is rejected ("the persistent queue is off"). A
 *   batch has no synchronous outcome to wait for, and holding it in process memory would lose it silently on
 *   a restart while the caller was told "queued";
 * - not connected (outside an ordered restart): 503 for the whole request, as for send-message; during an
 *   ordered restart the entries are accepted and go out once connected.
 *
 * The valid entries go to the queue in one ask (`queue.acceptMany`): one batch, decided in their order and
 * committed in one transaction, instead of an ask, a batch and a commit per 200 entries.
 */
import { Readable } from 'node:stream';
import type { Context } from 'koa';
import { DomainError } from '../../errors.js';
import { V1Error } from '../errors.js';
import { ok } from '../envelope.js';
import { legacyWaitMs, type Config } from '../../config.js';
import type { Clock } from '../../clock.js';
import type { InstancePort, InstanceView } from '../../actors/port.js';
import type { QueueMode } from './queue-gate.js';
import { refusalError, type AcceptRequest } from '../../queue/worker.js';
import { toAcceptRequest } from './send.js';
import { parseBulkEntry, type BulkEntry } from './legacy-parse.js';
import { bulkQueued, bulkRejected } from './legacy-answer.js';
import { requireConnectedOrRestarting } from './legacy-queued.js';
import { isConnectionError } from '../../store/health.js';
import { CommitOutcomeUnknown } from '../../store/pool.js';

export const BULK_PRIORITY = 5;

export interface BulkDeps {
  clock: Clock;
  config: Pick<Config, 'LEGACY_SYNC_TIMEOUT_MS' | 'LEGACY_CALLER_TIMEOUT_MS' | 'QUEUE_MAX_PENDING'>;
}

const queueOff = (mode: QueueMode) =>
  `the persistent queue is off for this instance (queue mode ${mode}): nothing was queued; send this message with /api/send-message`;

/** Read `messages`; 400 when it is missing or empty. */
export function bulkMessages(body: unknown): unknown[] {
  const messages = body !== null && typeof body === 'object' ? (body as { messages?: unknown }).messages : undefined;
  if (!Array.isArray(messages) || messages.length === 0) throw new V1Error(400, 'messages is required: a non-empty array of {phone or chatId, message}');
  return messages;
}

export async function sendBulk(
  ctx: Context,
  deps: BulkDeps,
  port: InstancePort,
  view: InstanceView,
  ownNumber: string | null,
): Promise<void> {
  const mode = view.queueMode;
  const messages = bulkMessages(ctx.request.body);
  const entries = await parseEntries(messages, ownNumber);
  let out: Record<string, unknown>[];
  if (mode !== 'pg') {
    out = new Array(entries.length);
    await inParts(entries.length, (i) => {
      const e = entries[i] as BulkEntry;
      out[i] = e.ok ? bulkRejected(e.send.phone, queueOff(mode)) : bulkRejected(e.phone, e.error);
    });
  } else {
    requireConnectedOrRestarting(view);
    out = await queueEntries(deps, port, entries);
  }
  if (out.length <= PARSE_CHUNK) return ok(ctx, { queued: messages.length, messages: out });
  // the same JSON as `ok` writes, in parts: the answer of millions of entries is hundreds of megabytes, and one
  // JSON.stringify of it held the loop for seconds (found from the outside: 15 s at 5.2 million entries)
  ctx.status = 200;
  ctx.type = 'application/json';
  ctx.body = Readable.from(answerParts(messages.length, out));
}

/** `{success: true, data: {queued, messages}}` as JSON text, PARSE_CHUNK entries a part, a turn of the loop between parts. */
async function* answerParts(queued: number, out: readonly Record<string, unknown>[]): AsyncGenerator<string> {
  yield `{"success":true,"data":{"queued":${queued},"messages":[`;
  for (let i = 0; i < out.length; i += PARSE_CHUNK) {
    if (i > 0) await new Promise((r) => setImmediate(r));
    yield (i > 0 ? ',' : '') + out.slice(i, i + PARSE_CHUNK).map((e) => JSON.stringify(e)).join(',');
  }
  yield ']}}';
}

/** Entries read, or answered, between two turns of the event loop (a rejected entry costs about 13 µs). */
const PARSE_CHUNK = 2_000;

/** `each(i)` for i from 0 to n - 1, with a turn of the event loop every PARSE_CHUNK. */
async function inParts(n: number, each: (i: number) => void): Promise<void> {
  for (let i = 0; i < n; i++) {
    if (i > 0 && i % PARSE_CHUNK === 0) await new Promise((r) => setImmediate(r));
    each(i);
  }
}

/**
 * Every entry read (`parseBulkEntry`), in parts of PARSE_CHUNK with a turn of the event loop between them:
 * there is no entry cap, and 600,000 entries (8.4 MB) read in one go held the loop for 12 s, past LEASE_TTL_MS.
 */
async function parseEntries(messages: unknown[], ownNumber: string | null): Promise<BulkEntry[]> {
  const entries: BulkEntry[] = new Array(messages.length);
  await inParts(messages.length, (i) => {
    entries[i] = parseBulkEntry(messages[i], ownNumber);
  });
  return entries;
}

/**
 * Requests of one ask: all entries at once (one batch, one transaction), unless their messages are so large
 * that a forwarded ask (src/cluster/remote-port.ts) could pass the 10 MB body limit; then in parts, in order.
 * Answers where each part ends (exclusive), the last at `reqs.length`.
 */
const ASK_BYTES = 4 * 1024 * 1024;
const REQUEST_OVERHEAD_BYTES = 400;

function partEnds(reqs: readonly AcceptRequest[]): number[] {
  const ends: number[] = [];
  let size = 0;
  for (let k = 0; k < reqs.length; k++) {
    const r = reqs[k] as AcceptRequest;
    const b = (r.kind === 'text' ? r.payload.body.length : 0) + REQUEST_OVERHEAD_BYTES;
    if (size > 0 && size + b > ASK_BYTES) {
      ends.push(k);
      size = 0;
    }
    size += b;
  }
  if (reqs.length > 0) ends.push(reqs.length);
  return ends;
}

async function queueEntries(deps: BulkDeps, port: InstancePort, entries: BulkEntry[]): Promise<Record<string, unknown>[]> {
  const { clock } = deps;
  const waitMs = legacyWaitMs(deps.config);
  const max = deps.config.QUEUE_MAX_PENDING;
  const out: Record<string, unknown>[] = new Array(entries.length);
  // the entries offered to the queue, in order: their index in the batch, their phone, their request. The queue
  // takes at most `max` waiting jobs, and tells the entries that can never have a slot (TTL_UNREACHABLE, taking no
  // room) from the ones it has no room for; entries past twice that are refused here without a round trip (a
  // send-bulk of a million entries is not planned as one batch)
  const at: number[] = [];
  const phones: string[] = [];
  const reqs: AcceptRequest[] = [];
  await inParts(entries.length, (i) => {
    const e = entries[i] as BulkEntry;
    if (!e.ok) out[i] = bulkRejected(e.phone, e.error);
    else if (reqs.length >= 2 * max) out[i] = bulkRejected(e.send.phone, `more than ${max} pending jobs for this instance`);
    else {
      // the parse is this entry's own: it takes the bulk's settings in place (v1 entries carry none of them)
      const p = e.send.parsed;
      p.priority = BULK_PRIORITY;
      p.idempotencyKey = null;
      p.notBefore = null;
      p.ttlSeconds = null;
      at.push(i);
      phones.push(e.send.phone);
      reqs.push(toAcceptRequest(p, '/api/send-bulk'));
    }
  });
  const started = clock.now();
  try {
    // offered in order: the queue decides them as one batch in that order
    let from = 0;
    for (const end of partEnds(reqs)) {
      const left = Math.max(1, waitMs - (clock.now() - started));
      const outcomes = await port.ask({ type: 'queue.acceptMany', requests: from === 0 && end === reqs.length ? reqs : reqs.slice(from, end) }, left)
        .catch((err: unknown) => {
          // no answer in time: the entries may have been queued (the whole answer says so below)
          if (err instanceof DomainError && err.code !== 'INSTANCE_TIMEOUT') return err.message;
          // the store went away before the batch was committed: nothing of it was queued
          if (isConnectionError(err)) return 'the persistent queue became unreachable: not queued';
          throw err;
        });
      const now = clock.now();
      for (let k = from; k < end; k++) {
        const r = typeof outcomes === 'string' ? outcomes : outcomes[k - from];
        const phone = phones[k] as string;
        out[at[k] as number] = r === undefined ? bulkRejected(phone, 'the queue gave no answer for this entry: not queued')
          : typeof r === 'string' ? bulkRejected(phone, r)
          : r.kind === 'refused' ? bulkRejected(phone, refusalError(r).message)
          : bulkQueued(phone, r.job, now);
      }
      from = end;
    }
  } catch (err) {
    // INSTANCE_TIMEOUT, or a commit whose outcome the broken connection hid (CommitOutcomeUnknown)
    if ((err instanceof DomainError && err.code === 'INSTANCE_TIMEOUT') || err instanceof CommitOutcomeUnknown) {
      throw new V1Error(500, 'the queue did not confirm the entries (no answer in time, or the store connection broke during a commit); some may have been queued: do not resend, see /api/v2/queue/items');
    }
    throw err;
  }
  return out;
}

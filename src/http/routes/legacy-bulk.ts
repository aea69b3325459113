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
import type { Context } from 'koa';
import { DomainError } from '../../errors.js';
import { V1Error } from '../errors.js';
import { ok } from '../envelope.js';
import { legacyWaitMs, type Config } from '../../config.js';
import type { Clock } from '../../clock.js';
import type { InstancePort, InstanceView } from '../../actors/port.js';
import type { QueueMode } from './queue-gate.js';
import { refusalError, type AcceptRequest } from '../../queue/worker.js';
import { sendPart } from '../../queue/payload.js';
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
  const entries = messages.map((m) => parseBulkEntry(m, ownNumber));
  let out: Record<string, unknown>[];
  if (mode !== 'pg') {
    out = entries.map((e) => (e.ok ? bulkRejected(e.send.phone, queueOff(mode)) : bulkRejected(e.phone, e.error)));
  } else {
    requireConnectedOrRestarting(view);
    out = await queueEntries(deps, port, entries);
  }
  ok(ctx, { queued: messages.length, messages: out });
}

/**
 * Requests of one ask: all entries at once (one batch, one transaction), unless their messages are so large
 * that a forwarded ask (src/cluster/remote-port.ts) could pass the 10 MB body limit; then in parts, in order.
 */
const ASK_BYTES = 4 * 1024 * 1024;
const REQUEST_OVERHEAD_BYTES = 400;

function chunks<T>(items: T[], bytes: (t: T) => number): T[][] {
  const out: T[][] = [];
  let part: T[] = [];
  let size = 0;
  for (const it of items) {
    const b = bytes(it);
    if (part.length > 0 && size + b > ASK_BYTES) {
      out.push(part);
      part = [];
      size = 0;
    }
    part.push(it);
    size += b;
  }
  if (part.length > 0) out.push(part);
  return out;
}

async function queueEntries(deps: BulkDeps, port: InstancePort, entries: BulkEntry[]): Promise<Record<string, unknown>[]> {
  const { clock } = deps;
  const waitMs = legacyWaitMs(deps.config);
  const max = deps.config.QUEUE_MAX_PENDING;
  const out: Record<string, unknown>[] = new Array(entries.length);
  // entries past the ceiling can never fit: refused without a round trip through the worker
  const offered: { i: number; phone: string; req: AcceptRequest }[] = [];
  entries.forEach((e, i) => {
    if (!e.ok) out[i] = bulkRejected(e.phone, e.error);
    else if (offered.length >= max) out[i] = bulkRejected(e.send.phone, `more than ${max} pending jobs for this instance`);
    else {
      const p = e.send.parsed;
      // written out, the send last: a literal starting with a spread is slow to build (src/queue/sql/row.ts)
      const req = toAcceptRequest({
        chatId: p.chatId, phone: p.phone, warnings: p.warnings, priority: BULK_PRIORITY, idempotencyKey: null, notBefore: null, ttlSeconds: null, ...sendPart(p),
      }, '/api/send-bulk');
      offered.push({ i, phone: e.send.phone, req });
    }
  });
  const started = clock.now();
  try {
    // offered in order: the queue decides them as one batch in that order
    for (const part of chunks(offered, (o) => (o.req.kind === 'text' ? o.req.payload.body.length : 0) + REQUEST_OVERHEAD_BYTES)) {
      const left = Math.max(1, waitMs - (clock.now() - started));
      const outcomes = await port.ask({ type: 'queue.acceptMany', requests: part.map((o) => o.req) }, left)
        .catch((err: unknown) => {
          // no answer in time: the entries may have been queued (the whole answer says so below)
          if (err instanceof DomainError && err.code !== 'INSTANCE_TIMEOUT') return err.message;
          // the store went away before the batch was committed: nothing of it was queued
          if (isConnectionError(err)) return 'the persistent queue became unreachable: not queued';
          throw err;
        });
      const now = clock.now();
      part.forEach((o, k) => {
        const r = typeof outcomes === 'string' ? outcomes : outcomes[k];
        out[o.i] = r === undefined ? bulkRejected(o.phone, 'the queue gave no answer for this entry: not queued')
          : typeof r === 'string' ? bulkRejected(o.phone, r)
          : r.kind === 'refused' ? bulkRejected(o.phone, refusalError(r).message)
          : bulkQueued(o.phone, r.job, now);
      });
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

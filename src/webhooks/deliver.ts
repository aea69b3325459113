/**
 * The webhook sender of one instance: delivers its pending outbox rows in order to its one receiver.
 *
 * Why a plain class driven by the Clock (wrapped in a `fromCallback` actor by src/actors/webhook-sender.ts)
 * rather than a statechart: its only states are "draining" and "waiting for a wake-up", and the waiting is a
 * single timer; the ordering, retry and persistence rules read better as one loop than as transitions.
 *
 * Rules:
 * - Order: rows go out by outbox id; row n+1 is not sent before row n is delivered or finally failed, so a
 *   row waiting for its retry holds the rows behind it.
 * - Attempts: a 2xx is success; anything else (status, network error, SSRF refusal, 10 s timeout) is a failed
 *   attempt. After attempt k of max_attempts the row waits BACKOFF_MS[k-1] (on the Clock) and next_attempt_at
 *   is persisted, so a new sender after a restart resumes where this one stopped.
 * - Persistence is batched: results of a batch are written in one statement (see pending.ts) while the next
 *   batch is read and delivered, and all of them before a retry's wait and before `stop()` returns; an idle
 *   sender's last write is not waited for, so the next event does not wait behind it (`drain`). No batch is
 *   read while more than a batch's size of results wait for their write, so a crash between a receipt and its
 *   write repeats at most the last two batch sizes of deliveries: delivery is at least once, receivers
 *   deduplicate by X-Event-Id.
 * - Wake-ups: `notify()` (after a commit that enqueued), the retry timer, and a poll every `pollMs` as the
 *   fallback that keeps it correct when nobody notifies (events written by another node, lost hints).
 */
import { performance } from 'node:perf_hooks';
import type { Clock, TimerHandle } from '../clock.js';
import type { Queryable } from '../store/pool.js';
import type { Logger } from '../log.js';
import { signBody } from './sign.js';
import { ENVELOPE_VERSION } from './outbox.js';
import { failOrphaned, fetchPending, recordResults, type AttemptResult, type PendingRow, type Receiver } from './pending.js';
import { pathTokensOf } from './config.js';
import type { WebhookTransport } from './transport.js';

export const DELIVERY_TIMEOUT_MS = 10_000;
/** Wait before attempt 2 and attempt 3. */
export const BACKOFF_MS: readonly number[] = [1_000, 5_000];
export const DEFAULT_POLL_MS = 2_000;
export const DEFAULT_BATCH_SIZE = 100;
/**
 * How long a batch's reading of the receiver is used before it is read again (a change through another node), in
 * real time: what it bounds is how long a change takes to hold, and a simulated clock's jumps must not make every
 * batch read again. At least one attempt is made with each reading (a slow read cannot stall the sender).
 */
export const RECEIVER_FRESH_MS = 1_000;

export interface WebhookSenderOptions {
  instanceId: string;
  db: Queryable;
  clock: Clock;
  transport: WebhookTransport;
  log?: Logger;
  timeoutMs?: number;
  backoffMs?: readonly number[];
  /** fallback poll; null when an outside poller notifies (src/actors/webhook-sender.ts polls for all) */
  pollMs?: number | null;
  batchSize?: number;
  /** how long (real time) a batch's reading of the receiver is used before it is read again: RECEIVER_FRESH_MS */
  receiverFreshMs?: number;
  /** observations for /metrics (none: not observed) */
  metrics?: WebhookMetrics;
}

/** What /metrics observes of the deliveries (src/metrics/): plain numbers, no metrics library here. */
export interface WebhookMetrics {
  /**
   * One attempt ended: `delivered`, `retry` (failed, another attempt follows) or `failed` (the last one), how
   * long it took (real time), and for a delivery how long after the event it arrived (on the clock).
   */
  attempted(result: 'delivered' | 'retry' | 'failed', durationMs: number, lagMs: number | null): void;
}

export interface SenderStats {
  attempts: number;
  delivered: number;
  failed: number;
}

/** The first `"timestamp":` of an envelope is the envelope's own: `data` comes after it (outbox.ts). */
const TIMESTAMP = /"timestamp":(\d+)/;

/** The seven headers of SPEC.md "Request headers", plus Content-Type, for one attempt signed at `signedAt`. */
export function deliveryHeaders(row: Pick<PendingRow, 'eventId' | 'event'>, instanceId: string, body: Buffer, secret: string, signedAt: number): Record<string, string> {
  const eventTs = TIMESTAMP.exec(body.toString('utf8', 0, Math.min(body.length, 256)))?.[1] ?? String(signedAt);
  return {
    'Content-Type': 'application/json',
    'User-Agent': 'messaging-gateway-webhooks',
    'X-Instance-ID': instanceId,
    'X-Event-Type': row.event,
    'X-Event-Id': row.eventId,
    'X-Event-Version': String(ENVELOPE_VERSION),
    'X-Webhook-Timestamp': eventTs,
    ...signBody(secret, body, signedAt),
  };
}

/**
 * Error text for the attempt log (shown by the deliveries route, written to the log): no URL (it may carry
 * credentials), no token of its path (a message may name the path without the rest), no secret, bounded.
 */
export function attemptErrorText(err: unknown, cfg: Pick<Receiver, 'url' | 'secret'>): string {
  const e = err instanceof Error ? err : new Error(String(err));
  const code = (e as NodeJS.ErrnoException).code;
  // errno-style codes (ECONNREFUSED, ETIMEDOUT) help the operator; API error codes would only add noise
  let text = code && /^E[A-Z0-9]+$/.test(code) && !e.message.includes(code) ? `${code}: ${e.message}` : e.message;
  for (const s of [cfg.secret, cfg.url, ...pathTokensOf(cfg.url)]) if (s && text.includes(s)) text = text.split(s).join('[redacted]');
  return text.slice(0, 300);
}

export class WebhookSender {
  readonly instanceId: string;
  private readonly o: Required<Omit<WebhookSenderOptions, 'log' | 'metrics'>> & Pick<WebhookSenderOptions, 'log' | 'metrics'>;
  private running: Promise<void> | null = null;
  private wakeRequested = false;
  private stopping = false;
  private timer: TimerHandle | null = null;
  private unflushed: AttemptResult[] = [];
  /** the receiver was changed or removed since the batch under way read it (`receiverChanged`) */
  private receiverStale = false;
  /** the result writes under way (src/webhooks/pending.ts recordResults), one after the other */
  private writing: Promise<void> = Promise.resolve();
  /** the writes chained before the last one (`writeBehind`): what a pass waits for when it is a batch behind */
  private earlier: Promise<void> = Promise.resolve();
  /** a write is chained behind the one under way and has not started */
  private writeQueued = false;
  /** the last write whose failure drain() tells (nothing else awaits it) */
  private told: Promise<void> | null = null;
  readonly stats: SenderStats = { attempts: 0, delivered: 0, failed: 0 };

  constructor(opts: WebhookSenderOptions) {
    this.instanceId = opts.instanceId;
    this.o = {
      timeoutMs: DELIVERY_TIMEOUT_MS,
      backoffMs: BACKOFF_MS,
      pollMs: DEFAULT_POLL_MS,
      batchSize: DEFAULT_BATCH_SIZE,
      receiverFreshMs: RECEIVER_FRESH_MS,
      ...opts,
    };
  }

  /** Begin: deliver whatever is pending now (a restart resumes here), then wait for wake-ups. */
  start(): void {
    this.notify();
  }

  /** Something was enqueued (or may have been): drain soon. Cheap and idempotent. */
  notify(): void {
    if (this.stopping) return;
    this.wakeRequested = true;
    if (this.running) return;
    this.running = this.loop().finally(() => {
      this.running = null;
      // a notify() between the loop's last look at wakeRequested and here found it still running: honour it
      if (this.wakeRequested && !this.stopping) this.notify();
    });
  }

  /**
   * The webhook was replaced, disabled or removed through this node: the next attempt reads it again (the one in
   * flight finishes). Changed through another node, the batch reads it again RECEIVER_FRESH_MS after it read it.
   */
  receiverChanged(): void {
    this.receiverStale = true;
    this.notify();
  }

  /** Stop: no new attempts; the one in flight finishes (≤ timeout) and every result is persisted. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.clearTimer();
    await this.running;
    this.writeBehind();
    await this.writesDone().catch((err: unknown) => this.o.log?.warn({ err, instanceId: this.instanceId }, 'webhook results not persisted at stop'));
  }

  /** Resolves when the sender has nothing in progress, its result writes included (tests, benchmarks). */
  async idle(): Promise<void> {
    for (;;) {
      if (this.running) await this.running;
      const w = this.writing;
      await w.catch(() => undefined);
      if (!this.running && this.writing === w) return;
    }
  }

  private async loop(): Promise<void> {
    while (this.wakeRequested && !this.stopping) {
      this.wakeRequested = false;
      let dueAt: number | null = null;
      try {
        dueAt = await this.drain();
      } catch (err) {
        // The store is unreachable or a query failed: results stay in memory, the poll tries again.
        this.o.log?.warn({ err, instanceId: this.instanceId }, 'webhook drain failed');
      }
      this.schedule(dueAt);
    }
  }

  /**
   * One pass, then its results: every result is written before a retry's wait, but a pass that ends with
   * nothing to wait for does not wait for its last write. That write is a commit (tens of milliseconds on a slow
   * disk), and an event committed meanwhile waited for it before it went out (bench/webhooks.ts, 4 instances:
   * commit-to-receipt p99 12–18 ms with the wait, 8–13 without). The next pass starts behind it instead: it reads
   * no row whose result is still on its way, and a write that failed is written again with the next ones.
   */
  private async drain(): Promise<number | null> {
    this.writeBehind();
    const dueAt = await this.pass().finally(() => this.writeBehind());
    if (dueAt !== null) {
      await this.writesDone();
    } else if (this.writing !== this.told) {
      // nothing awaits this write: a failure is told here, once per write
      const w = (this.told = this.writing);
      w.catch((err: unknown) => this.o.log?.warn({ err, instanceId: this.instanceId }, 'webhook results not persisted yet: written with the next ones'));
    }
    return dueAt;
  }

  /**
   * Delivers until nothing is due. Returns when the head row is next due, or null when there is nothing to wait
   * for. A batch's results are written while the next batch is read and delivered (one write at a time, in
   * order; the next read leaves out the rows whose results are still on their way). Events committed meanwhile
   * (`notify()`) continue the pass.
   *
   * The receiver (URL, secret, enabled) is read with each batch, and read again before an attempt once it was
   * changed here (`receiverChanged`) or RECEIVER_FRESH_MS after it was read: found from the outside, a batch of
   * up to 100 rows went on to the receiver it was read with, for as long as that receiver took to answer them
   * (36 s and 73 events after a PUT moved the URL and rotated the secret; events after a DELETE or a disable).
   */
  private async pass(): Promise<number | null> {
    for (;;) {
      // At most a batch's size of results wait for their write while the next batch goes out (so at most two
      // batch sizes are unrecorded): a slow store holds the sender here rather than let unrecorded deliveries
      // (sent again after a crash) pile up. A failed write ends the pass; the next one writes them again.
      if (this.unflushed.length > this.o.batchSize) await this.earlier;
      this.receiverStale = false;
      const { rows, receiver: cfg } = await fetchPending(this.o.db, this.instanceId, this.o.batchSize, this.unflushed.map((r) => r.outboxId));
      const readAt = performance.now();
      if (rows.length === 0) return null;
      if (!cfg) {
        // nothing can deliver what is pending; what was delivered is written first, so it stays delivered
        this.writeBehind();
        await this.writesDone();
        const n = await failOrphaned(this.o.db, this.instanceId, this.o.clock.now());
        this.stats.failed += n;
        return null;
      }
      let reread = false;
      let attempted = 0;
      for (const row of rows) {
        if (this.stopping) return null;
        if (row.nextAttemptAt > this.o.clock.now()) return row.nextAttemptAt;
        if (this.receiverStale || (attempted > 0 && performance.now() - readAt >= this.o.receiverFreshMs)) {
          reread = true;
          break;
        }
        attempted += 1;
        const result = await this.attempt(row, cfg);
        this.unflushed.push(result);
        if (result.state === 'pending') return result.nextAttemptAt;
      }
      this.writeBehind();
      if (reread) continue;
      if (rows.length < this.o.batchSize && !this.wakeRequested) return null;
      this.wakeRequested = false;
    }
  }

  /** Start writing the unflushed results behind the writes under way, without waiting for it. */
  private writeBehind(): void {
    // a write that has not started yet takes every result there is when it starts
    if (this.unflushed.length === 0 || this.writeQueued) return;
    this.writeQueued = true;
    // behind the write under way, whether it succeeded or not (a failed one left its results to this one)
    this.earlier = this.writing;
    const next = this.writing.catch(() => undefined).then(() => {
      this.writeQueued = false;
      return this.flush();
    });
    // awaited by writesDone() or told by drain(); until then a failure must not count as unhandled
    next.catch(() => undefined);
    this.writing = next;
  }

  /** Wait for the writes under way; a failed one throws (its results stay unflushed and are written next time). */
  private async writesDone(): Promise<void> {
    const w = this.writing;
    this.writing = Promise.resolve();
    await w;
  }

  private async attempt(row: PendingRow, cfg: Receiver): Promise<AttemptResult> {
    const { clock, log } = this.o;
    const attempt = row.attempts + 1;
    const at = clock.now();
    const t0 = performance.now();
    let status: number | null = null;
    let error: string | null = null;
    try {
      const body = Buffer.from(row.body, 'utf8');
      const res = await this.o.transport.post({
        url: cfg.url,
        body,
        headers: deliveryHeaders(row, this.instanceId, body, cfg.secret, at),
        allowPrivate: cfg.allowPrivate,
        timeoutMs: this.o.timeoutMs,
        clock,
      });
      status = res.status;
      if (status < 200 || status > 299) error = `HTTP ${status}`;
    } catch (err) {
      error = attemptErrorText(err, cfg);
    }
    const finishedAt = clock.now();
    const durationMs = Math.round(performance.now() - t0);
    this.stats.attempts++;
    const base = { outboxId: row.id, attempt, at, finishedAt, status, error, durationMs };
    const final = attempt >= row.maxAttempts;
    const eventAt = Number(TIMESTAMP.exec(row.body.slice(0, 256))?.[1] ?? NaN);
    this.o.metrics?.attempted(error === null ? 'delivered' : final ? 'failed' : 'retry', durationMs, error === null && Number.isFinite(eventAt) ? finishedAt - eventAt : null);
    if (error === null) {
      this.stats.delivered++;
      return { ...base, state: 'delivered', nextAttemptAt: null };
    }
    // The body is not logged: `qr` and `code` events carry login secrets.
    log?.warn(
      { instanceId: this.instanceId, eventId: row.eventId, event: row.event, attempt, maxAttempts: row.maxAttempts, status, error },
      final ? 'webhook delivery failed' : 'webhook attempt failed, will retry',
    );
    if (final) {
      this.stats.failed++;
      return { ...base, state: 'failed', nextAttemptAt: null };
    }
    const backoff = this.o.backoffMs;
    const wait = backoff[Math.min(attempt - 1, backoff.length - 1)] ?? 0;
    return { ...base, state: 'pending', nextAttemptAt: finishedAt + wait };
  }

  private async flush(): Promise<void> {
    if (this.unflushed.length === 0) return;
    // a copy: results of the next batch are added while this one is written (writeBehind)
    const n = this.unflushed.length;
    await recordResults(this.o.db, this.unflushed.slice(0, n));
    // Only now: if the write failed, the results stay and are written before anything is re-read.
    this.unflushed = this.unflushed.slice(n);
  }

  private clearTimer(): void {
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  /** One timer: the head row's due time or the poll, whichever comes first (none when neither applies). */
  private schedule(dueAt: number | null): void {
    this.clearTimer();
    if (this.stopping) return;
    const wait = Math.max(0, Math.min(dueAt === null ? Infinity : dueAt - this.o.clock.now(), this.o.pollMs ?? Infinity));
    if (wait === Infinity) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = null;
      this.notify();
    }, wait);
  }
}

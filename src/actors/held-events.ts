/**
 * Instance events the store could not take (PostgreSQL unreachable, or a statement it cancelled), held in
 * memory and written, in the order they were raised, as soon as it answers again: on the store health's
 * recovery, else on a retry with backoff on the runtime clock. Network and lifecycle events have no state change
 * of their own to commit with: before this, such an event raised during an outage (an incoming `message`, the
 * `message_sent`/`message_ack` of a v1 send made in memory-degraded, a `change_state`) was dropped.
 *
 * - Order: events are kept in one list in the order they were raised (each instance's in its order), and a write
 *   takes the oldest first. While an instance has events held, its newer events join the list instead of being
 *   written (src/actors/network-events.ts asks `holds`), so its receiver sees them in order.
 * - Once: each event has its id and time from when it was raised (EventStamp); the outbox takes an id once, so a
 *   write tried again after one whose outcome the store kept from us cannot make a second row.
 * - Bounded per node: at most `maxEvents` events and `maxBytes` of their payloads' JSON. Beyond, the newest is
 *   dropped, counted (mgw_instance_events_dropped_total) and told by one warn line until the list is empty again.
 * - Memory only: a process that ends during the outage loses what it held. The stop makes a last try (`close`).
 */
import type { Clock, TimerHandle } from '../clock.js';
import type { Logger } from '../log.js';
import type { Pool } from '../store/pool.js';
import { storeCouldNotTake } from '../store/health.js';
import { setPhoneNumber } from '../store/instances.js';
import type { StampedEvent } from './events.js';

/**
 * The events held on one node at most (README "Webhooks", docs/webhooks.md "During a store outage"). The outside
 * store probe's first run (outages of 1 to 60 s) dropped about 3,500 of them on one node; 20,000 leaves room for a longer outage or a
 * busier node, while 16 MiB of payload JSON keeps what an outage can cost the heap small beside V8's limit.
 */
export const MAX_HELD_EVENTS = 20_000;
/** The JSON of the held events' payloads at most, bytes. */
export const MAX_HELD_BYTES = 16 * 1024 * 1024;
/** Retries while the store health does not say it is back: 1 s, doubling up to this. */
const RETRY_MAX_MS = 30_000;
const RETRY_FIRST_MS = 1_000;
/** The most events one write takes. */
const WRITE_BATCH = 500;

/** An event as raised, with what its write needs besides the outbox row. */
export interface RaisedEvent {
  event: StampedEvent;
  /** an incoming message's row for /api/status's statistics, not yet written */
  inbound: { messageId: string; receivedAt: number } | null;
  /** the number of a `ready`, not yet saved */
  phoneNumber: string | null;
}

/** What the store's health tells (src/store/health.ts StoreHealth). */
export interface StoreGate {
  readonly degraded: boolean;
  onChange(f: (degraded: boolean) => void): () => void;
  suspect(): Promise<void>;
}

export interface HeldEventsMetrics {
  /** events held now and their payloads' bytes */
  held(events: number, bytes: number): void;
  /** events dropped because the bound was reached */
  dropped(n: number): void;
}

/**
 * The statistics rows of incoming messages (/api/status's `received`), one statement for all; an instance deleted
 * meanwhile has nothing written (its outbox rows are not either: no webhook left).
 */
export async function writeInbound(pool: Pool, rows: readonly { instanceId: string; messageId: string; receivedAt: number }[]): Promise<void> {
  if (rows.length === 0) return;
  await pool.query(
    `INSERT INTO inbound_messages (instance_id, message_id, received_at)
     SELECT u.instance_id, u.message_id, u.received_at FROM unnest($1::uuid[], $2::text[], $3::timestamptz[]) AS u(instance_id, message_id, received_at)
      WHERE EXISTS (SELECT 1 FROM instances i WHERE i.id = u.instance_id)
     ON CONFLICT DO NOTHING`,
    [rows.map((r) => r.instanceId), rows.map((r) => r.messageId), rows.map((r) => new Date(r.receivedAt))],
  );
}

/** The side writes of events raised (inbound statistics, a `ready`'s number), then their outbox rows. */
export async function writeRaised(pool: Pool, write: (items: readonly StampedEvent[]) => Promise<void>, items: readonly RaisedEvent[]): Promise<void> {
  await writeInbound(pool, items.flatMap((r) => (r.inbound ? [{ instanceId: r.event.instanceId, ...r.inbound }] : [])));
  for (const r of items) if (r.phoneNumber !== null) await setPhoneNumber(pool, r.event.instanceId, r.phoneNumber);
  await write(items.map((r) => r.event));
}

export class HeldEvents {
  private readonly list: { raised: RaisedEvent; bytes: number }[] = [];
  private readonly perInstance = new Map<string, number>();
  private bytes = 0;
  /** dropped since the list was last empty (one warn line when the first is) */
  private droppedNow = 0;
  private writing: Promise<void> | null = null;
  private timer: TimerHandle | null = null;
  private backoffMs = RETRY_FIRST_MS;
  private closed = false;
  /** events were dropped since the held ones were last written: newer ones are dropped too (`hold`) */
  private overflowing = false;
  private readonly offStore: () => void;

  constructor(
    private readonly deps: {
      pool: Pool;
      clock: Clock;
      log: Logger;
      write: (items: readonly StampedEvent[]) => Promise<void>;
      store?: StoreGate;
      metrics?: HeldEventsMetrics;
      maxEvents?: number;
      maxBytes?: number;
    },
  ) {
    this.offStore = deps.store?.onChange((degraded) => {
      if (!degraded && this.list.length > 0) this.flushNow();
    }) ?? (() => undefined);
  }

  get size(): number {
    return this.list.length;
  }

  /** Whether the instance has events held: its newer ones wait behind them. */
  holds(instanceId: string): boolean {
    return (this.perInstance.get(instanceId) ?? 0) > 0;
  }

  /** Hold an event the store could not take now (or that must wait behind its instance's held ones). */
  hold(raised: RaisedEvent): void {
    const bytes = JSON.stringify(raised.event.data).length;
    const maxEvents = this.deps.maxEvents ?? MAX_HELD_EVENTS;
    const maxBytes = this.deps.maxBytes ?? MAX_HELD_BYTES;
    // once one is dropped, every newer one is too until the held ones are written: an instance's stream then has
    // one gap, not events missing here and there (found by the second outside probe: a large event past the bytes
    // bound was dropped while the small ones after it were kept)
    if (this.closed || this.overflowing || this.list.length >= maxEvents || this.bytes + bytes > maxBytes) {
      this.overflowing = !this.closed;
      if (this.droppedNow === 0) {
        this.deps.log.warn(
          { instanceId: raised.event.instanceId, event: raised.event.event, held: this.list.length, maxEvents, maxBytes, stopping: this.closed },
          'instance events dropped: the store cannot take them and the events held in memory reached their bound (this and newer events are lost until the held ones are written; counted in mgw_instance_events_dropped_total)',
        );
      }
      this.droppedNow += 1;
      this.deps.metrics?.dropped(1);
      return;
    }
    this.list.push({ raised, bytes });
    this.bytes += bytes;
    const id = raised.event.instanceId;
    this.perInstance.set(id, (this.perInstance.get(id) ?? 0) + 1);
    this.deps.metrics?.held(this.list.length, this.bytes);
    if (this.list.length === 1) this.deps.log.warn({ instanceId: id, event: raised.event.event }, 'instance events held in memory until the store answers again');
    this.schedule();
  }

  /** Write what is held now (the store is back); resolves when the list is empty or the store failed again. */
  flushNow(): Promise<void> {
    if (this.timer !== null) this.deps.clock.clearTimeout(this.timer);
    this.timer = null;
    this.writing ??= this.drain().finally(() => {
      this.writing = null;
      if (this.list.length > 0) this.schedule();
    });
    return this.writing;
  }

  /**
   * The stop: one last try to write what is held (the pool is still open), then no more timers; what is left is
   * lost with the process and said so.
   */
  async close(): Promise<void> {
    if (this.list.length > 0 && !this.closed) await this.flushNow();
    await this.writing;
    this.closed = true;
    this.offStore();
    if (this.timer !== null) this.deps.clock.clearTimeout(this.timer);
    this.timer = null;
    if (this.list.length > 0) {
      this.deps.log.error({ lost: this.list.length }, 'instance events not written: the gateway stopped while the store could not take them');
    }
  }

  private schedule(): void {
    if (this.closed || this.timer !== null || this.writing !== null) return;
    this.timer = this.deps.clock.setTimeout(() => {
      this.timer = null;
      // the health's recovery writes them at once; until then a try would only wait for the store to fail
      if (this.deps.store?.degraded) this.schedule();
      else void this.flushNow();
    }, this.backoffMs);
    this.backoffMs = Math.min(RETRY_MAX_MS, this.backoffMs * 2);
  }

  private async drain(): Promise<void> {
    let written = 0;
    while (this.list.length > 0) {
      const batch = this.list.slice(0, WRITE_BATCH).map((h) => h.raised);
      try {
        await this.writeBatch(batch);
      } catch (err) {
        this.deps.log.warn({ err, held: this.list.length }, 'instance events held: the store still cannot take them');
        void this.deps.store?.suspect();
        return;
      }
      this.remove(batch.length);
      written += batch.length;
      this.backoffMs = RETRY_FIRST_MS;
    }
    if (written > 0 || this.droppedNow > 0) this.deps.log.info({ written, dropped: this.droppedNow }, 'instance events held in memory written');
    this.droppedNow = 0;
  }

  /** A batch whose write failed for another reason than the store is written one by one: only a bad one is dropped. */
  private async writeBatch(batch: RaisedEvent[]): Promise<void> {
    try {
      await writeRaised(this.deps.pool, this.deps.write, batch);
      return;
    } catch (err) {
      if (storeCouldNotTake(err)) throw err;
      if (batch.length === 1) {
        const e = batch[0]?.event;
        this.deps.log.warn({ err, instanceId: e?.instanceId, event: e?.event }, 'instance event not written');
        return;
      }
    }
    for (const [i, one] of batch.entries()) {
      try {
        await this.writeBatch([one]);
      } catch (err) {
        // the ones before are written: off the list, the rest stays
        this.remove(i);
        throw err;
      }
    }
  }

  private remove(n: number): void {
    if (n > 0) this.overflowing = false;
    for (const { raised, bytes } of this.list.splice(0, n)) {
      this.bytes -= bytes;
      const id = raised.event.instanceId;
      const left = (this.perInstance.get(id) ?? 1) - 1;
      if (left > 0) this.perInstance.set(id, left);
      else this.perInstance.delete(id);
    }
    this.deps.metrics?.held(this.list.length, this.bytes);
  }
}

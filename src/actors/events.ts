/**
 * The event bus of the runtime: every event an integrator can receive goes through here into the webhook
 * outbox (src/webhooks/outbox.ts), inside the caller's transaction where there is one, then the instance's
 * sender is woken. An instance without a subscribed webhook gets nothing written.
 */
import type { Pool, Queryable } from '../store/pool.js';
import type { Clock } from '../clock.js';
import { enqueueEvent, enqueueEventsAcross, type EventStamp } from '../webhooks/outbox.js';
import { isEventName, isSubscribed, type EventOf } from '../webhooks/events.js';
import { subscribedEventsOf } from '../webhooks/config.js';
import { Batcher } from '../store/batch.js';

export interface EventBus {
  /**
   * Write `event` for the instance inside the caller's transaction (commits with the change that caused it);
   * false when its webhook does not want it (nothing written).
   */
  emit(q: Queryable, instanceId: string, event: string, data: unknown): Promise<boolean>;
  /** Several events of one instance in one statement, in order. */
  emitMany(q: Queryable, instanceId: string, items: { event: string; data: unknown }[]): Promise<void>;
  /**
   * Events of many instances in one statement, each instance's in order (the node-wide group commit). Answers
   * per item whether it was written (its webhook wanted it), so that only a sender with something new is woken.
   */
  emitAcross(q: Queryable, items: { instanceId: string; event: string; data: unknown }[]): Promise<readonly ({ eventId: string } | null)[]>;
  /**
   * Whether any of these instances' webhooks wants `event`: what `emit` would decide for each (the
   * subscription cache, then one query for the instances it does not hold). False lets a writer skip the
   * event's statement altogether.
   */
  wantedBy(instanceIds: readonly string[], event: string): Promise<boolean>;
  /**
   * Write and wake the sender: the one way out for events with no state change of their own (network and
   * lifecycle events, mapped by src/webhooks/driver-events.ts and published by src/actors/network-events.ts).
   * Events published by many instances at once are written together (src/store/batch.ts); a sender is woken
   * only when its webhook took the event. The event keeps the id and time it was raised with.
   */
  publish(event: StampedEvent): Promise<void>;
  /**
   * Stamped events of many instances in one statement, each instance's in their order, and nothing else with
   * them (no group commit): the events held through a store outage, written once it answers again. An id
   * already in the outbox is not written again.
   */
  write(items: readonly StampedEvent[]): Promise<void>;
}

/** An event of an instance with the id and time it was raised with. */
export type StampedEvent = EventOf & { instanceId: string } & EventStamp;

export function createEventBus(deps: { pool: Pool; clock: Clock; wake: (instanceId: string) => void }): EventBus {
  const emit = async (q: Queryable, instanceId: string, event: string, data: unknown): Promise<boolean> => {
    if (!isEventName(event)) throw new Error(`unknown event ${event}`);
    // The catalogue (webhooks/events.ts) types each payload; callers build them from the same tables.
    return (await enqueueEvent(q, { instanceId, now: deps.clock.now(), event, data } as EventOf & { instanceId: string; now: number })) !== null;
  };
  const emitAcross = async (q: Queryable, items: { instanceId: string; event: string; data: unknown }[]): Promise<readonly ({ eventId: string } | null)[]> => {
    if (items.length === 0) return [];
    for (const it of items) if (!isEventName(it.event)) throw new Error(`unknown event ${it.event}`);
    return enqueueEventsAcross(q, items as (EventOf & { instanceId: string })[], deps.clock.now());
  };
  // Published at the same moment by many instances (a start-up: each instance's ready, change_state…): written
  // together, one statement for the subscriptions and one for the rows, each instance's events in their order,
  // each with the id and time it was raised with.
  const write = async (items: readonly StampedEvent[]): Promise<void> => {
    const written = await enqueueEventsAcross(deps.pool, items, deps.clock.now());
    // only a sender with something new to deliver is woken
    for (const instanceId of new Set(items.filter((_, i) => written[i]).map((it) => it.instanceId))) deps.wake(instanceId);
  };
  const publishing = new Batcher<StampedEvent, void>(async (items) => {
    await write(items);
    return items.map(() => undefined);
  });
  return {
    emit,
    emitMany: async (q, instanceId, items) => void (await emitAcross(q, items.map((it) => ({ ...it, instanceId })))),
    emitAcross,
    publish: (event) => publishing.submit(event),
    write,
    wantedBy: async (instanceIds, event) => {
      if (!isEventName(event)) throw new Error(`unknown event ${event}`);
      const subscribed = await subscribedEventsOf(deps.pool, instanceIds);
      for (const events of subscribed.values()) if (events !== null && isSubscribed(events, event)) return true;
      return false;
    },
  };
}

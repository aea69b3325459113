/**
 * The outbox: every event is first written here, in the caller's transaction, so that a state change and
 * the event it causes commit (or roll back) together; the instance's webhook sender delivers it afterwards.
 *
 * Opt-in (SPEC.md "Events"): a row is written only when the instance has an enabled webhook subscribed to
 * the event. The subscription test is part of the INSERT itself (INSERT ... SELECT FROM webhooks), so the
 * answer is the one of the caller's transaction, whatever the cache says; the cache only saves the round
 * trip for instances that receive nothing.
 *
 * After the caller's COMMIT, wake the sender (`notify`); its poll is the fallback when nobody does.
 */
import type { Queryable } from '../store/pool.js';
import { newEventId } from '../ids.js';
import { isSubscribed, maxAttemptsFor, type EventName, type EventOf } from './events.js';
import { subscribedEvents, subscribedEventsOf } from './config.js';

export const ENVELOPE_VERSION = 2;

/**
 * The exact JSON text that is stored, signed and sent. Field order is part of the contract (SPEC.md
 * "Versioning" 4): `v` and `eventId` are additive, `event`, `instanceId`, `timestamp`, `data` keep their v1
 * order.
 */
export function envelopeBody(eventId: string, event: EventName, instanceId: string, timestamp: number, data: unknown): string {
  return JSON.stringify({ v: ENVELOPE_VERSION, eventId, event, instanceId, timestamp, data });
}

export type EnqueueInput = EventOf & {
  instanceId: string;
  /** event time, unix ms, from the runtime's Clock: becomes `timestamp` and `X-Webhook-Timestamp` */
  now: number;
};

// `= ANY(events)` on a text[] column: the subscription test of events.ts `isSubscribed`, in SQL.
const SUBSCRIBED = `w.instance_id = $2 AND w.enabled AND ($3::text = ANY (w.events) OR '*' = ANY (w.events))`;

/** Write one event to the outbox if the instance's webhook wants it. Null: nothing written. */
export async function enqueueEvent(q: Queryable, input: EnqueueInput): Promise<{ eventId: string } | null> {
  const { instanceId, event, data, now } = input;
  const events = await subscribedEvents(q, instanceId);
  if (!events || !isSubscribed(events, event)) return null;
  const eventId = newEventId();
  const at = new Date(Math.trunc(now));
  const { rowCount } = await q.query({
    name: 'enqueue_event',
    text: `INSERT INTO outbox (event_id, instance_id, event, body, created_at, max_attempts, next_attempt_at)
     SELECT $1, $2, $3, $4, $5, $6, $5 FROM webhooks w WHERE ${SUBSCRIBED}`,
    values: [eventId, instanceId, event, envelopeBody(eventId, event, instanceId, at.getTime(), data), at, maxAttemptsFor(event)],
  });
  return rowCount ? { eventId } : null;
}

/**
 * Several events of one instance in one statement, in the given order (e.g. the `message.queued` events of
 * a batch of acceptances). Returns, per input, its eventId or null when the webhook does not want it.
 */
export function enqueueEvents(q: Queryable, instanceId: string, items: readonly EventOf[], now: number): Promise<({ eventId: string } | null)[]> {
  return enqueueEventsAcross(q, items.map((it) => ({ ...it, instanceId })), now);
}

/**
 * An event whose id and time were chosen when it was raised (src/actors/network-events.ts): written again after
 * a store outage, it is the same event, and the outbox takes its id once.
 */
export interface EventStamp {
  eventId: string;
  /** when it was raised, unix ms: its `timestamp` */
  at: number;
}

/**
 * Events of many instances in one statement (the node-wide group commit of acceptances): each instance's
 * events keep their given order, which is their delivery order. Returns, per input, its eventId or null when
 * the instance's webhook does not want it (nothing is written for it). An input with its own `eventId` and
 * `at` (EventStamp) keeps them; an id the outbox already holds is not written a second time (a write tried
 * again after one whose outcome the store kept from us): null for it.
 */
export async function enqueueEventsAcross(
  q: Queryable,
  items: readonly (EventOf & { instanceId: string } & Partial<EventStamp>)[],
  now: number,
): Promise<({ eventId: string } | null)[]> {
  if (items.length === 0) return [];
  const subscribed = await subscribedEventsOf(q, items.map((it) => it.instanceId));
  const instances: string[] = [];
  const ids: string[] = [];
  const names: string[] = [];
  const bodies: string[] = [];
  const attempts: number[] = [];
  const times: Date[] = [];
  const idOf = items.map((it) => {
    const events = subscribed.get(it.instanceId) ?? null;
    if (events === null || !isSubscribed(events, it.event)) return null;
    const eventId = it.eventId ?? newEventId();
    const at = new Date(Math.trunc(it.at ?? now));
    instances.push(it.instanceId);
    ids.push(eventId);
    names.push(it.event);
    bodies.push(envelopeBody(eventId, it.event, it.instanceId, at.getTime(), it.data));
    attempts.push(maxAttemptsFor(it.event));
    times.push(at);
    return eventId;
  });
  if (ids.length === 0) return items.map(() => null);
  // WITH ORDINALITY + ORDER BY: the bigserial ids follow the input order, which is the delivery order.
  // Prepared once per connection, as every statement on a path each event takes (src/store/pool.ts).
  // ON CONFLICT (event_id): an event written again keeps its one row (receivers dedupe by its id).
  const { rows } = await q.query<{ event_id: string }>({
    name: 'enqueue_events_across',
    text: `INSERT INTO outbox (event_id, instance_id, event, body, created_at, max_attempts, next_attempt_at)
     SELECT e.event_id, e.instance_id, e.event, e.body, e.at, e.max_attempts, e.at
       FROM unnest($1::timestamptz[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::int[]) WITH ORDINALITY AS e(at, instance_id, event_id, event, body, max_attempts, n)
       JOIN webhooks w ON w.instance_id = e.instance_id AND w.enabled AND (e.event = ANY (w.events) OR '*' = ANY (w.events))
      ORDER BY e.n
     ON CONFLICT (event_id) DO NOTHING
     RETURNING event_id`,
    values: [times, instances, ids, names, bodies, attempts],
  });
  const written = new Set(rows.map((r) => r.event_id));
  return idOf.map((id) => (id !== null && written.has(id) ? { eventId: id } : null));
}

/**
 * Every event an instance reports for integrators leaves through here: the network events its session
 * forwards (with the session's own media download) and the lifecycle events its instance machine notifies.
 * Both are `IncomingCommand`s sent to one `fromCallback` actor, which maps each with the one table
 * (src/webhooks/driver-events.ts) and writes it with the one function (`EventBus.publish`), in the order the
 * commands arrived per instance. The machine's `notify` action and the session's listener only send a
 * command; every write happens here.
 *
 * What a write needs besides the event: a `message` counts for the statistics of /api/status and carries its
 * media block (the attachment downloaded through the session and stored first when the instance keeps
 * incoming media, under `downloadTimeoutMs`); a `ready` saves the instance's own number. Stopping the actor
 * aborts a download in progress; what was already received is still written (`settled()` waits for it).
 * `qr` and `code` carry login secrets: a failure is logged with the event name only.
 *
 * Each event gets its id and time when it is raised. One the store cannot take (unreachable, or known to be
 * degraded), and every newer one of its instance while it waits, is held in memory (src/actors/held-events.ts)
 * and written, in order, once the store answers again; the statistics row of an incoming message and a `ready`'s
 * number wait with it. Before, such an event was logged `instance event not written` and lost.
 */
import { fromCallback, type CallbackActorLogic } from 'xstate';
import { STORE_DEADLINES, type Pool } from '../store/pool.js';
import { raceClock, type Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { EventBus } from './events.js';
import type { Instance } from '../store/instances.js';
import { newEventId } from '../ids.js';
import { HeldEvents, writeInbound, writeRaised, type HeldEventsMetrics, type RaisedEvent, type StoreGate } from './held-events.js';
import { storeCouldNotTake } from '../store/health.js';
import type { Driver, DriverEventName, DriverEvents, MessageMedia, WireMessage } from '../drivers/contract.js';
import type { NotifyParams } from '../../machines/instance.types.js';
import type { EventOf } from '../webhooks/events.js';
import { lifecycleEventOf, networkEventOf, type NetworkEventContext } from '../webhooks/driver-events.js';
import { toMessage } from '../wire/objects.js';

/** Fetches an incoming attachment; rejects when aborted or late. */
export type MediaFetch = () => Promise<MessageMedia | null>;

export interface IncomingMedia {
  /** the `media` block of the `message` event (SPEC.md "Incoming media block"); stores the file when enabled */
  describe(instance: Instance, message: WireMessage, fetch: MediaFetch): Promise<Record<string, unknown> | null>;
}

export interface IncomingEventsDeps {
  pool: Pool;
  clock: Clock;
  log: Logger;
  events: EventBus;
  media: IncomingMedia;
  /** deadline of one incoming attachment's download */
  downloadTimeoutMs: number;
  /** the store's health: while it is degraded, events are held without a try; its recovery writes them */
  store?: StoreGate;
  metrics?: HeldEventsMetrics;
  /** the bound of the events held through an outage (src/actors/held-events.ts), for tests */
  held?: { maxEvents?: number; maxBytes?: number };
}

interface Work {
  /** the webhook event, built with what the actor provides */
  map(ctx: NetworkEventContext, signal: AbortSignal): Promise<EventOf | null>;
}

/** One event of an instance for the publishing actor. Only `name` is ever logged. */
export interface IncomingCommand extends Work {
  type: 'incoming';
  /** the instance as its owner knows it now (id, settings, number) */
  instance: Instance;
  name: string;
  /** the session's download of an incoming attachment (network events) */
  download?: Driver['downloadMedia'];
  /** a `ready` whose number the store holds already (a restart): not written again */
  numberStored?: boolean;
}

/** A driver event as the session forwarded it, with the session's own media download. */
export function networkCommand<E extends DriverEventName>(
  instance: Instance,
  name: E,
  args: DriverEvents[E],
  download: Driver['downloadMedia'],
): IncomingCommand {
  return { type: 'incoming', instance, name, map: (ctx) => networkEventOf(name, args, ctx), download };
}

/** A lifecycle event as the instance machine notified it. */
export function lifecycleCommand(instance: Instance, p: NotifyParams, numberStored = false): IncomingCommand {
  return { type: 'incoming', instance, name: p.event, map: () => Promise.resolve(lifecycleEventOf(p.event, p.data)), numberStored };
}

/** `p`, or a rejection as soon as `signal` aborts (the listener is removed either way). */
function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  let off = () => {};
  const aborted = new Promise<never>((_, reject) => {
    const on = () => reject(signal.reason);
    signal.addEventListener('abort', on, { once: true });
    off = () => signal.removeEventListener('abort', on);
  });
  return Promise.race([p, aborted]).finally(off);
}

export interface IncomingEvents {
  /** create or spawn once; send it `networkCommand(…)` and `lifecycleCommand(…)` */
  logic: CallbackActorLogic<IncomingCommand>;
  /** resolves once every command received so far is written, held (the store could not take it) or given up */
  settled(): Promise<void>;
  /** events held in memory until the store takes them */
  readonly held: number;
  /** the stop: settle, one last try to write what is held, then no more retries (src/actors/held-events.ts) */
  close(): Promise<void>;
}

/** How long the stop waits for the events on their way to the store: a statement's deadline after a connection's. */
export const CLOSE_SETTLE_MS = STORE_DEADLINES.connectMs + STORE_DEADLINES.queryMs;

export function createIncomingEvents(deps: IncomingEventsDeps): IncomingEvents {
  const pending = new Set<Promise<void>>();
  const held = new HeldEvents({
    pool: deps.pool,
    clock: deps.clock,
    log: deps.log,
    write: (items) => deps.events.write(items),
    ...(deps.store ? { store: deps.store } : {}),
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    ...deps.held,
  });
  // an event of an instance with events held waits behind them; while the store is known away, nothing is tried
  const holding = (instanceId: string) => held.holds(instanceId) || deps.store?.degraded === true;

  /**
   * The webhook event of a command, with its id chosen now and the time it came (`at`: when the instance or its
   * session told it, not when its turn in the instance's chain came), and the writes it needs besides.
   */
  async function raise(cmd: IncomingCommand, signal: AbortSignal, at: number): Promise<RaisedEvent | null> {
    const { instance } = cmd;
    let inbound: RaisedEvent['inbound'] = null;
    const ctx: NetworkEventContext = {
      async messageObject(m) {
        if (!m.fromMe) {
          const row = { messageId: m.id._serialized, receivedAt: deps.clock.now() };
          if (holding(instance.id)) inbound = row;
          else {
            try {
              await writeInbound(deps.pool, [{ instanceId: instance.id, ...row }]);
            } catch (err) {
              if (!storeCouldNotTake(err)) throw err;
              inbound = row;
            }
          }
        }
        const download = cmd.download;
        const fetch: MediaFetch = () =>
          download
            ? raceClock(deps.clock, deps.downloadTimeoutMs, abortable(download(m.id._serialized), signal), () => {
                throw new Error('the media download timed out');
              })
            : Promise.resolve(null);
        const media = m.hasMedia ? await deps.media.describe(instance, m, fetch) : null;
        return { ...toMessage(m), ...(media ? { media } : {}) };
      },
    };
    const event = await cmd.map(ctx, signal);
    if (!event) return null;
    const phoneNumber = event.event === 'ready' && event.data.phoneNumber && !cmd.numberStored ? event.data.phoneNumber : null;
    return { event: { ...event, instanceId: instance.id, eventId: newEventId(), at }, inbound, phoneNumber };
  }

  /** Written now, or held when the store cannot take it (or the instance has events held already). */
  async function publish(cmd: IncomingCommand, signal: AbortSignal, at: number): Promise<void> {
    const raised = await raise(cmd, signal, at);
    if (!raised) return;
    const { instanceId } = raised.event;
    if (holding(instanceId)) return held.hold(raised);
    try {
      if (raised.inbound || raised.phoneNumber) await writeRaised(deps.pool, (items) => deps.events.write(items), [raised]);
      else await deps.events.publish(raised.event);
    } catch (err) {
      if (!storeCouldNotTake(err)) throw err;
      held.hold(raised);
      void deps.store?.suspect();
    }
  }

  const logic = fromCallback<IncomingCommand>(({ receive }) => {
    const abort = new AbortController();
    const chains = new Map<string, Promise<void>>();
    receive((cmd) => {
      const id = cmd.instance.id;
      // the event's time is now, as it happened: an event waiting behind the instance's earlier ones (a media
      // download) was stamped when its turn came (found from the outside: a session's `ready` stamped after the
      // first message it sent, so a receiver ordering by timestamp saw a send before its session was ready)
      const at = deps.clock.now();
      const done = (chains.get(id) ?? Promise.resolve())
        .then(() => publish(cmd, abort.signal, at))
        .catch((err: unknown) => deps.log.warn({ err, instanceId: id, event: cmd.name }, 'instance event not written'))
        .finally(() => {
          pending.delete(done);
          if (chains.get(id) === done) chains.delete(id);
        });
      chains.set(id, done);
      pending.add(done);
    });
    return () => abort.abort(new Error('the gateway is stopping'));
  });

  const settled = async () => {
    while (pending.size > 0) await Promise.all([...pending]);
  };
  return {
    logic,
    settled,
    get held() {
      return held.size;
    },
    async close() {
      // Each write on its way is bounded by the store's deadlines, but in a partition each can take that long, and
      // an instance's next events wait behind it: the stop waits for them at most CLOSE_SETTLE_MS (found by the
      // second outside probe: a SIGTERM during a partition with sends in flight waited here until the hard stop).
      const waited = await raceClock(deps.clock, CLOSE_SETTLE_MS, settled().then(() => true), () => false);
      if (!waited) {
        deps.log.warn({ onTheirWay: pending.size }, 'instance events still on their way to the store when the stop ended its wait for them: they may or may not be written');
      }
      await held.close();
    },
  };
}

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
 */
import { fromCallback, type CallbackActorLogic } from 'xstate';
import type { Pool } from '../store/pool.js';
import { raceClock, type Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { EventBus } from './events.js';
import { setPhoneNumber, type Instance } from '../store/instances.js';
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
  /** resolves once every command received so far is written (or given up) */
  settled(): Promise<void>;
}

export function createIncomingEvents(deps: IncomingEventsDeps): IncomingEvents {
  const pending = new Set<Promise<void>>();

  async function publish(cmd: IncomingCommand, signal: AbortSignal): Promise<void> {
    const { instance } = cmd;
    const ctx: NetworkEventContext = {
      async messageObject(m) {
        if (!m.fromMe) {
          await deps.pool.query(
            'INSERT INTO inbound_messages (instance_id, message_id, received_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
            [instance.id, m.id._serialized, new Date(deps.clock.now())],
          );
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
    if (!event) return;
    if (event.event === 'ready' && event.data.phoneNumber && !cmd.numberStored) await setPhoneNumber(deps.pool, instance.id, event.data.phoneNumber);
    await deps.events.publish(instance.id, event);
  }

  const logic = fromCallback<IncomingCommand>(({ receive }) => {
    const abort = new AbortController();
    const chains = new Map<string, Promise<void>>();
    receive((cmd) => {
      const id = cmd.instance.id;
      const done = (chains.get(id) ?? Promise.resolve())
        .then(() => publish(cmd, abort.signal))
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

  return {
    logic,
    settled: async () => {
      while (pending.size > 0) await Promise.all([...pending]);
    },
  };
}

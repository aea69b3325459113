/**
 * What the network tells an instance becomes events for integrators (SPEC.md "Messaging-network events",
 * payloads by src/webhooks/driver-events.ts). Lifecycle events (qr, ready, …) come from the instance
 * machine's `notify`, not from here, so each is written once. A `message` also counts for the statistics of
 * /api/status and carries its media block (stored first when the instance keeps incoming media).
 */
import type { Pool } from '../store/pool.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { EventBus } from './events.js';
import type { Instance } from '../store/instances.js';
import type { DriverEventName, DriverEvents, WireMessage } from '../drivers/contract.js';
import { toMessage } from '../http/routes/wire-format.js';
import { webhookEventOf } from '../webhooks/driver-events.js';
import { isLifecycleEvent } from './session.js';

export interface IncomingMedia {
  /** the `media` block of the `message` event (SPEC.md "Incoming media block"); stores the file when enabled */
  describe(instance: Instance, message: WireMessage): Promise<Record<string, unknown> | null>;
}

export interface NetworkEventDeps {
  pool: Pool;
  clock: Clock;
  log: Logger;
  events: EventBus;
  media: IncomingMedia;
}

export function createNetworkEventHandler(deps: NetworkEventDeps): (instance: Instance, name: DriverEventName, args: unknown[]) => void {
  const fail = (instance: Instance, name: string) => (err: unknown) =>
    deps.log.warn({ err, instanceId: instance.id, event: name }, 'network event not written');

  return (instance, name, args) => {
    if (name === 'message') {
      const m = args[0] as WireMessage;
      void (async () => {
        if (!m.fromMe) {
          await deps.pool.query(
            'INSERT INTO inbound_messages (instance_id, message_id, received_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
            [instance.id, m.id._serialized, new Date(deps.clock.now())],
          );
        }
        const media = m.hasMedia ? await deps.media.describe(instance, m) : null;
        await deps.events.publish(instance.id, 'message', { ...toMessage(m), ...(media ? { media } : {}) });
      })().catch(fail(instance, name));
      return;
    }
    if (isLifecycleEvent(name)) return;
    const mapped = webhookEventOf(name, args as DriverEvents[typeof name], {
      messageObject: (m) => ({ ...toMessage(m) }),
      phoneNumber: () => instance.phoneNumber,
    });
    if (mapped) void deps.events.publish(instance.id, mapped.event, mapped.data).catch(fail(instance, name));
  };
}

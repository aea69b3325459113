/**
 * The operator's lifecycle lines: an instance linked, disconnected, refused, restarting, logged at info with
 * what may be shown (the reason or the number). A QR and a pairing code are secrets and never logged; the other
 * lifecycle events are noise in an operator's log.
 */
import type { NotifyParams } from '../../machines/instance.machine.js';
import type { Logger } from '../log.js';

const LIFECYCLE_LINES: Partial<Record<NotifyParams['event'], string>> = {
  ready: 'instance linked and connected',
  disconnected: 'instance disconnected',
  auth_failure: 'instance link refused by the network (a new QR scan is needed)',
  instance_restarting: 'instance restarting',
};

/** What a lifecycle line may carry: the reason or the number, never a QR or a pairing code. */
function lifecycleFields(p: NotifyParams): Record<string, unknown> {
  switch (p.event) {
    case 'ready':
      return { phoneNumber: p.data.phoneNumber };
    case 'disconnected':
      return { reason: p.data.reason };
    case 'instance_restarting':
      return { reason: p.data.reason };
    default:
      return {};
  }
}

/** Log the lifecycle event of an instance if an operator reads it (at info). */
export function logLifecycle(log: Logger, instanceId: string, params: NotifyParams): void {
  const line = LIFECYCLE_LINES[params.event];
  if (line) log.info({ instanceId, ...lifecycleFields(params) }, line);
}

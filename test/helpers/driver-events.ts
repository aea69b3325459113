/** The next time a driver raises `event` (and `match` accepts its arguments): its arguments; the listener is removed then. */
import type { Driver, DriverEventName, DriverEvents } from '../../src/drivers/contract.js';

export function next<E extends DriverEventName>(d: Driver, event: E, match: (...args: DriverEvents[E]) => boolean = () => true): Promise<DriverEvents[E]> {
  return new Promise((resolve) => {
    const l = (...args: DriverEvents[E]) => {
      if (!match(...args)) return;
      d.off(event, l);
      resolve(args);
    };
    d.on(event, l);
  });
}

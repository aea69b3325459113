/**
 * What the session actor serves besides its lifecycle: the network asks of the instance's port (reads,
 * interactions, groups) and the dispatcher's prepared calls. Both run on the session's own driver and answer
 * with plain data; a driver failure becomes the domain error its code stands for (src/drivers/domain-errors.ts).
 */
import { DriverError, type Driver } from '../drivers/contract.js';
import { driverErrorToDomain } from '../drivers/domain-errors.js';
import { DomainError, waCallFailed } from '../errors.js';
import { errorReply, okReply, type AskReply, type NetworkAsk } from './port.js';

/** Run one network ask on `driver`; `report` sees failures the driver did not classify. */
export async function serveNetwork(driver: Driver, ask: NetworkAsk, report: (err: unknown) => void): Promise<AskReply> {
  const label = ask.label ?? ask.op;
  try {
    const call = driver[ask.op] as (...args: unknown[]) => Promise<unknown>;
    return okReply(await call.apply(driver, ask.args));
  } catch (err) {
    if (err instanceof DomainError) return errorReply(err);
    if (err instanceof DriverError && err.code === 'NOT_FOUND' && ask.notFound) return { ok: false, error: ask.notFound };
    if (err instanceof DriverError) return errorReply(driverErrorToDomain(err, label, { status: 'connected' }));
    report(err);
    return errorReply(waCallFailed(`${label} failed`));
  }
}

/**
 * The dispatcher's network call, as plain data both ways: what to call (`PreparedCall`, built from a claimed
 * job by src/queue/dispatch.ts) and how it ended (`CallOutcome`). The session actor, the only holder of the
 * driver, performs it (`performCall`); a call that never started is `not_sent`, and the job goes back.
 */
import { DriverError, type Driver, type SendContent, type SendOptions } from '../drivers/contract.js';
import { chatIdToPhone, namesPhone } from '../phone.js';

export type PreparedCall =
  | { call: 'send'; chatId: string; content: SendContent; options: SendOptions }
  | { call: 'forward'; msgId: string; toChatId: string }
  | { call: 'group_create'; title: string; participants: string[]; options: Record<string, unknown> };

export type CallOutcome =
  | { kind: 'confirmed'; messageId: string }
  | { kind: 'assumed'; messageId: string | null }
  /** the driver refused or failed; `provablyNotSent` when the message certainly stayed out */
  | { kind: 'driver_error'; code: DriverError['code']; message: string; provablyNotSent: boolean }
  /** the call failed in a way the driver did not classify, after it started */
  | { kind: 'call_failed'; message: string }
  /** the session could not take the call (gone, not ready): nothing reached the network */
  | { kind: 'not_sent'; message: string };

/** The dispatcher asks the session (through their parent) to make one call. */
export interface CallEnvelope {
  type: 'CALL';
  askId: string;
  replyTo: string;
  prepared: PreparedCall;
}

/**
 * A call addressed to the number the session is linked to now, refused before it reaches the driver: the real
 * network takes the session down on a message to its own number. Acceptance refuses such a send (400), but a job
 * waits: an instance linked again to another number meanwhile would send its waiting job to that number to itself.
 * A group listing that number among its participants alike (acceptance refuses it: the instance is the creator).
 * The webjs driver has no such check of its own (the sandbox's has); null when the call may go out.
 */
export function ownNumberRefusal(driver: Pick<Driver, 'info'>, prepared: PreparedCall): CallOutcome | null {
  const own = driver.info ? chatIdToPhone(driver.info.wid) : null;
  if (own === null) return null;
  const refused = (message: string): CallOutcome => ({ kind: 'driver_error', code: 'INVALID_INPUT', message, provablyNotSent: true });
  switch (prepared.call) {
    case 'send':
    case 'forward':
      return namesPhone(prepared.call === 'send' ? prepared.chatId : prepared.toChatId, own)
        ? refused('not sent: the recipient is the number the instance is linked to now; nothing was sent')
        : null;
    case 'group_create':
      return prepared.participants.some((p) => namesPhone(p, own))
        ? refused('not created: a participant is the number the instance is linked to now, the group\'s creator; nothing was sent')
        : null;
  }
}

/** Make the call on `driver`; never throws. */
export async function performCall(driver: Driver, prepared: PreparedCall, now: () => number): Promise<CallOutcome> {
  const refused = ownNumberRefusal(driver, prepared);
  if (refused) return refused;
  try {
    switch (prepared.call) {
      case 'forward':
        await driver.forwardMessage(prepared.msgId, prepared.toChatId);
        // The network gives no id for a forward: always `assumed`, with a synthetic id (SPEC.md).
        return { kind: 'assumed', messageId: `fwd_${now()}` };
      case 'group_create':
        return { kind: 'confirmed', messageId: (await driver.createGroup(prepared.title, prepared.participants, prepared.options)).gid };
      case 'send': {
        const result = await driver.sendMessage(prepared.chatId, prepared.content, prepared.options);
        return result.id ? { kind: 'confirmed', messageId: result.id } : { kind: 'assumed', messageId: null };
      }
    }
  } catch (err) {
    if (err instanceof DriverError) return { kind: 'driver_error', code: err.code, message: err.message, provablyNotSent: err.provablyNotSent };
    return { kind: 'call_failed', message: err instanceof Error ? err.message : String(err) };
  }
}

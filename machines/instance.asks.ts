/**
 * How the instance actor routes what it is asked (src/actors/port.ts) and what its children ask of each other.
 * Pure: it decides where an event goes; the machine's actions send it. Not a machine itself.
 *
 * - `view`, `qr`: answered by the instance actor from its own snapshot (`qr` carries secrets: operator only).
 * - `network`: to the `session` child while connected; otherwise refused with 503 INSTANCE_OFFLINE.
 * - `queue.*`, `settings`, `drain`: to the `planner` child (it serializes acceptance and re-planning).
 * - `restart`, `logout`, `pairingCode`: the machine's own operator events, answered at once (the port then
 *   awaits the pairing code in the snapshot). A pairing code is refused (409 CONFLICT) unless the session is
 *   starting or waiting for a link: the machine would drop the request.
 * - `CALL` (the dispatcher's prepared network call): to the `session` child while one runs; with no session
 *   the call is answered `not_sent`, so the job goes back to the queue (it never reached the network).
 */
import type { AskReply, InstanceAsk, LinkView, ReplyEvent } from '../src/actors/port.js';
import type { CallOutcome } from '../src/actors/call.js';
import type { OperatorEvent } from './instance.types.js';
import { viewOf, currentQr, instanceStatus, leafStates, type InstanceSnapshot } from './instance.snapshot.js';

export type AskRoute =
  | { to: 'session' | 'planner' }
  | { raise: OperatorEvent }
  | { reply: AskReply };

export const reply = (askId: string, r: AskReply): ReplyEvent => ({ type: 'REPLY', askId, reply: r });

/** Where an ask goes, given the actor's current snapshot. */
export function routeAsk(ask: InstanceAsk, s: InstanceSnapshot, hasSession: boolean): AskRoute {
  switch (ask.type) {
    case 'view':
      return { reply: { ok: true, value: viewOf(s) } };
    case 'qr':
      return { reply: { ok: true, value: linkViewOf(s) } };
    case 'network': {
      const status = instanceStatus(s);
      if (status === 'connected' && hasSession) return { to: 'session' };
      const lastError = s.context.lastError ? `${s.context.lastError.reason}: ${s.context.lastError.detail}` : null;
      const instance = { status, detail: leafStates(s.value).join(', '), lastError };
      return { reply: { ok: false, error: { code: 'INSTANCE_OFFLINE', message: 'instance is not connected', data: { instance } } } };
    }
    case 'restart':
      return { raise: { type: 'ORDERED_RESTART', reason: ask.reason } };
    case 'logout':
      return { raise: { type: 'LOGOUT' } };
    case 'pairingCode': {
      const status = instanceStatus(s);
      const waiting = leafStates(s.value).some((l) => /^lifecycle\.running\.connection\.(initializing|waiting_qr)$/.test(l));
      if (waiting) return { raise: { type: 'REQUEST_PAIRING_CODE', phoneNumber: ask.phoneNumber } };
      const message = status === 'authenticated' || status === 'connected' ? 'the instance is already linked' : 'no session waits for a link (restart the instance first)';
      return { reply: { ok: false, error: { code: 'CONFLICT', message, data: { status } } } };
    }
    default:
      return { to: 'planner' };
  }
}

/**
 * The `qr` ask's answer: the QR while the instance waits for a scan (as viewOf shows it), and the latest
 * pairing code while not linked. Secrets: for the operator's answer only, never a summary or a log.
 */
export function linkViewOf(s: InstanceSnapshot): LinkView {
  const status = instanceStatus(s);
  const code = s.context.pairingCode;
  return { status, raw: currentQr(s)?.raw ?? null, pairingCode: code ? { code: code.code, at: code.at } : null };
}

/** The answer to a CALL when no session runs. */
export const noSession: CallOutcome = { kind: 'not_sent', message: 'the session went away before the call' };


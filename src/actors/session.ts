/**
 * The session actor: one driver session as a `fromCallback` actor, the child `session` of the instance machine
 * (machines/instance.machine.ts). It is where the machine's effects on the driver happen.
 *
 * On start it subscribes to every driver event and calls `driver.initialize()`. Lifecycle events go to the
 * parent as machine events (`SessionEvent`, stamped `at` from the clock, in the order the driver emitted them);
 * EVERY driver event, lifecycle or not, is also handed to `onNetworkEvent(name, args)` (messages, acks, ... for
 * webhooks and the store). A failing `initialize()` (or driver factory) becomes `SESSION_FAILED`. It obeys the
 * machine's commands `LOGOUT` and `REQUEST_PAIRING_CODE`. On stop it unsubscribes and calls `driver.destroy()`.
 *
 * It is the only holder of the driver: the instance port's network asks (`ASK`, forwarded by the instance
 * actor while connected) and the dispatcher's prepared calls (`CALL`) run here (src/actors/session-calls.ts,
 * src/actors/call.ts) and are answered to their reply-to; a call arriving while the driver cannot send is
 * answered `not_sent` (the job goes back to the queue).
 *
 * Two forms:
 * - `sessionLogic`: the driver and callbacks come in the input (tests, one-off use).
 * - `createSessionLogic(deps)`: what the actor system (src/actors/system.ts) provides to the machine (`instanceMachine.provide({actors:
 *   {session: sessions.logic}})`); it builds a driver per start from a DriverFactory and starts a session only
 *   after the previous session of the same instance finished `destroy()`, so two browsers never share a profile.
 *   `settled(instanceId)` / `settledAll()` resolve when destroys finished (graceful shutdown awaits them).
 *
 * Webhooks: take the lifecycle ones from the machine's `notify` (it has DESIGN.md's payloads, e.g. `ready
 * {phoneNumber}`) and only the others from `onNetworkEvent` (`isLifecycleEvent(name)` tells them apart), so none
 * is sent twice. `onNetworkEvent` gets raw arguments, QR strings and pairing codes included: never log them.
 */
import { fromCallback, type CallbackActorLogic } from 'xstate';
import { DriverError, NO_SESSION_DRIVER_CODES, networkUnreachable, type Driver, type DriverEventName, type DriverEvents, type DriverFactory, type DriverOptions } from '../drivers/contract.js';
import type { SessionCommand, SessionControl, SessionEvent, SessionInput } from '../../machines/instance.machine.js';
import { answer } from './local-port.js';
import { performCall, type CallOutcome } from './call.js';
import { okReply } from './port.js';
import { serveNetwork } from './session-calls.js';
import { Stopping } from './stopping.js';
import { systemClock, type Clock } from '../clock.js';

/**
 * Every driver event with its arguments, and the session's own media download (an incoming `message`'s
 * attachment is fetched through it, never through a route).
 */
export type NetworkEventListener = <E extends DriverEventName>(name: E, args: DriverEvents[E], download: Driver['downloadMedia']) => void;

export interface SessionOptions {
  /** Stamps `at` on machine events (default: the system clock). */
  clock?: Clock;
  /** Every driver event with its arguments as the driver gave them (QR and pairing code included: no logging). */
  onNetworkEvent?: NetworkEventListener;
  /** Faults nobody else sees: destroy failures, a failed forward. */
  onError?: (err: unknown, where: 'destroy' | 'forward' | 'call') => void;
}

export interface DriverSessionInput extends SessionOptions {
  driver: Driver;
}

/** Events of the driver that drive the instance machine; the rest are only network events. */
export const LIFECYCLE_EVENTS = [
  'qr',
  'code',
  'authenticated',
  'ready',
  'auth_failure',
  'disconnected',
  'change_state',
  'loading_screen',
  'browser_health',
  'fatal',
] as const satisfies readonly DriverEventName[];

export const isLifecycleEvent = (name: string): boolean => (LIFECYCLE_EVENTS as readonly string[]).includes(name);

// Exhaustive by type: adding an event to the contract without listing it here fails the build.
const ALL_EVENTS: Record<DriverEventName, true> = {
  qr: true, code: true, authenticated: true, auth_failure: true, ready: true, disconnected: true,
  change_state: true, loading_screen: true, message: true, message_create: true, message_ack: true,
  message_reaction: true, message_edit: true, message_revoke_everyone: true, message_revoke_me: true,
  message_ciphertext: true, message_ciphertext_failed: true, media_uploaded: true, unread_count: true,
  vote_update: true, contact_changed: true, chat_removed: true, chat_archived: true, group_join: true,
  group_leave: true, group_admin_changed: true, group_membership_request: true, group_update: true, call: true,
  change_battery: true, browser_health: true, fatal: true,
};
export const DRIVER_EVENT_NAMES = Object.keys(ALL_EVENTS) as DriverEventName[];

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** What translating an event needs of its session. */
interface Translating {
  driver: Driver;
}

type Translate<E extends DriverEventName> = (t: Translating, at: number, ...args: DriverEvents[E]) => SessionEvent;

/**
 * Each lifecycle event of the driver as the machine's event, stamped `at`. One table for every session (a session
 * subscribes with one bound listener per event name, not with closures of its own: ten thousand sessions).
 */
const TRANSLATIONS: { [E in (typeof LIFECYCLE_EVENTS)[number]]: Translate<E> } = {
  // kept as its text: drawn only where someone reads it (src/qr-image.ts), not for each of thousands waiting
  qr: (_, at, qr) => ({ type: 'qr', qr, at }),
  code: (_, at, code) => ({ type: 'code', code, at }),
  authenticated: (_, at) => ({ type: 'authenticated', at }),
  // driver.info belongs to this moment: translated when the event comes, delivered in order
  ready: (t, at) => ({ type: 'ready', wid: t.driver.info?.wid ?? null, at }),
  auth_failure: (_, at, message) => ({ type: 'auth_failure', message, at }),
  disconnected: (_, at, reason) => ({ type: 'disconnected', reason, at }),
  change_state: (_, at, state) => ({ type: 'change_state', state, at }),
  loading_screen: (_, at, percent, message) => ({ type: 'loading_screen', percent, message, at }),
  browser_health: (_, at, health) => ({ type: 'browser_health', health, at }),
  fatal: (_, at, reason) => ({ type: 'fatal', reason, at }),
};
const translationOf = (name: DriverEventName): Translate<DriverEventName> | undefined =>
  (TRANSLATIONS as Partial<Record<DriverEventName, Translate<DriverEventName>>>)[name];

/**
 * Run one session on `driver` until the returned `stop()`; `after` delays `initialize()` (previous destroy).
 * `sendBack` receives machine events in the order the driver emitted them.
 */
export function runSession(
  driver: Driver,
  opts: SessionOptions,
  sendBack: (event: SessionEvent) => void,
  receive: (listener: (command: SessionControl) => void) => void,
  after: Promise<void> = Promise.resolve(),
): { stop(): Promise<void> } {
  const clock = opts.clock ?? systemClock;
  const report = (err: unknown, where: 'destroy' | 'forward') => opts.onError?.(err, where);
  let stopped = false;

  // Every event reaches the machine a turn after the driver emitted it (never inside the driver's own call), and
  // the chain keeps it behind the ones emitted before it (the outcomes of a logout or a start come later).
  let chain: Promise<void> = Promise.resolve();
  const forward = (make: () => SessionEvent) => {
    chain = chain
      .then(() => {
        const event = make();
        if (!stopped) sendBack(event);
      })
      .catch((err: unknown) => report(err, 'forward'));
  };

  const translating: Translating = { driver };
  const download: Driver['downloadMedia'] = (msgId) => driver.downloadMedia(msgId);
  const onEvent = (name: DriverEventName, ...args: DriverEvents[DriverEventName]) => {
    if (stopped) return;
    opts.onNetworkEvent?.(name, args, download);
    const translate = translationOf(name);
    if (translate) {
      const event = translate(translating, clock.now(), ...args);
      forward(() => event);
    }
  };
  const listeners = DRIVER_EVENT_NAMES.map((name) => ({ name, listener: onEvent.bind(null, name) }));
  for (const { name, listener } of listeners) driver.on(name, listener);

  const initialized = after.then(() => {
    if (!stopped) return driver.initialize();
  });
  initialized.catch((err: unknown) =>
    forward(() => ({ type: 'SESSION_FAILED', message: messageOf(err), at: clock.now(), ...(networkUnreachable(err) ? { unreachable: true } : {}) })));
  // Commands wait for the start, whatever its outcome, so a logout right after a start still reaches the driver.
  const started = initialized.catch(() => undefined);

  receive((command) => {
    if (command.type === 'LOGOUT') {
      started
        .then(() => driver.logout())
        .then(
          () => forward(() => ({ type: 'LOGGED_OUT', at: clock.now() })),
          (err: unknown) => forward(() => ({ type: 'LOGOUT_FAILED', message: messageOf(err), at: clock.now() })),
        );
    } else {
      // The code itself arrives as the driver's `code` event.
      started
        .then(() => driver.requestPairingCode(command.phoneNumber))
        .catch((err: unknown) => forward(() => ({ type: 'PAIRING_CODE_FAILED', message: messageOf(err), code: err instanceof DriverError ? err.code : null, at: clock.now(), askId: command.askId ?? null })));
    }
  });

  return {
    stop() {
      stopped = true;
      for (const { name, listener } of listeners.splice(0)) driver.off(name, listener);
      // Called now (the executor runs synchronously), so the browser starts closing with the actor's stop.
      return new Promise<void>((resolve) => resolve(driver.destroy())).catch((err: unknown) => report(err, 'destroy'));
    },
  };
}

/** A session on the driver given in the input. */
export const sessionLogic = fromCallback<SessionControl, DriverSessionInput>(({ input, sendBack, receive }) => {
  const session = runSession(input.driver, input, sendBack, receive);
  return () => void session.stop();
});

export interface SessionDeps extends Omit<SessionOptions, 'onNetworkEvent'> {
  driverFactory: DriverFactory;
  driverOptions: Omit<DriverOptions, 'instanceId'>;
  onNetworkEvent?: <E extends DriverEventName>(instanceId: string, name: E, args: DriverEvents[E], download: Driver['downloadMedia']) => void;
}

export interface Sessions {
  /** Provide as the machine's `session` actor. */
  logic: CallbackActorLogic<SessionCommand, SessionInput>;
  /** Resolves once the last session of the instance finished `destroy()`. */
  settled(instanceId: string): Promise<void>;
  settledAll(): Promise<void>;
}

export function createSessionLogic(deps: SessionDeps): Sessions {
  const destroying = new Stopping();
  const logic = fromCallback<SessionCommand, SessionInput>(({ input, sendBack, receive, system }) => {
    const { instanceId } = input;
    const clock = deps.clock ?? systemClock;
    let driver: Driver;
    try {
      driver = deps.driverFactory({ instanceId, ...deps.driverOptions });
    } catch (err) {
      queueMicrotask(() => sendBack({ type: 'SESSION_FAILED', message: messageOf(err), at: clock.now() }));
      return undefined;
    }
    // The dispatcher's calls go out only on a driver that reported `ready` and has not since reported
    // `disconnected` or `fatal` (set with the driver's own events, never behind them), and not once stopping.
    let sendable = false;
    const onNetworkEvent = deps.onNetworkEvent;
    const controls: ((command: SessionControl) => void)[] = [];
    receive((command) => {
      if (command.type === 'ASK') {
        void serveNetwork(driver, command.ask, (err) => deps.onError?.(err, 'call')).then((r) => answer(system, command, r));
      } else if (command.type === 'CALL') {
        const outcome: Promise<CallOutcome> = sendable
          ? performCall(driver, command.prepared, () => clock.now())
          : Promise.resolve({ kind: 'not_sent', message: 'the session cannot send now' });
        void outcome.then((o) => {
          answer(system, command, okReply(o));
          // The driver refused a send as having no session although it reported `ready` and no disconnect
          // since: its state and ours disagree, and every put-back job would come straight back to the same
          // refusal. The session has failed; the machine restarts it (backoff) and the jobs wait for `ready`.
          if (sendable && o.kind === 'driver_error' && o.provablyNotSent && NO_SESSION_DRIVER_CODES.has(o.code)) {
            sendable = false;
            sendBack({ type: 'SESSION_FAILED', message: `the driver refused a send (${o.code}) although it had reported ready`, at: clock.now() });
          }
        });
      } else for (const control of controls) control(command);
    });
    const session = runSession(
      driver,
      {
        ...deps,
        onNetworkEvent: (name, args, download) => {
          if (name === 'ready') sendable = true;
          else if (name === 'disconnected' || name === 'fatal') sendable = false;
          onNetworkEvent?.(instanceId, name, args, download);
        },
      },
      sendBack,
      (control) => controls.push(control),
      destroying.settled(instanceId),
    );
    return () => {
      sendable = false;
      destroying.track(instanceId, session.stop());
    };
  });
  return { logic, settled: (instanceId) => destroying.settled(instanceId), settledAll: () => destroying.settledAll() };
}

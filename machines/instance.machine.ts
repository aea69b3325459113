/**
 * The connection lifecycle of one instance (one linked number): the single definition of its states.
 *
 * Pure statechart: no I/O, no wall clock. Effects come from what the runtime provides with
 * `instanceMachine.provide({ actors: { session }, actions: { notify, trace } })`; every timer is an XState
 * `after` (or delayed `raise`) so the actor's clock drives it (`createActor(machine, { clock })`).
 *
 * INPUT (`InstanceInput`): `instanceId` plus optional policy numbers (defaults in `DEFAULT_POLICY`):
 *   backoff `{baseMs, maxMs, factor, jitter}`, quarantine `{maxFailures, windowMs}`, `orderedRestartHardMs`
 *   (ORDERED_RESTART_HARD_MS), `expectedDowntimeMs`, `restartDelayMs`, `startTimeoutMs`, `stableMs`,
 *   `logoutTimeoutMs`, and `seed` for the jitter (default: derived from instanceId, so instances that fail
 *   together spread out; pass a random seed for a different spread per process).
 *
 * EVENTS the runtime sends (`OperatorEvent`): `ORDERED_RESTART {reason?}` (operator restart; the only way from
 * `quarantined` or `loggedOut` back to a session), `LOGOUT` (unlink the number; from any state but `stopped`),
 * `STOP` (final; the session is destroyed, the link kept), `REQUEST_PAIRING_CODE {phoneNumber}` (forwarded to
 * the session while initializing or waiting_qr; the code comes back as a `code` event).
 * EVENTS the session actor sends (`SessionEvent`, see src/actors/session.ts): the driver's lifecycle events
 * (`qr`, `code`, `authenticated`, `ready`, `auth_failure`, `disconnected`, `change_state`, `loading_screen`,
 * `browser_health`, `fatal`) each stamped `at` (unix ms), plus `SESSION_FAILED`, `LOGGED_OUT`, `LOGOUT_FAILED`,
 * `PAIRING_CODE_FAILED`. COMMANDS the machine sends to the session (child id `session`): `SessionCommand`.
 *
 * OBSERVE a snapshot with:
 *   - `instanceStatus(snapshot)`: the SPEC.md status value (from each state's `meta.status`).
 *   - tags: exactly one health tag per state, `online | offline | starting | degraded | quarantined`
 *     (`healthCounts(snapshots)` builds the /health counts), plus `paused` while an ordered restart holds
 *     `/api/v2/*` (answer `503 QUEUE_PAUSED`; v1 waits for `connected`).
 *   - `currentQr(snapshot)` for `/api/qr`; `summarize(snapshot)` for `/debug/actors` (no QR, no pairing code).
 *   - context: `phoneNumber`, `browser {alive, failStreak, lastOkAt}` for `/api/status`.
 * ACTIONS to provide: `notify(NotifyParams)`: webhook-worthy lifecycle events with DESIGN.md payloads (`qr` and
 * `code` carry secrets: webhook only, never a log line); a session failure is notified as `disconnected` with a
 * reason code (`FailureReason`). `trace(TraceParams)`: operational facts for the log (failure details, backoff,
 * quarantine, pause end). Both default to no-ops.
 *
 * WIRING (see src/actors/session.ts):
 *   const sessions = createSessionLogic({ driverFactory, driverOptions, clock, onNetworkEvent });
 *   const actor = createActor(
 *     instanceMachine.provide({ actors: { session: sessions.logic }, actions: { notify: ({ context }, p) => …, trace: … } }),
 *     { input: { instanceId, orderedRestartHardMs }, clock },
 *   );
 *
 * Status of internal states: `backoff` is `error` (restart in progress); `restarting` is `initializing`;
 * `quarantined`, `loggingOut`, `loggedOut` and `stopped` are `disconnected`.
 */
import { assign, enqueueActions, raise, sendTo, setup } from 'xstate';
import {
  LINK_LOST_REASONS,
  backoffDelayMs,
  nextRandom,
  seedFrom,
  resolvePolicy,
  failureOf,
  absorb,
  LC,
  notifyDisconnected,
  idleSession,
  type InstanceStatus,
  type InstanceTag,
  type InstanceInput,
  type InstanceContext,
  type InstanceEvent,
  type NotifyParams,
  type TraceParams,
} from './instance.types.js';

export * from './instance.types.js';

export const instanceMachine = setup({
  types: {
    context: {} as InstanceContext,
    events: {} as InstanceEvent,
    input: {} as InstanceInput,
    tags: {} as InstanceTag,
    meta: {} as { status?: InstanceStatus },
  },
  actors: { session: idleSession },
  actions: {
    notify: (_, _params: NotifyParams) => {},
    trace: (_, _params: TraceParams) => {},
    absorb: assign(({ context, event }) => absorb(context, event)),
    recordFailure: assign(({ context, event }) => {
      const { reason, detail, at } = failureOf(event);
      const id = context.failureSeq + 1;
      return {
        failureSeq: id,
        recentFailures: [...context.recentFailures, id],
        browser: { ...context.browser, alive: false, failStreak: context.browser.failStreak + 1 },
        lastError: { reason, detail, at },
      };
    }),
    expireFailure: assign(({ context, event }) =>
      event.type === 'FAILURE_EXPIRED' ? { recentFailures: context.recentFailures.filter((id) => id !== event.failureId) } : {},
    ),
    planBackoff: assign(({ context }) => {
      const [r, rng] = nextRandom(context.rng);
      return { rng, backoffMs: backoffDelayMs(context.browser.failStreak, context.policy.backoff, r) };
    }),
    resetFailStreak: assign(({ context }) => ({ browser: { ...context.browser, failStreak: 0 } })),
    releaseQuarantine: assign(({ context }) => ({ recentFailures: [], browser: { ...context.browser, failStreak: 0 } })),
    sessionGone: assign(({ context }) => ({ browser: { ...context.browser, alive: false }, loading: null })),
    noteRestart: assign(({ context, event }) => ({
      lastRestart: {
        reason: (event.type === 'ORDERED_RESTART' && event.reason) || 'operator',
        count: (context.lastRestart?.count ?? 0) + 1,
      },
    })),
    noteLogoutFailure: assign(({ event }) =>
      event.type === 'LOGOUT_FAILED' ? { lastError: { reason: 'LOGOUT_FAILED' as const, detail: event.message, at: event.at } } : {},
    ),
  },
  guards: {
    linkLost: ({ event }) => event.type === 'disconnected' && LINK_LOST_REASONS.includes(event.reason),
    browserDead: ({ event }) => event.type === 'browser_health' && !event.health.alive,
    tooManyFailures: ({ context }) => context.recentFailures.length >= context.policy.quarantine.maxFailures,
  },
  delays: {
    backoff: ({ context }) => context.backoffMs,
    quarantineWindow: ({ context }) => context.policy.quarantine.windowMs,
    startTimeout: ({ context }) => context.policy.startTimeoutMs,
    stable: ({ context }) => context.policy.stableMs,
    restartDelay: ({ context }) => context.policy.restartDelayMs,
    logoutTimeout: ({ context }) => context.policy.logoutTimeoutMs,
    orderedRestartHard: ({ context }) => context.policy.orderedRestartHardMs,
  },
}).createMachine({
  id: 'instance',
  description: 'The connection lifecycle of one instance (one linked number) and the v2 pause of an ordered restart.',
  context: ({ input }) => ({
    instanceId: input.instanceId,
    policy: resolvePolicy(input),
    phoneNumber: null,
    wid: null,
    browser: { alive: false, failStreak: 0, lastOkAt: 0 },
    probeFailStreak: 0,
    qr: null,
    pairingCode: null,
    waState: null,
    loading: null,
    lastError: null,
    lastDisconnect: null,
    recentFailures: [],
    failureSeq: 0,
    backoffMs: 0,
    rng: (input.seed ?? seedFrom(input.instanceId)) >>> 0,
    lastRestart: null,
  }),
  initial: 'active',
  states: {
    active: {
      description: 'Two regions: the connection lifecycle, and whether an ordered restart holds /api/v2/*.',
      type: 'parallel',
      on: {
        STOP: '#instance.stopped',
        FAILURE_EXPIRED: { actions: 'expireFailure' },
      },
      states: {
        lifecycle: {
          description: 'The session and its recovery.',
          initial: 'running',
          states: {
            running: {
              description: 'A session (driver) is alive: the child actor `session`.',
              invoke: { id: 'session', src: 'session', input: ({ context }) => ({ instanceId: context.instanceId }) },
              exit: 'sessionGone',
              initial: 'connection',
              on: {
                fatal: `${LC}.failed`,
                SESSION_FAILED: `${LC}.failed`,
                browser_health: [{ guard: 'browserDead', target: `${LC}.failed` }, { actions: 'absorb' }],
                change_state: {
                  actions: ['absorb', { type: 'notify', params: ({ event }) => ({ event: 'change_state', data: { state: event.state } }) }],
                },
                loading_screen: {
                  actions: [
                    'absorb',
                    {
                      type: 'notify',
                      params: ({ event }) => ({ event: 'loading_screen', data: { percent: event.percent, message: event.message } }),
                    },
                  ],
                },
                ORDERED_RESTART: `${LC}.restarting`,
                LOGOUT: '.loggingOut',
              },
              states: {
                connection: {
                  description: 'Progress of the running session towards connected; driver lifecycle events move it.',
                  initial: 'initializing',
                  on: {
                    qr: {
                      target: '.waiting_qr',
                      actions: ['absorb', { type: 'notify', params: ({ event }) => ({ event: 'qr', data: { qr: event.qr } }) }],
                    },
                    code: {
                      target: '.waiting_qr',
                      actions: ['absorb', { type: 'notify', params: ({ event }) => ({ event: 'code', data: { code: event.code } }) }],
                    },
                    authenticated: {
                      target: '.authenticated',
                      actions: ['absorb', { type: 'notify', params: { event: 'authenticated', data: {} } }],
                    },
                    ready: {
                      target: '.connected',
                      actions: ['absorb', { type: 'notify', params: ({ context }) => ({ event: 'ready', data: { phoneNumber: context.phoneNumber } }) }],
                    },
                    auth_failure: {
                      target: `${LC}.loggedOut`,
                      actions: ['absorb', { type: 'notify', params: ({ event }) => ({ event: 'auth_failure', data: { message: event.message } }) }],
                    },
                    disconnected: [
                      { guard: 'linkLost', target: `${LC}.loggedOut`, actions: ['absorb', notifyDisconnected] },
                      { target: `${LC}.failed`, actions: ['absorb', notifyDisconnected] },
                    ],
                    PAIRING_CODE_FAILED: {
                      actions: { type: 'trace', params: ({ event }) => ({ kind: 'pairing_code_failed', detail: event.message }) },
                    },
                  },
                  states: {
                    initializing: {
                      description: 'The session is starting (browser, stored link).',
                      meta: { status: 'initializing' },
                      tags: 'starting',
                      after: { startTimeout: `${LC}.failed` },
                      on: { REQUEST_PAIRING_CODE: { actions: sendTo('session', ({ event }) => event) } },
                    },
                    waiting_qr: {
                      description: 'Not linked: a QR (or pairing code) waits for the phone; no timeout, a human scans.',
                      meta: { status: 'waiting_qr' },
                      tags: 'starting',
                      on: { REQUEST_PAIRING_CODE: { actions: sendTo('session', ({ event }) => event) } },
                    },
                    authenticated: {
                      description: 'Signed in, loading chats; not ready to send yet.',
                      meta: { status: 'authenticated' },
                      tags: 'starting',
                      after: { startTimeout: `${LC}.failed` },
                    },
                    connected: {
                      description: 'Ready to send. Staying connected for `stable` resets the failure streak.',
                      meta: { status: 'connected' },
                      tags: 'online',
                      entry: raise({ type: 'RESTART_SETTLED' }),
                      after: { stable: { actions: 'resetFailStreak' } },
                    },
                  },
                },
                loggingOut: {
                  description: 'The session unlinks the number; session failures here just end in loggedOut.',
                  meta: { status: 'disconnected' },
                  tags: 'offline',
                  entry: sendTo('session', { type: 'LOGOUT' }),
                  on: {
                    LOGGED_OUT: `${LC}.loggedOut`,
                    LOGOUT_FAILED: {
                      target: `${LC}.loggedOut`,
                      actions: ['noteLogoutFailure', { type: 'trace', params: ({ event }) => ({ kind: 'logout_failed', detail: event.message }) }],
                    },
                    fatal: `${LC}.loggedOut`,
                    SESSION_FAILED: `${LC}.loggedOut`,
                    browser_health: [{ guard: 'browserDead', target: `${LC}.loggedOut` }, { actions: 'absorb' }],
                    ORDERED_RESTART: {},
                    LOGOUT: {},
                  },
                  after: { logoutTimeout: `${LC}.loggedOut` },
                },
              },
            },
            failed: {
              description: 'Transient: counts the failure, then quarantine or backoff.',
              meta: { status: 'error' },
              tags: 'degraded',
              entry: [
                'recordFailure',
                raise(({ context }) => ({ type: 'FAILURE_EXPIRED', failureId: context.failureSeq }), { delay: 'quarantineWindow' }),
                {
                  type: 'trace',
                  params: ({ context, event }) => {
                    const { reason, detail } = failureOf(event);
                    const recentFailures = context.recentFailures.length;
                    return { kind: 'failure', reason, detail, failStreak: context.browser.failStreak, recentFailures };
                  },
                },
                // A driver `disconnected` was notified with its own reason on the way in.
                enqueueActions(({ event, enqueue }) => {
                  if (event.type !== 'disconnected') {
                    enqueue({ type: 'notify', params: { event: 'disconnected', data: { reason: failureOf(event).reason } } });
                  }
                }),
              ],
              always: [{ guard: 'tooManyFailures', target: 'quarantined' }, { target: 'backoff' }],
            },
            backoff: {
              description: 'Error, restart in progress: waits an exponential, jittered delay, then starts a new session.',
              meta: { status: 'error' },
              tags: 'degraded',
              entry: [
                'planBackoff',
                { type: 'trace', params: ({ context }) => ({ kind: 'backoff', attempt: context.browser.failStreak, delayMs: context.backoffMs }) },
              ],
              after: { backoff: 'running' },
              on: { ORDERED_RESTART: 'restarting', LOGOUT: 'running.loggingOut' },
            },
            quarantined: {
              description: 'Too many failures in the window: no automatic restart; only the operator restart leaves.',
              meta: { status: 'disconnected' },
              tags: 'quarantined',
              entry: [
                raise({ type: 'RESTART_SETTLED' }),
                {
                  type: 'trace',
                  params: ({ context }) => ({
                    kind: 'quarantined',
                    recentFailures: context.recentFailures.length,
                    windowMs: context.policy.quarantine.windowMs,
                  }),
                },
              ],
              on: {
                ORDERED_RESTART: { target: 'restarting', actions: 'releaseQuarantine' },
                LOGOUT: 'running.loggingOut',
              },
            },
            restarting: {
              description: 'Ordered restart: the old session is stopped; a new one starts after `restartDelay`.',
              meta: { status: 'initializing' },
              tags: 'starting',
              entry: [
                'noteRestart',
                {
                  type: 'notify',
                  params: ({ context }) => ({
                    event: 'instance_restarting',
                    data: { reason: context.lastRestart?.reason ?? 'operator', expectedDowntimeMs: context.policy.expectedDowntimeMs },
                  }),
                },
              ],
              after: { restartDelay: 'running' },
              on: { LOGOUT: 'running.loggingOut' },
            },
            loggedOut: {
              description: 'No link (logged out, unlinked on the phone, auth failure): a restart shows a new QR.',
              meta: { status: 'disconnected' },
              tags: 'offline',
              entry: [raise({ type: 'RESTART_SETTLED' }), assign({ qr: null, pairingCode: null })],
              on: { ORDERED_RESTART: 'restarting' },
            },
          },
        },
        pause: {
          description: 'The v2 pause of an ordered restart.',
          initial: 'idle',
          states: {
            idle: { description: 'Not paused.', on: { ORDERED_RESTART: 'paused' } },
            paused: {
              description: '/api/v2/* answers 503 QUEUE_PAUSED until connected, loggedOut, quarantined or the ceiling.',
              tags: 'paused',
              on: {
                RESTART_SETTLED: { target: 'idle', actions: { type: 'trace', params: { kind: 'pause_ended', by: 'settled' } } },
              },
              after: {
                orderedRestartHard: { target: 'idle', actions: { type: 'trace', params: { kind: 'pause_ended', by: 'ceiling' } } },
              },
            },
          },
        },
      },
    },
    stopped: {
      description: 'Final: the session is destroyed (the link is kept).',
      type: 'final',
      meta: { status: 'disconnected' },
      tags: 'offline',
    },
  },
});

// Reading a snapshot (status, health tags, QR, secret-free summary) lives beside the machine.
export * from './instance.snapshot.js';

/**
 * The instance actor: one instance (one linked number), the single definition of its connection lifecycle,
 * the owner of its children and the router of what its port is asked.
 *
 * Pure statechart (setup, children and actions in instance.setup.ts): no I/O, no wall clock; every timer is an
 * XState `after` (or delayed `raise`) so the actor's clock drives it. src/actors/system.ts provides the children.
 *
 * CHILDREN: `session` (invoked while a session runs; the only holder of the driver), and for the instance's whole
 * life `planner` (the queue), `dispatcher` (one claimed job at a time, at most once) and `webhooks` (the sender).
 * ASKS of the port (`ASK {askId, replyTo, ask}`, src/actors/port.ts) are routed by instance.asks.ts: `view` is
 * answered here, `network` goes to the session while connected (else 503 INSTANCE_OFFLINE), queue asks go to the
 * planner, operator asks become the events below (a port in the instance's own process serves the views and
 * the planner's asks without the event, by the same routing: src/actors/local-port.ts). The planner's `DISPATCH` goes to the dispatcher, the
 * dispatcher's `CALL` to the session (or is answered `not_sent`). Entering and leaving `connected` tells the
 * planner whether it may arm due slots (`SENDABLE`).
 *
 * INPUT (`InstanceInput`): `instanceId` plus optional policy numbers (defaults in `DEFAULT_POLICY`): backoff,
 * quarantine, `orderedRestartHardMs`, `expectedDowntimeMs`, `restartDelayMs`, `startTimeoutMs`, `stableMs`,
 * `logoutTimeoutMs`, and `seed` for the jitter (default: derived from instanceId).
 *
 * OPERATOR EVENTS: `ORDERED_RESTART {reason?}` (the only way from `quarantined`, `displaced` or `loggedOut` back to a
 * session),
 * `LOGOUT`, `STOP` (final; the link kept), `REQUEST_PAIRING_CODE {phoneNumber}`. SESSION EVENTS: the driver's
 * lifecycle events each stamped `at`, plus `SESSION_FAILED`, `LOGGED_OUT`, `LOGOUT_FAILED`, `PAIRING_CODE_FAILED`.
 *
 * OBSERVE a snapshot with instance.snapshot.ts: `instanceStatus`, one health tag per state (`online | offline |
 * starting | degraded | quarantined`) plus `paused` during an ordered restart (`/api/v2/*` answers 503
 * QUEUE_PAUSED), `viewOf`, `currentQr`, `summarize` (no QR, no pairing code).
 * ACTIONS provided by the system: `notify(NotifyParams)` (webhook-worthy lifecycle events; `qr` and `code` carry
 * secrets: webhook only, never a log line) and `trace(TraceParams)` (operational facts for the log).
 *
 * Status of internal states: `backoff` is `error` (restart in progress); `restarting` is `initializing`;
 * `quarantined`, `displaced`, `loggingOut`, `loggedOut` and `stopped` are `disconnected`.
 */
import { assign, enqueueActions, raise, sendTo } from 'xstate';
import { failureOf, LC, notifyDisconnected, notifyLoggedOut, resolvePolicy, seedFrom, type InstanceContext } from './instance.types.js';
import { instanceSetup } from './instance.setup.js';

export * from './instance.types.js';

export const instanceMachine = instanceSetup.createMachine({
  id: 'instance',
  description: 'The connection lifecycle of one instance (one linked number) and the v2 pause of an ordered restart.',
  context: ({ input }) => ({
    instanceId: input.instanceId,
    policy: resolvePolicy(input),
    queueMode: 'pg',
    phoneNumber: null,
    wid: null,
    browser: { alive: false, failStreak: 0, lastOkAt: 0 },
    probeFailStreak: 0,
    qr: null,
    pairingCode: null,
    pairingCodeFailed: null,
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
      invoke: [
        { id: 'planner', src: 'planner', input: ({ context }: { context: InstanceContext }) => ({ instanceId: context.instanceId }) },
        { id: 'dispatcher', src: 'dispatcher', input: ({ context }: { context: InstanceContext }) => ({ instanceId: context.instanceId }) },
        { id: 'webhooks', src: 'webhooks', input: ({ context }: { context: InstanceContext }) => ({ instanceId: context.instanceId }) },
      ],
      on: {
        STOP: '#instance.stopped',
        FAILURE_EXPIRED: { actions: 'expireFailure' },
        ASK: { actions: 'routeAsk' },
        CALL: { actions: 'routeCall' },
        DISPATCH: { actions: 'toDispatcher' },
        STORE: { actions: 'toPlanner' },
        QUEUE_MODE: { actions: 'noteQueueMode' },
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
                LOGOUT: { target: '.loggingOut', actions: notifyLoggedOut },
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
                      { guard: 'displaced', target: `${LC}.displaced`, actions: ['absorb', notifyDisconnected] },
                      { target: `${LC}.failed`, actions: ['absorb', notifyDisconnected] },
                    ],
                    PAIRING_CODE_FAILED: {
                      actions: [
                        assign({ pairingCodeFailed: ({ event }) => ({ code: event.code, message: event.message, askId: event.askId }) }),
                        { type: 'trace', params: ({ event }) => ({ kind: 'pairing_code_failed', detail: event.message }) },
                      ],
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
                      on: {
                        REQUEST_PAIRING_CODE: { actions: sendTo('session', ({ event }) => event) },
                        // nothing is linked yet: nothing to tell
                        LOGOUT: `${LC}.running.loggingOut`,
                      },
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
                      entry: [raise({ type: 'RESTART_SETTLED' }), { type: 'sendable', params: { on: true } }],
                      exit: { type: 'sendable', params: { on: false } },
                      initial: 'settling',
                      states: {
                        settling: {
                          description: 'Failures are still counted: after `stable` connected the streak is reset.',
                          // with no streak to reset no timer waits (ten thousand pending timers slow every actor's stop)
                          always: { guard: 'noFailStreak', target: 'steady' },
                          after: { stable: { target: 'steady', actions: 'resetFailStreak' } },
                        },
                        steady: { description: 'Connected with no failure streak.' },
                      },
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
                    // the session started only to log out reports its start: not the instance's state
                    change_state: { actions: 'absorb' },
                    loading_screen: { actions: 'absorb' },
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
              on: { ORDERED_RESTART: 'restarting', LOGOUT: { target: 'running.loggingOut', actions: notifyLoggedOut } },
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
                LOGOUT: { target: 'running.loggingOut', actions: notifyLoggedOut },
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
              on: { LOGOUT: { target: 'running.loggingOut', actions: notifyLoggedOut } },
            },
            displaced: {
              description: 'Another client took the session over (CONFLICT); the link is kept. No automatic restart, which would take it back; only the operator restart leaves.',
              meta: { status: 'disconnected' },
              tags: 'offline',
              entry: raise({ type: 'RESTART_SETTLED' }),
              on: { ORDERED_RESTART: 'restarting', LOGOUT: { target: 'running.loggingOut', actions: notifyLoggedOut } },
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

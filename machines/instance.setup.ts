/**
 * The instance machine's setup (machines/instance.machine.ts builds its states on it): types, the child actors
 * it invokes (placeholders here, provided by src/actors/system.ts), its actions, guards and delays. Pure: no I/O;
 * actions only assign, raise and send to actors.
 *
 * Children: `session` (the only holder of the driver; invoked while a session runs), and for the instance's whole
 * life `planner` (the queue: acceptance, plan, timer, outcomes), `dispatcher` (sends one claimed job at most once)
 * and `webhooks` (the webhook sender). The port's asks are routed by `routeAsk` (machines/instance.asks.ts).
 */
import { assign, enqueueActions, fromCallback, setup, type AnyActorLogic } from 'xstate';
import {
  LINK_LOST_REASONS,
  DISPLACED_REASONS,
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

import { noSession, reply, routeAsk } from './instance.asks.js';
import type { InstanceSnapshot } from './instance.snapshot.js';

/** A child that does nothing (tests that drive the machine alone; the system provides the real ones). */
const idle: AnyActorLogic = fromCallback(() => undefined);

export const instanceSetup = setup({
  types: {
    context: {} as InstanceContext,
    events: {} as InstanceEvent,
    input: {} as InstanceInput,
    tags: {} as InstanceTag,
    meta: {} as { status?: InstanceStatus },
  },
  actors: { session: idleSession, planner: idle, dispatcher: idle, webhooks: idle },
  actions: {
    notify: (_, _params: NotifyParams) => {},
    trace: (_, _params: TraceParams) => {},
    absorb: assign(({ context, event }) => absorb(context, event)),
    /** an ask of the port: answered here, raised as an operator event, or passed to the child that serves it */
    routeAsk: enqueueActions(({ event, enqueue, self, system }) => {
      if (event.type !== 'ASK') return;
      const snapshot = self.getSnapshot() as InstanceSnapshot & { children: Record<string, unknown> };
      const route = routeAsk(event.ask, snapshot, snapshot.children.session !== undefined);
      const replyTo = system.get(event.replyTo);
      if ('to' in route) enqueue.sendTo(route.to, event);
      else if ('raise' in route) {
        // a pairing code's request names its ask: the driver's failure of it answers that ask only
        enqueue.raise(route.raise.type === 'REQUEST_PAIRING_CODE' ? { ...route.raise, askId: event.askId } : route.raise);
        if (replyTo) enqueue.sendTo(replyTo, reply(event.askId, { ok: true, value: null }));
      } else if (replyTo) enqueue.sendTo(replyTo, reply(event.askId, route.reply));
    }),
    /** the dispatcher's call goes to the running session; with none it never reaches the network */
    routeCall: enqueueActions(({ event, enqueue, self, system }) => {
      if (event.type !== 'CALL') return;
      if ((self.getSnapshot() as { children: Record<string, unknown> }).children.session !== undefined) return enqueue.sendTo('session', event);
      const replyTo = system.get(event.replyTo);
      if (replyTo) enqueue.sendTo(replyTo, reply(event.askId, { ok: true, value: noSession }));
    }),
    toDispatcher: enqueueActions(({ event, enqueue }) => {
      if (event.type === 'DISPATCH') enqueue.sendTo('dispatcher', event);
    }),
    toPlanner: enqueueActions(({ event, enqueue }) => {
      if (event.type === 'STORE') enqueue.sendTo('planner', event);
    }),
    sendable: enqueueActions(({ enqueue }, params: { on: boolean }) => enqueue.sendTo('planner', { type: 'SENDABLE', on: params.on })),
    noteQueueMode: assign(({ event }) => (event.type === 'QUEUE_MODE' ? { queueMode: event.mode } : {})),
    recordFailure: assign(({ context, event }) => {
      const { reason, detail, at } = failureOf(event);
      const id = context.failureSeq + 1;
      // A start that never reached the network (the separate sandbox away) backs off like any failure, up to the
      // backoff's ceiling, but does not count towards quarantine: found from the outside, a 15 s outage of the
      // sandbox process quarantined every instance of every node (1, 2, 4, 8 s of backoff spend five failures
      // in 15 s) and each needed an operator restart once it was back.
      const unreachable = event.type === 'SESSION_FAILED' && event.unreachable === true;
      return {
        failureSeq: id,
        recentFailures: unreachable ? context.recentFailures : [...context.recentFailures, id],
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
    displaced: ({ event }) => event.type === 'disconnected' && DISPLACED_REASONS.includes(event.reason),
    browserDead: ({ event }) => event.type === 'browser_health' && !event.health.alive,
    tooManyFailures: ({ context }) => context.recentFailures.length >= context.policy.quarantine.maxFailures,
    noFailStreak: ({ context }) => context.browser.failStreak === 0,
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
});

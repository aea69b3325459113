/**
 * The webhook sender as an XState actor: a `fromCallback` wrapper around src/webhooks/deliver.ts's
 * WebhookSender, spawned by the instance actor (one per instance). It receives `webhook.notify` after a
 * commit that enqueued an event; its own Clock timer handles retries, and a shared poll is the fallback.
 *
 * `createWebhookSenders` builds the logic once per process with the shared pieces (pool, clock, keep-alive
 * transport) and keeps a registry of the live senders, so that code outside the actor tree (an admin route
 * that enqueued a `test` event) can wake one by instance id, and shutdown can wait for in-flight deliveries
 * to be persisted (a callback actor's cleanup cannot be awaited).
 *
 * The fallback poll is shared: one query every `pollMs` finds which of this node's instances have pending
 * rows and wakes those senders, instead of one query per instance. It catches events nobody notified about
 * (written by another node, a lost wake-up) and resumes senders after the store comes back. A newly spawned
 * sender is resumed the same way (one poll, right away, for all spawned at one moment): what an earlier owner
 * left pending is delivered at once, and the many senders with nothing pending cost no query each.
 */
import { fromCallback, type CallbackActorLogic } from 'xstate';
import type { Clock, TimerHandle } from '../clock.js';
import type { Logger } from '../log.js';
import type { Queryable } from '../store/pool.js';
import type { Resolver } from '../media/ssrf.js';
import { DEFAULT_POLL_MS, WebhookSender, type WebhookSenderOptions } from '../webhooks/deliver.js';
import { createWebhookTransport, type WebhookTransport } from '../webhooks/transport.js';

export type WebhookSenderEvent = { type: 'webhook.notify' };
export interface WebhookSenderInput {
  instanceId: string;
}

export interface WebhookSendersDeps {
  db: Queryable;
  clock: Clock;
  log?: Logger;
  /** WEBHOOK_ALLOW_PRIVATE */
  allowPrivate?: boolean;
  resolver?: Resolver;
  /** tuning and tests: timeouts, backoff, batch size */
  options?: Pick<WebhookSenderOptions, 'timeoutMs' | 'backoffMs' | 'batchSize' | 'metrics'>;
  /** shared fallback poll interval (default 2 s) */
  pollMs?: number;
  /** a transport to share (default: one created here, closed by `close()`) */
  transport?: WebhookTransport;
}

export interface WebhookSenders {
  /** spawn one per instance: `spawnChild(senders.logic, { id: 'webhookSender', input: { instanceId } })` */
  logic: CallbackActorLogic<WebhookSenderEvent, WebhookSenderInput>;
  /** wake the live sender of an instance on this node; false when it has none here (its poll still runs elsewhere) */
  notify(instanceId: string): boolean;
  /** the instance's webhook was replaced, disabled or removed: its live sender on this node reads it again before its next attempt */
  receiverChanged(instanceId: string): void;
  /** the live sender of an instance (tests, /debug/actors) */
  get(instanceId: string): WebhookSender | undefined;
  /** wait until every stopped sender has persisted its results, then close pooled connections */
  close(): Promise<void>;
}

export function createWebhookSenders(deps: WebhookSendersDeps): WebhookSenders {
  const transport = deps.transport ?? createWebhookTransport({ allowPrivate: deps.allowPrivate, resolver: deps.resolver });
  const live = new Map<string, WebhookSender>();
  const stopping = new Set<Promise<void>>();
  const pollMs = deps.pollMs ?? DEFAULT_POLL_MS;
  let pollTimer: TimerHandle | null = null;
  let polling: Promise<void> | null = null;
  let closed = false;

  const armPoll = () => {
    if (pollTimer === null && !closed && live.size > 0) {
      pollTimer = deps.clock.setTimeout(() => {
        pollTimer = null;
        runPoll();
      }, pollMs);
    }
  };
  // Which instances have pending rows: one query for the whole node (the partial index of pending rows holds
  // few), filtered here to the senders this node runs.
  const poll = async () => {
    try {
      const { rows } = await deps.db.query<{ instance_id: string }>(`SELECT DISTINCT instance_id FROM outbox WHERE state = 'pending'`);
      for (const r of rows) live.get(r.instance_id)?.notify();
    } catch (err) {
      deps.log?.warn({ err }, 'webhook poll failed');
    }
    armPoll();
  };
  const runPoll = () => {
    const p = poll().finally(() => {
      if (polling === p) polling = null;
    });
    polling = p;
  };
  // Senders spawned together (a start-up takes instances in batches) are resumed by one poll right away,
  // instead of each reading its own pending rows: most have none.
  let pollQueued = false;
  const pollSoon = () => {
    if (pollQueued || closed) return;
    pollQueued = true;
    setImmediate(() => {
      pollQueued = false;
      if (!closed) runPoll();
    });
  };

  const logic = fromCallback<WebhookSenderEvent, WebhookSenderInput>(({ input, receive }) => {
    const sender = new WebhookSender({
      ...deps.options,
      instanceId: input.instanceId,
      pollMs: null,
      db: deps.db,
      clock: deps.clock,
      transport,
      log: deps.log?.child({ actor: 'webhookSender', instanceId: input.instanceId }),
    });
    live.set(input.instanceId, sender);
    pollSoon();
    receive((event) => {
      if (event.type === 'webhook.notify') sender.notify();
    });
    return () => {
      if (live.get(input.instanceId) === sender) live.delete(input.instanceId);
      const p = sender.stop().finally(() => stopping.delete(p));
      stopping.add(p);
    };
  });

  return {
    logic,
    notify(instanceId) {
      const s = live.get(instanceId);
      s?.notify();
      return s !== undefined;
    },
    receiverChanged: (instanceId) => live.get(instanceId)?.receiverChanged(),
    get: (instanceId) => live.get(instanceId),
    async close() {
      closed = true;
      if (pollTimer !== null) deps.clock.clearTimeout(pollTimer);
      pollTimer = null;
      await polling;
      await Promise.all([...live.values()].map((s) => s.stop()));
      live.clear();
      await Promise.all([...stopping]);
      if (!deps.transport) transport.close();
    },
  };
}

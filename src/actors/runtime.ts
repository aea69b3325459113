/**
 * The actor system of one gateway process: the supervisor (machines/supervisor.machine.ts) with, per instance,
 * the instance actor (machines/instance.machine.ts + the session actor), the queue worker and the webhook
 * sender. Routes reach an instance through `handle(id)` (src/actors/handle.ts).
 */
import { createActor, fromCallback, type Actor, type AnyActorRef, type CallbackActorLogic, type InspectionEvent } from 'xstate';
import QRCode from 'qrcode';
import { supervisorMachine, childIds } from '../../machines/supervisor.machine.js';
import {
  instanceMachine, instanceStatus, isPaused, currentQr, healthCounts, summarize, type InstanceSnapshot,
  type NotifyParams, type TraceParams, type HealthCounts, type InstanceInput,
} from '../../machines/instance.machine.js';
import { createSessionLogic, type SessionRuntime } from './session.js';
import { createWebhookSenders, type WebhookSenders } from './webhook-sender.js';
import { raceClock, type Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Pool } from '../store/pool.js';
import type { Instance } from '../store/instances.js';
import { DriverError, type Driver, type DriverFactory } from '../drivers/contract.js';
import { lifecycleCommand, networkCommand, type IncomingCommand, type IncomingEvents } from './network-events.js';
import { DomainError, instanceOffline, instanceTimeout, waCallFailed } from '../errors.js';
import { driverErrorToDomain } from '../drivers/domain-errors.js';
import type { InstanceHandle, InstanceStatusValue, InstanceView } from './handle.js';
import { QueueWorker, type QueueEventSink } from '../queue/worker.js';
import { dispatchJob, type MediaResolver } from '../queue/dispatch.js';
import type { EventBus } from './events.js';
import type { StoreHealth } from '../store/health.js';
import type { DirectOutcome, DirectSend } from '../queue/worker.js';

export interface RuntimeDeps {
  pool: Pool;
  clock: Clock;
  log: Logger;
  /** the driver factory for an instance's driver kind */
  driverFactory: (kind: Instance['driver']) => DriverFactory;
  dataDir: string;
  callTimeoutMs: number;
  maxPending: number;
  orderedRestartHardMs: number;
  events: EventBus;
  resolveMedia: MediaResolver;
  /** the one way out for every network and lifecycle event of an instance (webhooks, statistics) */
  incoming: IncomingEvents;
  webhookAllowPrivate: boolean;
  /** machine policy overrides (tests shorten backoff) */
  instancePolicy?: Record<string, unknown>;
  inspect?: (ev: InspectionEvent) => void;
  store: StoreHealth;
}

type InstanceLogic = ReturnType<typeof instanceMachine.provide>;

/**
 * The supervisor spawns an instance actor with `{instanceId}` only; the gateway's policy (ORDERED_RESTART_HARD_MS,
 * a test's shorter backoff) joins that input here, the instance's own fields winning.
 */
function withInput(logic: InstanceLogic, policy: Partial<InstanceInput>): InstanceLogic {
  const wrapped = Object.create(logic) as InstanceLogic;
  wrapped.getInitialSnapshot = (scope, input) => logic.getInitialSnapshot(scope, { ...policy, ...input } as InstanceInput);
  return wrapped;
}

interface Entry {
  instance: Instance;
  worker: QueueWorker;
  driver: Driver | null;
  /**
   * The driver of a session that reported `ready` and has not since reported `disconnected`/`fatal` nor been
   * stopped: the only one the dispatcher calls. Set and cleared synchronously with the driver's own events, so
   * it is never ahead of the session (the instance machine learns of a teardown a few turns later).
   */
  sendable: Driver | null;
}

/** The active leaf states of a (nested, parallel) state value, as dotted paths without the `active` root. */
export function leafStates(value: unknown, prefix = ''): string[] {
  if (typeof value === 'string') return [`${prefix}${value}`];
  if (!value || typeof value !== 'object') return [];
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) =>
    leafStates(v, prefix === '' && k === 'active' ? '' : `${prefix}${k}.`));
}

export class Runtime {
  private readonly entries = new Map<string, Entry>();
  private readonly sessions: SessionRuntime;
  readonly webhooks: WebhookSenders;
  readonly supervisor: Actor<typeof supervisorMachine>;
  private readonly inspectors = new Set<(ev: InspectionEvent) => void>();

  /** writes every instance's network and lifecycle events (src/actors/network-events.ts) */
  private readonly incoming: Actor<CallbackActorLogic<IncomingCommand>>;

  constructor(private readonly deps: RuntimeDeps) {
    const entries = this.entries;
    const incoming = (this.incoming = createActor(deps.incoming.logic));
    this.sessions = createSessionLogic({
      clock: deps.clock,
      // Track the driver each session builds: the dispatcher and `call` use the live one.
      driverFactory: (opts) => {
        const entry = entries.get(opts.instanceId);
        if (!entry) throw new Error('instance is not registered');
        const driver = deps.driverFactory(entry.instance.driver)(opts);
        entry.driver = driver;
        return driver;
      },
      driverOptions: { dataDir: deps.dataDir, callTimeoutMs: deps.callTimeoutMs },
      onNetworkEvent: (instanceId, name, args, download) => {
        const entry = entries.get(instanceId);
        if (!entry) return;
        if (name === 'ready') {
          entry.sendable = entry.driver;
          // the machine's `ready` may have resumed the queue before this driver could send: due slots were
          // not armed then, so arm them now (resume is idempotent)
          entry.worker.resume();
        } else if (name === 'disconnected' || name === 'fatal') entry.sendable = null;
        incoming.send(networkCommand(entry.instance, name, args, download));
      },
      onSessionStopped: (instanceId, driver) => {
        const entry = entries.get(instanceId);
        if (entry?.sendable === driver) entry.sendable = null;
      },
      onError: (err, where) => deps.log.warn({ err, where }, 'session fault'),
      // whatsapp-web.js emits the raw QR string; the sandbox emits it already rendered as a PNG data URL,
      // which does not fit into another QR code.
      renderQr: (qr) => (qr.startsWith('data:image/png;base64,') ? Promise.resolve(qr) : QRCode.toDataURL(qr, { errorCorrectionLevel: 'M', margin: 2 })),
    });
    this.webhooks = createWebhookSenders({ db: deps.pool, clock: deps.clock, log: deps.log, allowPrivate: deps.webhookAllowPrivate });

    const instanceLogic = withInput(instanceMachine.provide({
      actors: { session: this.sessions.logic },
      actions: {
        notify: ({ context }, params: NotifyParams) => this.onNotify(context.instanceId, params),
        trace: ({ context }, params: TraceParams) => deps.log.info({ instanceId: context.instanceId, ...params }, `instance ${params.kind}`),
      },
    }), { orderedRestartHardMs: deps.orderedRestartHardMs, ...(deps.instancePolicy as Partial<InstanceInput> | undefined) });
    const queueLogic = fromCallback<{ type: string }, { instanceId: string }>(({ input }) => {
      const entry = entries.get(input.instanceId);
      void entry?.worker.start().catch((err: unknown) => deps.log.error({ err, instanceId: input.instanceId }, 'queue failed to start'));
      return () => void entry?.worker.stop();
    });
    this.supervisor = createActor(
      supervisorMachine.provide({
        actors: {
          instance: instanceLogic,
          queue: queueLogic,
          webhooks: this.webhooks.logic,
        },
      }),
      {
        clock: deps.clock,
        systemId: 'supervisor',
        inspect: (ev) => {
          deps.inspect?.(ev);
          for (const f of this.inspectors) f(ev);
        },
      },
    );
  }

  start(): void {
    this.incoming.start();
    this.supervisor.start();
    this.deps.store.onChange((degraded, since) => {
      for (const [id, e] of this.entries) {
        void e.worker.setDegraded(degraded, since).catch((err: unknown) => this.deps.log.warn({ err, instanceId: id }, 'queue recovery failed; staying degraded'));
      }
    });
  }

  /** Send outside the persistent queue (v1 while the queue is `disabled` or `memory-degraded`). */
  async directSend(instanceId: string, req: DirectSend): Promise<DirectOutcome> {
    const entry = this.entries.get(instanceId);
    if (!entry) throw new DomainError('INSTANCE_UNREACHABLE', 'the instance is not running on this gateway');
    return entry.worker.directSend(req, entry.instance.settings.enabled);
  }

  /** Instances whose queue runs from memory right now (`queue.degraded` of /health). */
  degradedCount(): number {
    if (!this.deps.store.degraded) return 0;
    let n = 0;
    for (const e of this.entries.values()) if (e.instance.settings.enabled) n++;
    return n;
  }

  /** Register and spawn the actors of an instance. */
  add(instance: Instance): void {
    if (this.entries.has(instance.id)) return;
    const entry: Entry = { instance, driver: null, sendable: null, worker: null as unknown as QueueWorker };
    const sink: QueueEventSink = {
      emit: (q, event, data) => this.deps.events.emit(q, instance.id, event, data),
      emitMany: (q, items) => this.deps.events.emitMany(q, instance.id, items),
      flushed: () => this.webhooks.notify(instance.id),
    };
    entry.worker = new QueueWorker({
      instanceId: instance.id,
      pool: this.deps.pool,
      clock: this.deps.clock,
      log: this.deps.log.child({ instanceId: instance.id, actor: 'queue' }),
      settings: () => entry.instance.settings,
      maxPending: this.deps.maxPending,
      events: sink,
      dispatcher: {
        // claims only while the session can take the call: connected, and its driver not torn down
        connected: () => entry.sendable !== null && this.isConnected(instance.id),
        send: (job) =>
          dispatchJob(job, {
            clock: this.deps.clock,
            driver: () => entry.sendable,
            callTimeoutMs: this.deps.callTimeoutMs,
            resolveMedia: this.deps.resolveMedia,
          }),
      },
    });
    this.entries.set(instance.id, entry);
    if (this.deps.store.degraded) void entry.worker.setDegraded(true, this.deps.store.since ?? this.deps.clock.now());
    this.supervisor.send({ type: 'INSTANCE.START', instanceId: instance.id });
  }

  /** Stop and forget the actors of an instance. */
  async remove(instanceId: string): Promise<void> {
    const entry = this.entries.get(instanceId);
    if (!entry) return;
    await entry.worker.stop();
    this.supervisor.send({ type: 'INSTANCE.STOP', instanceId });
    await this.sessions.settled(instanceId);
    this.entries.delete(instanceId);
  }

  /** A settings change: the queue re-plans when a limit moved (event `queue.replanned`). */
  async update(instance: Instance, replan: boolean): Promise<void> {
    const entry = this.entries.get(instance.id);
    if (!entry) return;
    entry.instance = instance;
    if (replan) await entry.worker.replan('limits_changed');
  }

  instanceActor(instanceId: string): AnyActorRef | undefined {
    return this.supervisor.system.get(childIds(instanceId).instance);
  }

  private snapshot(instanceId: string): InstanceSnapshot | null {
    const ref = this.instanceActor(instanceId);
    return ref ? (ref.getSnapshot() as InstanceSnapshot) : null;
  }

  isConnected(instanceId: string): boolean {
    const s = this.snapshot(instanceId);
    return s !== null && instanceStatus(s) === 'connected';
  }

  restart(instanceId: string, reason: string): boolean {
    const ref = this.instanceActor(instanceId);
    ref?.send({ type: 'ORDERED_RESTART', reason });
    return ref !== undefined;
  }

  logout(instanceId: string): boolean {
    const ref = this.instanceActor(instanceId);
    ref?.send({ type: 'LOGOUT' });
    return ref !== undefined;
  }

  requestPairingCode(instanceId: string, phoneNumber: string): boolean {
    const ref = this.instanceActor(instanceId);
    ref?.send({ type: 'REQUEST_PAIRING_CODE', phoneNumber });
    return ref !== undefined;
  }

  worker(instanceId: string): QueueWorker | undefined {
    return this.entries.get(instanceId)?.worker;
  }

  instance(instanceId: string): Instance | undefined {
    return this.entries.get(instanceId)?.instance;
  }

  health(): HealthCounts {
    const snaps: InstanceSnapshot[] = [];
    for (const id of this.entries.keys()) {
      const s = this.snapshot(id);
      if (s) snaps.push(s);
    }
    return healthCounts(snaps);
  }

  view(instanceId: string): InstanceView {
    const s = this.snapshot(instanceId);
    const entry = this.entries.get(instanceId);
    if (!s || !entry) {
      return {
        status: 'disconnected', connected: false, phoneNumber: entry?.instance.phoneNumber ?? null,
        browser: { alive: false, failStreak: 0, lastOkAt: 0 }, qr: null, detail: 'stopped', paused: false,
        quarantined: false, lastError: null,
      };
    }
    const status = instanceStatus(s) as InstanceStatusValue;
    const { browser } = s.context;
    return {
      status,
      connected: status === 'connected',
      phoneNumber: s.context.phoneNumber ?? entry.instance.phoneNumber,
      browser: { alive: browser.alive, failStreak: browser.failStreak, lastOkAt: browser.lastOkAt },
      qr: currentQr(s)?.dataUrl ?? null,
      detail: leafStates(s.value).join(', '),
      paused: isPaused(s),
      quarantined: s.hasTag('quarantined'),
      lastError: s.context.lastError ? `${s.context.lastError.reason}: ${s.context.lastError.detail}` : null,
    };
  }

  handle(instanceId: string): InstanceHandle | null {
    const entry = this.entries.get(instanceId);
    if (!entry) return null;
    const rt = this;
    return {
      id: instanceId,
      get instance() {
        return entry.instance;
      },
      view: () => rt.view(instanceId),
      call: (op, fn, timeoutMs) => rt.call(entry, op, fn, timeoutMs),
    };
  }

  private async call<T>(entry: Entry, op: string, fn: (driver: Driver) => Promise<T>, timeoutMs: number): Promise<T> {
    const view = this.view(entry.instance.id);
    if (!view.connected || !entry.driver) {
      throw instanceOffline({ status: view.status, detail: view.detail, lastError: view.lastError });
    }
    const driver = entry.driver;
    try {
      return await raceClock(this.deps.clock, timeoutMs, fn(driver), () => {
        throw instanceTimeout();
      });
    } catch (err) {
      if (err instanceof DomainError) throw err;
      if (err instanceof DriverError) throw driverErrorToDomain(err, op, { status: view.status });
      this.deps.log.warn({ err, op, instanceId: entry.instance.id }, 'network call failed');
      throw waCallFailed(`${op} failed`);
    }
  }

  private onNotify(instanceId: string, p: NotifyParams): void {
    const entry = this.entries.get(instanceId);
    if (!entry) return;
    if (p.event === 'ready') {
      const phone = p.data.phoneNumber;
      if (phone && phone !== entry.instance.phoneNumber) entry.instance = { ...entry.instance, phoneNumber: phone };
      entry.worker.resume();
    }
    // Only a command: the events actor saves the number and writes the event (qr and code: webhook only, never a log).
    this.incoming.send(lifecycleCommand(entry.instance, p));
  }

  /** Live snapshots for /debug/actors/stream. */
  subscribe(f: (ev: InspectionEvent) => void): () => void {
    this.inspectors.add(f);
    return () => this.inspectors.delete(f);
  }

  /** Every live actor with a secret-free summary (/debug/actors). */
  describeActors(): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = [
      { id: 'supervisor', machine: 'supervisor', state: this.supervisor.getSnapshot().value, status: this.supervisor.getSnapshot().status, context: { instances: this.entries.size } },
    ];
    for (const [id, entry] of this.entries) {
      const s = this.snapshot(id);
      if (s) out.push({ id: childIds(id).instance, machine: 'instance', state: s.value, status: s.status, context: summarize(s) });
      const w = entry.worker;
      out.push({ id: childIds(id).queue, machine: 'queue', state: 'running', status: 'active', context: { waiting: w.waitingCount(), nextAt: w.nextAt() === null ? null : new Date(w.nextAt() as number).toISOString(), epoch: w.epoch } });
      const sender = this.webhooks.get(id);
      out.push({ id: childIds(id).webhooks, machine: 'webhookSender', state: sender ? 'running' : 'stopped', status: sender ? 'active' : 'stopped', context: sender ? { ...sender.stats } : {} });
    }
    return out;
  }

  /** Graceful stop: no new dispatches, in-flight ones finish and persist, sessions destroyed. */
  async stop(): Promise<void> {
    await Promise.all([...this.entries.values()].map((e) => e.worker.stop()));
    this.supervisor.send({ type: 'SHUTDOWN' });
    this.supervisor.stop();
    await this.sessions.settledAll();
    this.incoming.stop();
    await this.deps.incoming.settled();
    await this.webhooks.close();
  }
}

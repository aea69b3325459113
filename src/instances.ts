/**
 * The operator's instance service: the store changes of src/store/instances.ts plus their effect on the
 * running actors (spawn on create, re-plan on a limit change, stop on delete).
 */
import type { Pool } from './store/pool.js';
import type { Clock } from './clock.js';
import { DEADLINES, type InstancePort, type InstanceView, type LinkView, type PairingCode } from './actors/port.js';
import { stoppedView } from '../machines/instance.snapshot.js';
import { DomainError, OwnerNotAnswering, isDomainError, namingOwner } from './errors.js';
import type { Logger } from './log.js';
import { isConnectionError, isStatementTimeout } from './store/health.js';

/**
 * How long a pairing-code request waits for the code: whatsapp-web.js restarts its browser in pairing mode
 * first (launch and WhatsApp Web's load), which takes longer than an operator command's deadline.
 */
export const PAIRING_CODE_WAIT_MS = 60_000;

/**
 * How long the operator's view of an instance (GET /admin/v1/instances, the console) waits for the node that runs
 * it to tell its state. A view is read from the instance actor's snapshot: a node that works answers in
 * milliseconds. Past this the state is shown unknown, naming that node ("did not answer within 5 s"), instead of
 * the whole list held for a read's 30 s and then refused for one slow node (found from the outside: the console
 * kept showing the last state it had, `connected`, all that time).
 */
export const VIEW_DEADLINE_MS = 5_000;

/**
 * Why the state of an instance is not known (`stateUnknown` of the operator's instance object): the node that runs
 * it (it holds the instance's lease) could not be asked, and what happened. Its status, connection, browser and
 * flags are then null, never the defaults of a stopped instance or the last ones seen: that node may be sending.
 */
export interface StateUnknown {
  node: string;
  /** after "node <id>": `cannot be reached (ECONNREFUSED)`, `did not answer within 5 s`, … */
  reason: string;
}

/** What the operator service reads of the cluster (src/cluster/cluster.ts). */
export interface ClusterView {
  nodes(): Promise<{ id: string; url: string; capacity: number; instances: number; self: boolean; startedAt: number; heartbeatAt: number; clockOffsetMs: number | null }[]>;
  move(instanceId: string, nodeId: string): Promise<void>;
}

/** What the operator service needs of the actor system (src/actors/system.ts). */
export interface InstanceActors {
  add(instance: Instance): void | Promise<void>;
  update(instance: Instance, replan: boolean): Promise<void>;
  /** stop the instance wherever it runs, before its row is deleted; `removeEnded` once the delete ended, done or not */
  remove(id: string): Promise<void>;
  removeEnded?(id: string): void;
  port(id: string): InstancePort | null;
  record(id: string): Instance | undefined;
  /** the node that owns the instance now (several nodes), or null */
  nodeOf?(id: string): Promise<string | null>;
}
import type { Created, InstanceAdmin } from './http/routes/admin-instances.js';
import {
  DELETE_HOLD_MS, createInstances, deleteInstance, getInstance, listInstances, nameTaken, rotateKey, updateSettings, type Instance, type NewInstance,
} from './store/instances.js';
import { Batcher } from './store/batch.js';
import { affectsPlan, applySettingsPatch, NEW_INSTANCE_DEFAULTS, type InstanceSettings, type SettingsPatch } from './queue/settings.js';
import { CommitOutcomeUnknown, withTransaction } from './store/pool.js';

/**
 * A creation whose COMMIT broke on its way (CommitOutcomeUnknown): the instance may or may not exist, and the
 * route takes no idempotency key to retry with. The answer (504 INSTANCE_TIMEOUT, `data.reason` commit_unknown)
 * says how to find out: by its name in the list; found, its key was never shown, so it is rotated.
 */
function creationUnknown(name: string, err: CommitOutcomeUnknown): CommitOutcomeUnknown {
  return new CommitOutcomeUnknown(err.fault, {
    message: `the store connection broke while the creation was being committed: instance ${name} may or may not have been created. ` +
      `Look for the name in GET /admin/v1/instances (mgw instances): if it is listed, its API key was never shown, so rotate it ` +
      `(POST /admin/v1/instances/:id/keys); if it is not, create it again`,
    data: { reason: 'commit_unknown', name },
  });
}

/**
 * Why a created instance was not started at its creation (its placement failed after the row committed), and
 * what happens next: a cluster round of the node it is placed on finds it held by no node and starts it
 * (src/cluster/cluster.ts round, unheldInstances).
 */
function startDeferredWhy(err: unknown): string {
  const what = isStatementTimeout(err)
    ? 'PostgreSQL did not answer in time while the instance was being placed on a node'
    : isConnectionError(err)
      ? 'PostgreSQL could not be reached while the instance was being placed on a node'
      : 'placing the instance on a node failed (the gateway\'s log says why)';
  return `${what}. The instance is created and its API key is valid; it is not running yet: the node it is placed on starts it at ` +
    `its next cluster round once PostgreSQL answers (every LEASE_TTL_MS / 4). Until then its routes answer 502 INSTANCE_UNREACHABLE, nothing accepted`;
}

/**
 * A describe of a listed instance that failed because the instance was deleted since the list was read (its port
 * found no owner and no row: INSTANCE_NOT_FOUND). A list leaves it out (GET /admin/v1/instances, the console's poll).
 */
export const deletedSinceListed = (err: unknown): boolean => isDomainError(err, 'INSTANCE_NOT_FOUND');

/**
 * The delete's statement failed after the instance was stopped (src/cluster/cluster.ts `forget`): cancelled
 * past its deadline (a lock held elsewhere) or chosen as a deadlock's victim. Nothing was deleted, and the
 * instance runs again once its lease's hold for the delete ended; the answer says so rather than the store's
 * "nothing was done" (found from the outside). Other failures are answered as the store's.
 */
function deleteFailed(err: unknown): unknown {
  const deadlock = (err as { code?: unknown } | null)?.code === '40P01';
  if (!deadlock && !isStatementTimeout(err)) return err;
  const why = deadlock ? 'PostgreSQL found it in a deadlock' : 'PostgreSQL cancelled the statement: a lock held elsewhere, or an overloaded server';
  return new DomainError(
    'QUEUE_STORE_UNAVAILABLE',
    `the delete did not complete (${why}); nothing was deleted. The instance was stopped for it and runs again within ${Math.ceil(DELETE_HOLD_MS / 1000)} s: retry the delete`,
    { queueMode: 'pg', reason: 'store_timeout' },
  );
}

export class InstanceAdminService implements InstanceAdmin {
  private keyListeners: ((instanceIds: readonly string[] | null) => void)[] = [];
  /** concurrent creations are written together: one transaction of two statements (src/store/batch.ts) */
  private readonly creations: Batcher<NewInstance, { instance: Instance; apiKey: string }>;
  /** deletes under way, by instance */
  private readonly deletions = new Map<string, Promise<boolean>>();

  /** `sandboxOff`: this gateway runs without the sandbox network (SANDBOX=off), so a sandbox instance could never start */
  constructor(private readonly deps: {
    pool: Pool;
    actors: InstanceActors;
    clock: Clock;
    nodes?: ClusterView;
    log?: Logger;
    sandboxOff?: boolean;
    /** an instance deleted: what this node keeps of it outside its actors and rows is dropped (src/drivers/factory.ts forgetInstanceLinks); never throws */
    forget?: (id: string) => Promise<void>;
  }) {
    this.creations = new Batcher<NewInstance, { instance: Instance; apiKey: string }>(async (inputs) => {
      try {
        const made = await withTransaction(deps.pool, (c) => createInstances(c, inputs));
        return made.map((m, i) => m ?? nameTaken(inputs[i]?.name ?? ''));
      } catch (err) {
        // each may have been created: answered as such, with how to find out (the route takes no idempotency key);
        // never written again, which would find the names of a batch that did commit taken (409) and lose its keys
        if (err instanceof CommitOutcomeUnknown) return inputs.map((i) => creationUnknown(i.name, err));
        throw err;
      }
    });
  }

  /** The live nodes with their instance counts (GET /admin/v1/nodes). */
  async nodes(): Promise<Record<string, unknown>[]> {
    const nodes = (await this.deps.nodes?.nodes()) ?? [];
    return nodes.map((n) => ({
      id: n.id, url: n.url, capacity: n.capacity, instances: n.instances, self: n.self,
      startedAt: new Date(n.startedAt).toISOString(), heartbeatAt: new Date(n.heartbeatAt).toISOString(), clockOffsetMs: n.clockOffsetMs,
    }));
  }

  /**
   * Pin an instance to a live node: `moving` when another node runs it now, `there` when that node already does
   * (the pin still holds it there), null when no such node is live.
   */
  async move(id: string, nodeId: string): Promise<'moving' | 'there' | null> {
    const nodes = (await this.deps.nodes?.nodes()) ?? [];
    if (!nodes.some((n) => n.id === nodeId)) return null;
    const owner = (await this.deps.actors.nodeOf?.(id)) ?? null;
    await this.deps.nodes?.move(id, nodeId);
    return owner === nodeId ? 'there' : 'moving';
  }

  /**
   * `f` is told whenever API keys may have stopped working: a rotation or a delete, here or on another node, with
   * the instances whose keys did (null when any instance's may have).
   */
  onKeysChanged(f: (instanceIds: readonly string[] | null) => void): void {
    this.keyListeners.push(f);
  }

  /** Keys may have stopped working (this node's rotation or delete, or another node's: src/store/key-changes.ts). */
  keysChanged(instanceIds: readonly string[] | null): void {
    for (const f of this.keyListeners) f(instanceIds);
  }

  list(): Promise<Instance[]> {
    return listInstances(this.deps.pool);
  }

  get(id: string): Promise<Instance | null> {
    return getInstance(this.deps.pool, id);
  }

  /**
   * Create the instance (its row and key, committed), then place it: taken and started here when it is placed
   * here, by its node's next round otherwise. Once the row is committed the creation stands, whatever the
   * placement meets: a placement that failed (PostgreSQL away or too slow for it) is `startDeferred`, and the
   * instance is started by the cluster's rounds, which take every instance no node holds (found by the outside
   * probe: a placement's store timeout was answered 503 "nothing was done" for an instance that was created, its
   * key lost, and its name then refused 409).
   */
  async create(input: { name: string; driver: 'sandbox' | 'webjs'; settings?: Partial<InstanceSettings> }): Promise<Created> {
    // refused before anything is written: created, it would be placed here and fail every start (found from the
    // outside: 201 with a key, then an instance stuck starting whose error only the log told)
    if (input.driver === 'sandbox' && this.deps.sandboxOff) {
      throw new DomainError('CONFLICT', 'this gateway runs without the sandbox network (SANDBOX=off): create a webjs instance, or start the gateway with SANDBOX=embedded or the URL of a sandbox process', { driver: 'sandbox' });
    }
    // A partial given at creation must make sense with the defaults it lands on (e.g. minDelayMs ≤ maxDelayMs).
    if (input.settings) applySettingsPatch(NEW_INSTANCE_DEFAULTS, input.settings);
    const created = await this.creations.submit(input);
    try {
      await this.deps.actors.add(created.instance);
      return { ...created, startDeferred: null };
    } catch (err) {
      this.deps.log?.warn({ err, instanceId: created.instance.id }, 'placing a new instance failed: it is created, and a cluster round starts it');
      return { ...created, startDeferred: startDeferredWhy(err) };
    }
  }

  /**
   * The instance of a creation's answer, which must not fail once the row is committed (the key is shown only
   * there). Its live view when it can be read; otherwise (its placement deferred, or its view not readable: the
   * store away) as an instance no node runs is shown: a new instance has no number linked and no jobs, nothing
   * can be sending for it.
   */
  async describeCreated(created: Created): Promise<Record<string, unknown>> {
    if (created.startDeferred === null) {
      try {
        return await this.describe(created.instance);
      } catch (err) {
        this.deps.log?.warn({ err, instanceId: created.instance.id }, 'reading the view of a new instance failed: answered as not running');
      }
    }
    return this.shown(created.instance, stoppedView(created.instance.phoneNumber), null);
  }

  async updateSettings(id: string, patch: SettingsPatch): Promise<Instance | null> {
    // the record read and written under its row lock: the merged result is validated against what the write
    // changes (found from the outside: two changes through two nodes at once, each valid against the record it
    // read, met the table's check minDelayMs <= maxDelayMs and one was answered 500)
    const changed = await withTransaction(this.deps.pool, async (c) => {
      const was = await getInstance(c, id, true);
      if (!was) return null;
      applySettingsPatch(was.settings, patch); // validates the merged result (e.g. minDelayMs ≤ maxDelayMs)
      const now = await updateSettings(c, id, patch);
      return now ? { before: was, after: now } : null;
    });
    if (!changed) return null;
    const { before, after } = changed;
    await this.deps.actors.update(after, affectsPlan(before.settings, after.settings) && after.settings.enabled);
    return after;
  }

  async remove(id: string): Promise<boolean> {
    const run = (async () => {
      try {
        await this.deps.actors.remove(id);
        return await deleteInstance(this.deps.pool, id).catch((err: unknown) => {
          throw deleteFailed(err);
        });
      } finally {
        this.deps.actors.removeEnded?.(id);
      }
    })().then(async (removed) => {
      this.keysChanged([id]);
      if (removed) await this.deps.forget?.(id);
      return removed;
    });
    this.deletions.set(id, run);
    try {
      return await run;
    } finally {
      if (this.deletions.get(id) === run) this.deletions.delete(id);
    }
  }

  /** Whether a delete of `id` is under way through this service (src/http/routes/legacy-queued.ts answers v1 callers from it). */
  deleting(id: string): boolean {
    return this.deletions.has(id);
  }

  async rotateKey(id: string): Promise<string | null> {
    const inst = await getInstance(this.deps.pool, id);
    if (!inst) return null;
    let key: string;
    try {
      key = await withTransaction(this.deps.pool, (c) => rotateKey(c, inst));
    } catch (err) {
      if (!(err instanceof CommitOutcomeUnknown)) throw err;
      // the old key may be revoked: not answered from memory any more (the store verifies it again)
      this.keysChanged([id]);
      // the route takes no idempotency key to retry with (the answer said to): rotating again is what settles it
      throw new CommitOutcomeUnknown(err.fault, {
        message: `the store connection broke while the rotation was being committed: the old API key of instance ${inst.name} may or may not ` +
          'have been revoked, and the new one was not shown. Rotate again (POST /admin/v1/instances/:id/keys): that revokes every earlier key and shows the new one',
        data: { reason: 'commit_unknown', instanceId: id },
      });
    }
    this.keysChanged([id]);
    return key;
  }

  async restart(id: string, reason: string): Promise<boolean> {
    return this.tell(id, { type: 'restart', reason });
  }

  async logout(id: string): Promise<boolean> {
    return this.tell(id, { type: 'logout' });
  }

  /** The pairing code newer than this request (also the webhook event `code`); a secret: never logged. */
  async requestPairingCode(id: string, phoneNumber: string): Promise<PairingCode> {
    const port = this.deps.actors.port(id);
    if (!port) throw new DomainError('INSTANCE_UNREACHABLE', 'the instance is not running right now; nothing was requested');
    return port.ask({ type: 'pairingCode', phoneNumber }, PAIRING_CODE_WAIT_MS).catch((err: unknown) => {
      throw namingOwner(err);
    });
  }

  /**
   * The QR to link with while the instance waits for a scan (nulls otherwise, and while no node runs it). The node
   * that runs it not answering is its refusal (502/504, naming that node), not a stopped instance's nulls.
   */
  async linking(id: string): Promise<LinkView> {
    const port = this.deps.actors.port(id);
    const stopped = (): LinkView => ({ status: 'disconnected', raw: null, pairingCode: null });
    if (!port) return stopped();
    return port.ask({ type: 'qr' }, DEADLINES.read).catch((err: unknown) => {
      if (err instanceof OwnerNotAnswering) throw namingOwner(err);
      if (isDomainError(err, 'INSTANCE_UNREACHABLE')) return stopped();
      throw err;
    });
  }

  /** An operator command to the instance's actor; false when the instance does not run here. */
  private async tell(id: string, ask: { type: 'restart'; reason: string } | { type: 'logout' }): Promise<boolean> {
    const port = this.deps.actors.port(id);
    if (!port) return false;
    await port.ask(ask, DEADLINES.operator).catch((err: unknown) => {
      throw namingOwner(err);
    });
    return true;
  }

  /**
   * The instance's view from its port; a stopped view while no node runs it (no live lease: being taken over).
   * The node that runs it not answering (refused, or not within VIEW_DEADLINE_MS) is a StateUnknown naming it:
   * this node cannot know the instance's state then, and that node may well be running it.
   */
  private async view(instance: Instance): Promise<InstanceView | StateUnknown> {
    const port = this.deps.actors.port(instance.id);
    if (!port) return stoppedView(instance.phoneNumber);
    return port.ask({ type: 'view' }, VIEW_DEADLINE_MS).catch(async (err: unknown): Promise<InstanceView | StateUnknown> => {
      if (err instanceof OwnerNotAnswering) return { node: err.node, reason: err.why };
      if (isDomainError(err, 'INSTANCE_UNREACHABLE')) return stoppedView(instance.phoneNumber);
      // this node's own instance, too busy to answer its view in time
      if (isDomainError(err, 'INSTANCE_TIMEOUT')) {
        return { node: (await this.deps.actors.nodeOf?.(instance.id)) ?? 'this node', reason: `did not answer within ${VIEW_DEADLINE_MS / 1000} s` };
      }
      throw err;
    });
  }

  /**
   * The instances of a list read, each described, without those deleted since the list was read: the port of an
   * instance no node runs any more answers INSTANCE_NOT_FOUND once its row is gone (src/cluster/remote-port.ts),
   * which the list is not about (found by the outside probe: GET /admin/v1/instances answered 404
   * INSTANCE_NOT_FOUND whenever another client deleted an instance at that moment).
   */
  async describeAll(instances: readonly Instance[]): Promise<Record<string, unknown>[]> {
    const described = await Promise.all(instances.map((i) => this.describe(i).catch((err: unknown) => {
      if (deletedSinceListed(err)) return null;
      throw err;
    })));
    return described.filter((d): d is Record<string, unknown> => d !== null);
  }

  async describe(instance: Instance): Promise<Record<string, unknown>> {
    const live = this.deps.actors.record(instance.id) ?? instance;
    const [view, node] = await Promise.all([this.view(live), this.deps.actors.nodeOf?.(instance.id) ?? null]);
    return this.shown(live, view, node);
  }

  /** The operator's instance object: the record with its view (or why its state is unknown) and its node. */
  private shown(live: Instance, view: InstanceView | StateUnknown, node: string | null): Record<string, unknown> {
    const record = { id: live.id, name: live.name, driver: live.driver, createdAt: live.createdAt, settings: live.settings };
    if (!('status' in view)) {
      // the stored number, which the instance reports when linked: its record, not a live reading
      return {
        ...record, phoneNumber: live.phoneNumber, status: null, state: null, connected: null, browser: null, paused: null,
        quarantined: null, lastError: null, node: view.node, stateUnknown: view,
      };
    }
    return {
      ...record,
      phoneNumber: view.phoneNumber ?? live.phoneNumber,
      status: view.status,
      state: view.detail,
      connected: view.connected,
      browser: view.browser,
      paused: view.paused,
      quarantined: view.quarantined,
      lastError: view.lastError,
      node,
      stateUnknown: null,
    };
  }
}


/**
 * The operator's instance service: the store changes of src/store/instances.ts plus their effect on the
 * running actors (spawn on create, re-plan on a limit change, stop on delete).
 */
import type { Pool } from './store/pool.js';
import type { Clock } from './clock.js';
import { DEADLINES, type InstancePort, type InstanceView } from './actors/port.js';
import { stoppedView } from '../machines/instance.snapshot.js';

/** What the operator service needs of the actor system (src/actors/system.ts). */
export interface InstanceActors {
  add(instance: Instance): void;
  update(instance: Instance, replan: boolean): Promise<void>;
  remove(id: string): Promise<void>;
  port(id: string): InstancePort | null;
  record(id: string): Instance | undefined;
}
import type { InstanceAdmin } from './http/routes/admin-instances.js';
import {
  createInstance, deleteInstance, getInstance, listInstances, rotateKey, updateSettings, type Instance,
} from './store/instances.js';
import { affectsPlan, applySettingsPatch, NEW_INSTANCE_DEFAULTS, type InstanceSettings, type SettingsPatch } from './queue/settings.js';
import { withTransaction } from './store/pool.js';

export class InstanceAdminService implements InstanceAdmin {
  private keyListeners: (() => void)[] = [];

  constructor(private readonly deps: { pool: Pool; actors: InstanceActors; clock: Clock }) {}

  onKeysChanged(f: () => void): void {
    this.keyListeners.push(f);
  }

  list(): Promise<Instance[]> {
    return listInstances(this.deps.pool);
  }

  get(id: string): Promise<Instance | null> {
    return getInstance(this.deps.pool, id);
  }

  async create(input: { name: string; driver: 'sandbox' | 'webjs'; settings?: Partial<InstanceSettings> }): Promise<{ instance: Instance; apiKey: string }> {
    // A partial given at creation must make sense with the defaults it lands on (e.g. minDelayMs ≤ maxDelayMs).
    if (input.settings) applySettingsPatch(NEW_INSTANCE_DEFAULTS, input.settings);
    const created = await withTransaction(this.deps.pool, (c) => createInstance(c, input));
    this.deps.actors.add(created.instance);
    return created;
  }

  async updateSettings(id: string, patch: SettingsPatch): Promise<Instance | null> {
    const before = await getInstance(this.deps.pool, id);
    if (!before) return null;
    applySettingsPatch(before.settings, patch); // validates the merged result (e.g. minDelayMs ≤ maxDelayMs)
    const after = await updateSettings(this.deps.pool, id, patch);
    if (!after) return null;
    await this.deps.actors.update(after, affectsPlan(before.settings, after.settings) && after.settings.enabled);
    return after;
  }

  async remove(id: string): Promise<boolean> {
    await this.deps.actors.remove(id);
    const removed = await deleteInstance(this.deps.pool, id);
    for (const f of this.keyListeners) f();
    return removed;
  }

  async rotateKey(id: string): Promise<string | null> {
    const inst = await getInstance(this.deps.pool, id);
    if (!inst) return null;
    const key = await withTransaction(this.deps.pool, (c) => rotateKey(c, inst));
    for (const f of this.keyListeners) f();
    return key;
  }

  async restart(id: string, reason: string): Promise<boolean> {
    return this.tell(id, { type: 'restart', reason });
  }

  async logout(id: string): Promise<boolean> {
    return this.tell(id, { type: 'logout' });
  }

  async requestPairingCode(id: string, phoneNumber: string): Promise<boolean> {
    return this.tell(id, { type: 'pairingCode', phoneNumber });
  }

  /** An operator command to the instance's actor; false when the instance does not run here. */
  private async tell(id: string, ask: { type: 'restart'; reason: string } | { type: 'logout' } | { type: 'pairingCode'; phoneNumber: string }): Promise<boolean> {
    const port = this.deps.actors.port(id);
    if (!port) return false;
    await port.ask(ask, DEADLINES.operator);
    return true;
  }

  private async view(instance: Instance): Promise<InstanceView> {
    const port = this.deps.actors.port(instance.id);
    const view = port ? await port.ask({ type: 'view' }, DEADLINES.read) : stoppedView(instance.phoneNumber);
    return view;
  }

  async describe(instance: Instance): Promise<Record<string, unknown>> {
    const live = this.deps.actors.record(instance.id) ?? instance;
    const view = await this.view(live);
    return {
      id: live.id,
      name: live.name,
      driver: live.driver,
      phoneNumber: view.phoneNumber ?? live.phoneNumber,
      createdAt: live.createdAt,
      settings: live.settings,
      status: view.status,
      state: view.detail,
      connected: view.connected,
      browser: view.browser,
      paused: view.paused,
      quarantined: view.quarantined,
      lastError: view.lastError,
    };
  }
}

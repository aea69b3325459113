/**
 * Operator interface, instances (DESIGN.md "Operator interface"): create, list, get, patch settings, delete,
 * rotate key, restart, logout, linking (QR, pairing code). The API key appears only in the answers of create and
 * rotate; the QR and the pairing code only in the answers of their own routes (and the webhook), never a log.
 */
import Router from '@koa/router';
import { createRouter, takes } from '../router.js';
import { defaulted, enums, object, optional, pattern, record, size, string, unknown, StructError } from 'superstruct';
import { ok } from '../envelope.js';
import { DomainError, validationFailed } from '../../errors.js';
import { matching, parse, structField, structMessage } from '../validate.js';
import { SettingsPatchStruct, type InstanceSettings, type SettingsPatch } from '../../queue/settings.js';
import type { Instance } from '../../store/instances.js';
import type { LinkView, PairingCode } from '../../actors/port.js';
import { qrImage } from '../../qr-image.js';

/** A created instance with its key, shown once, and why it was not started at its creation (null: it was placed). */
export interface Created {
  instance: Instance;
  apiKey: string;
  startDeferred: string | null;
}

export interface InstanceAdmin {
  list(): Promise<Instance[]>;
  get(id: string): Promise<Instance | null>;
  /**
   * throws CONFLICT when the name is taken; once the instance is committed it is answered, its start deferred
   * (`startDeferred`: why) when its placement failed
   */
  create(input: { name: string; driver: 'sandbox' | 'webjs'; settings?: Partial<InstanceSettings> }): Promise<Created>;
  /** the instance of a creation's answer: never fails (the key is shown only there) */
  describeCreated(created: Created): Promise<Record<string, unknown>>;
  /** validates the merged result (e.g. minDelayMs ≤ maxDelayMs), persists, re-plans when limits changed */
  updateSettings(id: string, patch: SettingsPatch): Promise<Instance | null>;
  remove(id: string): Promise<boolean>;
  rotateKey(id: string): Promise<string | null>;
  restart(id: string, reason: string): Promise<boolean>;
  logout(id: string): Promise<boolean>;
  /** link by pairing code instead of QR: the code newer than the request (also sent as webhook event `code`) */
  requestPairingCode(id: string, phoneNumber: string): Promise<PairingCode>;
  /** the QR while the instance waits for a scan */
  linking(id: string): Promise<LinkView>;
  /** live view: status and the like, merged into the instance record for operators */
  describe(instance: Instance): Promise<Record<string, unknown>>;
  /** `describe` of each listed instance, leaving out those deleted since the list was read */
  describeAll(instances: readonly Instance[]): Promise<Record<string, unknown>[]>;
  /** the live gateway nodes with how many instances each owns */
  nodes(): Promise<Record<string, unknown>[]>;
  /** pin the instance to a live node: `moving` there, or `there` already; null when no such node is live */
  move(id: string, nodeId: string): Promise<'moving' | 'there' | null>;
}

export const CreateSchema = object({
  name: matching(/^[A-Za-z0-9-]{1,40}$/, '1 to 40 ASCII letters, digits or dashes'),
  driver: defaulted(enums(['sandbox', 'webjs']), 'sandbox'),
  settings: optional(record(string(), unknown())),
});
export const PatchSchema = object({ settings: record(string(), unknown()) });
export const PairingSchema = object({ phoneNumber: matching(/^\d{7,15}$/, '7 to 15 digits, the international number without +') });
export const MoveSchema = object({ node: matching(/^[A-Za-z0-9._:-]{1,64}$/, 'the id of a live node (GET /admin/v1/nodes)') });

/**
 * Settings are checked on their own and again merged with the stored ones (a rule may span two fields), so
 * every failure names its field the same way: `settings.<field>`.
 */
async function inSettings<T>(f: () => T | Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    if (err instanceof StructError) throw validationFailed(`settings.${structField(err)}`, `settings.${structMessage(err)}`);
    throw err;
  }
}

export function adminInstancesRouter(admin: InstanceAdmin): Router {
  const router = createRouter();
  const load = async (id: string): Promise<Instance> => {
    const inst = await admin.get(id);
    if (!inst) throw new DomainError('INSTANCE_NOT_FOUND', 'no such instance', { instanceId: id });
    return inst;
  };

  router.post('/admin/v1/instances', takes({ body: true }), async (ctx) => {
    const input = parse(ctx.request.body, CreateSchema);
    const settings = input.settings === undefined ? undefined : await inSettings(() => parse(input.settings, SettingsPatchStruct));
    // a name already taken answers 409 CONFLICT from the store's unique name (also for two creates at once)
    const created = await inSettings(() => admin.create({ name: input.name, driver: input.driver, ...(settings ? { settings } : {}) }));
    // committed: answered 201 with the key whatever follows (a placement or a view the store failed)
    // an answer that carries a key is kept by no cache, as the QR's (found from the outside)
    ctx.set('Cache-Control', 'no-store');
    ok(ctx, { instance: await admin.describeCreated(created), apiKey: created.apiKey, startDeferred: created.startDeferred }, 201);
  });
  // an instance deleted while the list is described is left out (it was listed, then gone): not a 404 of the list
  router.get('/admin/v1/instances', takes(), async (ctx) => ok(ctx, { items: await admin.describeAll(await admin.list()) }));
  router.get('/admin/v1/instances/:id', takes(), async (ctx) => ok(ctx, await admin.describe(await load(ctx.params.id ?? ''))));
  router.patch('/admin/v1/instances/:id', takes({ body: true }), async (ctx) => {
    const inst = await load(ctx.params.id ?? '');
    const body = parse(ctx.request.body, PatchSchema);
    const settings = await inSettings(() => parse(body.settings, SettingsPatchStruct));
    const updated = await inSettings(() => admin.updateSettings(inst.id, settings));
    ok(ctx, await admin.describe(updated ?? inst));
  });
  router.delete('/admin/v1/instances/:id', takes(), async (ctx) => {
    const inst = await load(ctx.params.id ?? '');
    // deleted by another request since it was loaded (two deletes sent together): that one's 200, this one's 404
    if (!(await admin.remove(inst.id))) throw new DomainError('INSTANCE_NOT_FOUND', 'no such instance', { instanceId: inst.id });
    ok(ctx, { id: inst.id, deleted: true });
  });
  router.post('/admin/v1/instances/:id/keys', takes(), async (ctx) => {
    const inst = await load(ctx.params.id ?? '');
    const apiKey = await admin.rotateKey(inst.id);
    // deleted since it was loaded: no key was made (never a 201 with a null key)
    if (apiKey === null) throw new DomainError('INSTANCE_NOT_FOUND', 'no such instance', { instanceId: inst.id });
    ctx.set('Cache-Control', 'no-store');
    ok(ctx, { instanceId: inst.id, apiKey }, 201);
  });
  router.post('/admin/v1/instances/:id/restart', takes(), async (ctx) => {
    const inst = await load(ctx.params.id ?? '');
    await admin.restart(inst.id, 'operator');
    ok(ctx, { instanceId: inst.id, restarting: true }, 202);
  });
  router.post('/admin/v1/instances/:id/logout', takes(), async (ctx) => {
    const inst = await load(ctx.params.id ?? '');
    await admin.logout(inst.id);
    ok(ctx, { instanceId: inst.id, loggedOut: true }, 202);
  });
  router.post('/admin/v1/instances/:id/pairing-code', takes({ body: true }), async (ctx) => {
    const inst = await load(ctx.params.id ?? '');
    const { phoneNumber } = parse(ctx.request.body, PairingSchema);
    // The code is a login secret: it goes to the operator here and to the webhook (event `code`), never to a log.
    const { code, at } = await admin.requestPairingCode(inst.id, phoneNumber);
    ctx.set('Cache-Control', 'no-store');
    ok(ctx, { instanceId: inst.id, code, at: new Date(at).toISOString() });
  });
  router.get('/admin/v1/instances/:id/qr', takes(), async (ctx) => {
    const inst = await load(ctx.params.id ?? '');
    const { status, raw } = await admin.linking(inst.id);
    ctx.set('Cache-Control', 'no-store');
    ok(ctx, { status, qr: raw === null ? null : qrImage(raw), raw });
  });
  router.get('/admin/v1/nodes', takes(), async (ctx) => ok(ctx, { items: await admin.nodes() }));
  router.post('/admin/v1/instances/:id/move', takes({ body: true }), async (ctx) => {
    const inst = await load(ctx.params.id ?? '');
    const { node } = parse(ctx.request.body, MoveSchema);
    const moved = await admin.move(inst.id, node);
    if (moved === null) throw validationFailed('node', 'node must be the id of a live node (GET /admin/v1/nodes)');
    // the hand-over takes a few rounds of the cluster (the instance drains here, then starts there); an instance
    // that node runs already stays (found from the outside: it answered `moving: true` all the same)
    if (moved === 'there') return ok(ctx, { instanceId: inst.id, node, moving: false });
    ok(ctx, { instanceId: inst.id, node, moving: true }, 202);
  });
  return router;
}

/**
 * Instances and their API keys. Keys are `wapi_<NAME>_<random>`, shown once (creation, rotation) and stored
 * only as sha256; a lookup goes by that hash (the index's equality: the key itself is never compared).
 */
import { createHash } from 'node:crypto';
import { STORE_DEADLINES, type Queryable } from './pool.js';
import { canonicalInstanceId, isInstanceId, newApiKey, newInstanceId } from '../ids.js';
import { DomainError } from '../errors.js';
import { NEW_INSTANCE_DEFAULTS, type InstanceSettings } from '../queue/settings.js';

export type DriverKind = 'sandbox' | 'webjs';

export interface Instance {
  id: string;
  name: string;
  driver: DriverKind;
  phoneNumber: string | null;
  createdAt: string;
  settings: InstanceSettings;
  lastDispatchAt: number | null;
  planEpoch: number;
}

export interface InstanceRow {
  id: string;
  name: string;
  driver: DriverKind;
  phone_number: string | null;
  created_at: Date;
  max_per_hour: number | null;
  max_per_24h: number | null;
  min_delay_ms: number;
  max_delay_ms: number;
  quiet_hours: { start: string; end: string; tz: string } | null;
  default_ttl_seconds: number;
  legacy_queue_mode: 'sync' | 'async';
  queue_enabled: boolean;
  store_incoming_media: boolean;
  last_dispatch_at: Date | null;
  plan_epoch: number;
}

export function rowToInstance(r: InstanceRow): Instance {
  return {
    id: r.id,
    name: r.name,
    driver: r.driver,
    phoneNumber: r.phone_number,
    createdAt: r.created_at.toISOString(),
    settings: {
      maxPerHour: r.max_per_hour,
      maxPer24h: r.max_per_24h,
      minDelayMs: r.min_delay_ms,
      maxDelayMs: r.max_delay_ms,
      quietHours: r.quiet_hours,
      defaultTtlSeconds: r.default_ttl_seconds,
      legacyQueueMode: r.legacy_queue_mode,
      enabled: r.queue_enabled,
      storeIncomingMedia: r.store_incoming_media,
    },
    lastDispatchAt: r.last_dispatch_at ? r.last_dispatch_at.getTime() : null,
    planEpoch: r.plan_epoch,
  };
}

/** settings field → column */
const COLUMNS: Record<keyof InstanceSettings, string> = {
  maxPerHour: 'max_per_hour',
  maxPer24h: 'max_per_24h',
  minDelayMs: 'min_delay_ms',
  maxDelayMs: 'max_delay_ms',
  quietHours: 'quiet_hours',
  defaultTtlSeconds: 'default_ttl_seconds',
  legacyQueueMode: 'legacy_queue_mode',
  enabled: 'queue_enabled',
  storeIncomingMedia: 'store_incoming_media',
};

export const hashKey = (key: string) => createHash('sha256').update(key).digest();
const keyHint = (key: string) => key.slice(0, key.lastIndexOf('_') + 5) + '…';

export interface NewInstance {
  name: string;
  driver: DriverKind;
  settings?: Partial<InstanceSettings>;
}

/**
 * Create many instances with their first API keys in two statements (the operator API's concurrent creations,
 * src/instances.ts): per input the instance and its key, or null when the name is taken (by an existing
 * instance or an earlier input of the same call). Run it inside a transaction: a key never exists without
 * its instance, nor the reverse.
 */
export async function createInstances(q: Queryable, inputs: readonly NewInstance[]): Promise<({ instance: Instance; apiKey: string } | null)[]> {
  if (inputs.length === 0) return [];
  const all = inputs.map((i) => ({ id: newInstanceId(), name: i.name, driver: i.driver, s: { ...NEW_INSTANCE_DEFAULTS, ...i.settings } }));
  const col = <T>(f: (r: (typeof all)[number]) => T): T[] => all.map(f);
  const { rows } = await q.query<InstanceRow>(
    `INSERT INTO instances (id, name, driver, max_per_hour, max_per_24h, min_delay_ms, max_delay_ms, quiet_hours,
       default_ttl_seconds, legacy_queue_mode, queue_enabled, store_incoming_media)
     SELECT id, name, driver, mph, mpd, min_ms, max_ms, qh::jsonb, ttl, mode, enabled, media
       FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[], $5::int[], $6::int[], $7::int[], $8::text[], $9::int[],
                   $10::text[], $11::bool[], $12::bool[]) WITH ORDINALITY
            AS n (id, name, driver, mph, mpd, min_ms, max_ms, qh, ttl, mode, enabled, media, ord)
      ORDER BY ord
     ON CONFLICT (name) DO NOTHING RETURNING *`,
    [col((r) => r.id), col((r) => r.name), col((r) => r.driver), col((r) => r.s.maxPerHour), col((r) => r.s.maxPer24h),
      col((r) => r.s.minDelayMs), col((r) => r.s.maxDelayMs), col((r) => (r.s.quietHours ? JSON.stringify(r.s.quietHours) : null)),
      col((r) => r.s.defaultTtlSeconds), col((r) => r.s.legacyQueueMode), col((r) => r.s.enabled), col((r) => r.s.storeIncomingMedia)],
  );
  const made = new Map(rows.map((r) => [r.id, rowToInstance(r)]));
  const keys = new Map([...made.values()].map((i) => [i.id, newApiKey(i.name)]));
  await insertKeys(q, keys);
  return all.map((r) => {
    const instance = made.get(r.id);
    const apiKey = keys.get(r.id);
    return instance && apiKey ? { instance, apiKey } : null;
  });
}

/** One instance (`createInstances` of one); throws CONFLICT when the name is taken. */
export async function createInstance(q: Queryable, input: NewInstance): Promise<{ instance: Instance; apiKey: string }> {
  const [created] = await createInstances(q, [input]);
  if (!created) throw nameTaken(input.name);
  return created;
}

export const nameTaken = (name: string) => new DomainError('CONFLICT', `an instance named ${name} exists`, { field: 'name' });

/** Store keys (instance id → key) as their hashes and hints. */
async function insertKeys(q: Queryable, keys: ReadonlyMap<string, string>): Promise<void> {
  if (keys.size === 0) return;
  const values = [...keys.values()];
  await q.query('INSERT INTO api_keys (instance_id, key_hash, key_hint) SELECT * FROM unnest($1::uuid[], $2::bytea[], $3::text[])', [
    [...keys.keys()], values.map(hashKey), values.map(keyHint),
  ]);
}

async function issueKey(q: Queryable, instanceId: string, name: string): Promise<string> {
  const apiKey = newApiKey(name);
  await insertKeys(q, new Map([[instanceId, apiKey]]));
  return apiKey;
}


/**
 * The id of the stored instance that `raw` names, in the case the gateway keeps it (a UUID in any letter case
 * names the same instance: its actors and senders are found by the lower-case id), else 404 INSTANCE_NOT_FOUND.
 */
export async function existingInstanceId(q: Queryable, raw: string): Promise<string> {
  const id = canonicalInstanceId(raw);
  const found = id !== null && (await q.query('SELECT 1 FROM instances WHERE id = $1', [id])).rowCount;
  if (!found || id === null) throw new DomainError('INSTANCE_NOT_FOUND', 'no such instance', { instanceId: raw });
  return id;
}
/**
 * The ids of the instance's active key rows (never a key), locked till the transaction's end with `lock`: a
 * start re-showing the demo's key checks them before it rotates (src/gateway.ts).
 */
export async function activeKeyIds(q: Queryable, instanceId: string, lock = false): Promise<string[]> {
  // the instance's row before its key rows, in rotateKey's order (the other order deadlocks against a rotation)
  if (lock) await q.query('SELECT 1 FROM instances WHERE id = $1 FOR NO KEY UPDATE', [instanceId]);
  const { rows } = await q.query<{ id: string }>(
    `SELECT id::text AS id FROM api_keys WHERE instance_id = $1 AND revoked_at IS NULL ORDER BY id${lock ? ' FOR UPDATE' : ''}`,
    [instanceId],
  );
  return rows.map((r) => r.id);
}

/**
 * Revoke every key of the instance and issue a new one (in the caller's transaction); 404 INSTANCE_NOT_FOUND when
 * the instance is gone. The instance's row is locked first: a concurrent DELETE of the instance locks that row
 * before its cascade locks the key rows, so taking the key rows first (the UPDATE) deadlocked against it, and a
 * delete committed between the caller's read and the INSERT failed the foreign key: both were 500s (found from
 * the outside: rotate and delete sent together). NO KEY UPDATE, not KEY SHARE: rotations of one instance take
 * turns, so each revokes the key the one before it committed (under KEY SHARE, rotations sent together each
 * revoked only the keys committed when its UPDATE began, and several of their new keys stayed working). It
 * does not block the foreign keys of rows inserted meanwhile (jobs, keys), which take KEY SHARE.
 */
export async function rotateKey(q: Queryable, instance: Instance): Promise<string> {
  const { rowCount } = await q.query('SELECT 1 FROM instances WHERE id = $1 FOR NO KEY UPDATE', [instance.id]);
  if (!rowCount) throw new DomainError('INSTANCE_NOT_FOUND', 'no such instance', { instanceId: instance.id });
  await q.query('UPDATE api_keys SET revoked_at = now() WHERE instance_id = $1 AND revoked_at IS NULL', [instance.id]);
  return issueKey(q, instance.id, instance.name);
}

export async function getInstance(q: Queryable, id: string, forUpdate = false): Promise<Instance | null> {
  if (!isInstanceId(id)) return null;
  const { rows } = await q.query<InstanceRow>(`SELECT * FROM instances WHERE id = $1${forUpdate ? ' FOR UPDATE' : ''}`, [id]);
  return rows[0] ? rowToInstance(rows[0]) : null;
}

export async function listInstances(q: Queryable): Promise<Instance[]> {
  const { rows } = await q.query<InstanceRow>('SELECT * FROM instances ORDER BY created_at, name');
  return rows.map(rowToInstance);
}

/**
 * How long the lease of an instance stopped for its delete is held (src/cluster/hand-overs.ts): longer than
 * `deleteInstance` may take (a connection of the pool, then the statement's answer: STORE_DEADLINES), so that
 * once it ends the delete has either removed the lease with the row or failed, and the instance runs again.
 */
export const DELETE_HOLD_MS = STORE_DEADLINES.connectMs + STORE_DEADLINES.queryMs + 2_000;

/**
 * Delete the instance with everything of it, in one statement: its jobs and idempotency keys go by the trigger of
 * sql/0012_instance_delete_trigger.sql (no foreign key cascades to them since 0011), after its lease row, which
 * waits for any write under the lease's fence still open, so the jobs such a write committed are there to be
 * deleted, and a later write finds no lease.
 */
export async function deleteInstance(q: Queryable, id: string): Promise<boolean> {
  const r = await q.query('DELETE FROM instances WHERE id = $1', [id]);
  return (r.rowCount ?? 0) > 0;
}

export async function updateSettings(q: Queryable, id: string, patch: Partial<InstanceSettings>): Promise<Instance | null> {
  const sets: string[] = [];
  const values: unknown[] = [id];
  for (const [k, v] of Object.entries(patch) as [keyof InstanceSettings, unknown][]) {
    if (v === undefined) continue;
    values.push(k === 'quietHours' && v !== null ? JSON.stringify(v) : v);
    sets.push(`${COLUMNS[k]} = $${values.length}`);
  }
  if (sets.length === 0) return getInstance(q, id);
  const { rows } = await q.query<InstanceRow>(`UPDATE instances SET ${sets.join(', ')} WHERE id = $1 RETURNING *`, values);
  return rows[0] ? rowToInstance(rows[0]) : null;
}

export async function setPhoneNumber(q: Queryable, id: string, phone: string | null): Promise<void> {
  await q.query('UPDATE instances SET phone_number = $2 WHERE id = $1 AND phone_number IS DISTINCT FROM $2', [id, phone]);
}

/**
 * The instances that keys belong to, by the keys' SHA-256 digests in hex (`hashKey`), in one statement: a
 * digest of an unknown or revoked key is not in the answer.
 */
export async function findInstanceIdsByKeyHashes(q: Queryable, hashes: readonly string[]): Promise<Map<string, string>> {
  const { rows } = await q.query<{ instance_id: string; key_hash: string }>(
    "SELECT instance_id, encode(key_hash, 'hex') AS key_hash FROM api_keys WHERE key_hash = ANY ($1::bytea[]) AND revoked_at IS NULL",
    [hashes.map((h) => Buffer.from(h, 'hex'))],
  );
  return new Map(rows.map((r) => [r.key_hash, r.instance_id]));
}

/**
 * Authentication. Instance routes: `Authorization: Bearer wapi_<NAME>_<random>`; the instance comes from the
 * key only. Admin routes: `Authorization: Bearer <ADMIN_TOKEN>`. Missing/malformed header → 401 UNAUTHORIZED;
 * unknown key → 401 INVALID_API_KEY. Comparisons are constant-time; keys are looked up by hash.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import { ApiError } from './errors.js';
import { findInstanceIdByKey, hashKey } from '../store/instances.js';
import type { Queryable } from '../store/pool.js';
import type { Clock } from '../clock.js';

const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]{8,512})$/;
const API_KEY = /^wapi_[A-Za-z0-9-]{1,40}_[A-Za-z0-9_-]{16,}$/;

export function bearerToken(ctx: Context): string {
  const header = ctx.get('authorization');
  const m = BEARER.exec(header.trim());
  if (!m?.[1]) throw new ApiError(401, 'UNAUTHORIZED', 'Authorization: Bearer <API_KEY> header missing or malformed');
  return m[1];
}

/**
 * Resolves API keys to instance ids with a short-lived cache keyed by the key's hash (never the key), so the
 * hot path does not hit PostgreSQL on every request. Rotation and deletion clear it.
 */
export class KeyResolver {
  private cache = new Map<string, { instanceId: string; at: number }>();
  constructor(private readonly db: Queryable, private readonly clock: Clock, private readonly ttlMs = 30_000) {}

  async resolve(key: string): Promise<string | null> {
    const h = hashKey(key).toString('hex');
    const hit = this.cache.get(h);
    if (hit && this.clock.now() - hit.at < this.ttlMs) return hit.instanceId;
    const id = await findInstanceIdByKey(this.db, key);
    if (id) this.cache.set(h, { instanceId: id, at: this.clock.now() });
    else this.cache.delete(h);
    return id;
  }

  clear(): void {
    this.cache.clear();
  }
}

export function requireApiKey<I>(keys: KeyResolver, loadInstance: (id: string) => I | null | Promise<I | null>) {
  return async function apiKeyAuth(ctx: Context, next: Next): Promise<void> {
    const token = bearerToken(ctx);
    if (!API_KEY.test(token)) throw new ApiError(401, 'INVALID_API_KEY', 'API key is not valid');
    const id = await keys.resolve(token);
    const instance = id ? await loadInstance(id) : null;
    if (!instance) throw new ApiError(401, 'INVALID_API_KEY', 'API key is not valid');
    ctx.state.instance = instance;
    await next();
  };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export function requireAdmin(adminToken: string) {
  const expected = digest(adminToken);
  return async function adminAuth(ctx: Context, next: Next): Promise<void> {
    const token = bearerToken(ctx);
    if (!timingSafeEqual(digest(token), expected)) {
      if (API_KEY.test(token)) throw new ApiError(403, 'FORBIDDEN', 'an instance API key cannot use the operator interface');
      throw new ApiError(401, 'UNAUTHORIZED', 'admin token is not valid');
    }
    await next();
  };
}

/**
 * Authentication. Instance routes: `Authorization: Bearer wapi_<NAME>_<random>`; the instance comes from the
 * key only. Admin routes: `Authorization: Bearer <ADMIN_TOKEN>`. Missing/malformed header → 401 UNAUTHORIZED;
 * unknown key → 401 INVALID_API_KEY. The admin token is compared in constant time; API keys are looked up by hash.
 */
import { createHash, hash, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import { DomainError } from '../errors.js';
import { findInstanceIdsByKeyHashes } from '../store/instances.js';
import type { Queryable } from '../store/pool.js';
import type { Clock } from '../clock.js';
import { isConnectionError } from '../store/health.js';
import { headerCount } from './headers.js';

/** Lookup statements of unknown keys running at once, and keys in one. */
const LOOKUP_STATEMENTS = 2;
const LOOKUP_BATCH = 500;
/** How long a verified key is kept while this node cannot hear of other nodes' key changes. */
export const UNWATCHED_TTL_MS = 1_000;

interface Waiter {
  resolve: (instanceId: string | null) => void;
  reject: (err: unknown) => void;
}

// The scheme is case-insensitive (RFC 9110 §11.1); the token is not.
const BEARER = /^bearer +([A-Za-z0-9._~+/=-]{8,512})$/i;
const API_KEY = /^wapi_[A-Za-z0-9-]{1,40}_[A-Za-z0-9_-]{16,}$/;

/** The bearer token of the request; `expected` names the credential in the 401 (never the value sent). */
export function bearerToken(ctx: Context, expected = 'API_KEY'): string {
  const header = ctx.get('authorization');
  const m = BEARER.exec(header.trim());
  // more than one Authorization header is malformed, whichever of its keys is valid: Node answers for the first,
  // where a proxy in front that reads the last one saw other credentials
  if (!m?.[1] || headerCount(ctx.req.rawHeaders, 'authorization') > 1) {
    throw new DomainError('UNAUTHORIZED', `Authorization: Bearer <${expected}> header missing or malformed`);
  }
  return m[1];
}

/**
 * Resolves API keys to instance ids with a short-lived cache keyed by the key's hash (never the key), so the
 * hot path does not hit PostgreSQL on every request. A rotation or deletion forgets that instance's keys at once.
 *
 * While the store is unreachable a key cannot be verified again; one verified before the outage stays usable
 * (its cached instance is answered until a lookup succeeds again), so every route keeps working in
 * `memory-degraded` (SPEC.md: v1 works in every mode). A key this process never verified cannot be told
 * valid or not then: 503 QUEUE_STORE_UNAVAILABLE, never a 401 for a key that may be valid. Once a lookup
 * failed, a cached key is answered at once and re-verified in the background, so that requests do not each
 * wait out the store's deadline in a partition.
 *
 * Keys not in the cache are verified together: every key that waits is looked up by one statement, at most
 * LOOKUP_STATEMENTS of them at once (the next collects what arrives meanwhile). A caller sending a new unknown
 * key with every request (a scan for valid keys, a client gone wrong) otherwise made each request a statement
 * of its own, holding the pool's connections: beside 64 such clients an honest client's acceptance fell to a
 * tenth of its rate (bench/auth-flood.ts).
 */
export class KeyResolver {
  /**
   * Verified keys by hash. `at`: when last verified; `unsure`: a change of keys may have been missed since
   * (reverifyAll): such an entry is never answered from memory, only once a lookup confirms it.
   */
  private cache = new Map<string, { instanceId: string; at: number; unsure?: true }>();
  /** bumped by forget() and reverifyAll(): a lookup that began before a rotation must not put the old answer back */
  private generation = 0;
  /** when a lookup last failed because the store was unreachable (null once one succeeds again) */
  private unreachableAt: number | null = null;
  private readonly lookups = new Map<string, Promise<string | null>>();
  /** whether another node's key changes are heard (src/store/key-changes.ts); unheard, a key is kept a second */
  private watched = true;
  /** keys (by hash) waiting for the next lookup statement, with who waits (more than one only across a `clear`) */
  private waiting = new Map<string, Waiter[]>();
  private statements = 0;
  private scheduled = false;
  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
    private readonly ttlMs = 30_000,
  ) {}

  /**
   * The instance of a key verified less than the cache's time ago, at once; otherwise `resolve` (a promise). A
   * request whose key is known (nearly every one) is let in without a turn of the event loop's promise queue.
   */
  known(key: string): string | Promise<string | null> {
    const h = hash('sha256', key, 'hex');
    const hit = this.cache.get(h);
    if (hit && this.fresh(hit.at)) return hit.instanceId;
    return this.resolveHashed(h);
  }

  resolve(key: string): Promise<string | null> {
    // the cache's key: the key's SHA-256 in hex, in one call (no hash object per request)
    return this.resolveHashed(hash('sha256', key, 'hex'));
  }

  private fresh(at: number): boolean {
    return this.clock.now() - at < (this.watched ? this.ttlMs : UNWATCHED_TTL_MS);
  }

  private async resolveHashed(h: string): Promise<string | null> {
    const hit = this.cache.get(h);
    if (hit && this.fresh(hit.at)) return hit.instanceId;
    if (hit && !hit.unsure && this.unreachableAt !== null) {
      // the store was failing at the last lookup: answer from the cache now, re-verify in the background
      void this.lookup(h).catch((err: unknown) => {
        if (isConnectionError(err)) this.unreachableAt = this.clock.now();
      });
      return hit.instanceId;
    }
    try {
      return await this.lookup(h);
    } catch (err) {
      this.failed(err);
      const stale = this.cache.get(h);
      if (stale && !stale.unsure) return stale.instanceId;
      throw new DomainError('QUEUE_STORE_UNAVAILABLE', 'the store is unreachable, so the API key cannot be verified now; nothing was done: retry shortly', {
        queueMode: 'memory-degraded',
      });
    }
  }

  /** A lookup failed: remember it when the store was unreachable; anything else is rethrown. */
  private failed(err: unknown): void {
    if (!isConnectionError(err)) throw err;
    this.unreachableAt = this.clock.now();
  }

  /** One lookup per key at a time (bounded by the store's own deadlines, see STORE_DEADLINES). */
  private lookup(h: string): Promise<string | null> {
    const running = this.lookups.get(h);
    if (running) return running;
    const generation = this.generation;
    const pending: Promise<string | null> = new Promise<string | null>((resolve, reject) => {
      const waiters = this.waiting.get(h);
      if (waiters) waiters.push({ resolve, reject });
      else this.waiting.set(h, [{ resolve, reject }]);
      this.schedule();
    })
      .then((id) => {
        this.unreachableAt = null;
        if (generation === this.generation) {
          if (id) this.cache.set(h, { instanceId: id, at: this.clock.now() });
          else this.cache.delete(h);
        }
        return id;
      })
      .finally(() => {
        if (this.lookups.get(h) === pending) this.lookups.delete(h);
      });
    this.lookups.set(h, pending);
    return pending;
  }

  /** A lookup statement on the next turn (what arrives in this one joins it), unless enough are running. */
  private schedule(): void {
    if (this.scheduled || this.statements >= LOOKUP_STATEMENTS || this.waiting.size === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.lookUpWaiting();
    });
  }

  /** Look up the keys waiting (up to LOOKUP_BATCH) in one statement. */
  private async lookUpWaiting(): Promise<void> {
    if (this.statements >= LOOKUP_STATEMENTS || this.waiting.size === 0) return;
    const batch = new Map<string, Waiter[]>();
    for (const [h, w] of this.waiting) {
      if (batch.size >= LOOKUP_BATCH) break;
      batch.set(h, w);
    }
    for (const h of batch.keys()) this.waiting.delete(h);
    this.statements++;
    try {
      const found = await findInstanceIdsByKeyHashes(this.db, [...batch.keys()]);
      for (const [h, ws] of batch) for (const w of ws) w.resolve(found.get(h) ?? null);
    } catch (err) {
      for (const ws of batch.values()) for (const w of ws) w.reject(err);
    } finally {
      this.statements--;
      this.schedule();
    }
  }

  /**
   * Whether this node hears of other nodes' key changes now (src/store/key-changes.ts). While it does not, a
   * verified key is kept UNWATCHED_TTL_MS instead of `ttlMs`; the cache itself stays, as in an outage of the store.
   */
  setWatched(on: boolean): void {
    this.watched = on;
  }

  /**
   * The keys of `instanceIds` stopped working (a rotation, a revocation, a delete): they are forgotten at once, and
   * a request verified before is verified again (`stillValid`). Other instances' keys stay as they were: forgetting
   * them too made every key not used again since unusable in the store's next outage (found from the outside).
   */
  forget(instanceIds: readonly string[]): void {
    const gone = new Set(instanceIds);
    this.generation++;
    for (const [h, entry] of this.cache) if (gone.has(entry.instanceId)) this.cache.delete(h);
    this.lookups.clear();
  }

  /**
   * Any key may have stopped working (a notice that names no instance, or notices perhaps missed while they were
   * not heard): every cached key is verified again, all of them at once now (in the lookups' statements of up to
   * LOOKUP_BATCH keys), not forgotten. Until its lookup answers, a key is not answered from memory, even while the
   * store is unreachable: one revoked while the notices were missed must not pass (found from the outside: a key
   * rotated on another node while this one listened anew after a blip was accepted here, and sent, in the next
   * outage); one the lookup confirms is usable through the next outage again (emptying the cache made every key
   * unusable in it, the first finding).
   */
  reverifyAll(): void {
    this.generation++;
    this.lookups.clear();
    for (const [h, entry] of this.cache) {
      entry.at = -Infinity;
      entry.unsure = true;
      void this.lookup(h).catch((err: unknown) => {
        if (isConnectionError(err)) this.unreachableAt = this.clock.now();
      });
    }
  }

  /** What `stillValid` compares with: the keys' generation and the instant a request's key was verified. */
  stamp(): KeyStamp {
    return { generation: this.generation, at: this.clock.now() };
  }

  /**
   * Whether `key`, verified for `instanceId` at `since`, still is: at once when no key changed since (the
   * usual case: a number compared), else looked up again (a rotation or deletion anywhere since).
   * While other nodes' changes are not heard, a verification older than UNWATCHED_TTL_MS is looked up again too.
   */
  stillValid(key: string, instanceId: string, since: KeyStamp): boolean | Promise<boolean> {
    if (since.generation === this.generation && (this.watched || this.clock.now() - since.at < UNWATCHED_TTL_MS)) return true;
    return this.resolve(key).then((id) => id === instanceId);
  }
}

/** When a request's API key was verified (KeyResolver.stamp). */
export interface KeyStamp {
  generation: number;
  at: number;
}

/** What the API-key guard keeps of a request it let in, for `keyStillValid`. */
interface KeyCheck {
  keys: KeyResolver;
  token: string;
  instanceId: string;
  stamp: KeyStamp;
}
const KEY_CHECK = Symbol('apiKeyCheck');

/**
 * Throws 401 INVALID_API_KEY when the key that let the request in was rotated or its instance deleted since the
 * guard verified it: the guard runs before the body is read, and a client can take minutes to send it (found from
 * the outside: a send-message whose body came 45 s after its key's rotation was accepted and sent, an upload
 * stored). "The old key stops working at once" holds for a request on its way too: checked once the body is read,
 * before anything is done with it (src/http/router.ts `afterBody`; the upload's commit for a streamed body). A
 * request the guard did not let in with a key (another family's credential) passes.
 */
export async function keyStillValid(ctx: Context): Promise<void> {
  const check = (ctx.state as { [KEY_CHECK]?: KeyCheck })[KEY_CHECK];
  if (!check) return;
  const valid = check.keys.stillValid(check.token, check.instanceId, check.stamp);
  if (valid === true || (valid !== false && (await valid))) return;
  throw new DomainError('INVALID_API_KEY', 'API key is not valid');
}

/** `keyStillValid` as the link after a family's body reader; no await on the usual path (nothing changed). */
export function requireKeyStillValid(ctx: Context, next: Next): Promise<void> {
  const check = (ctx.state as { [KEY_CHECK]?: KeyCheck })[KEY_CHECK];
  if (!check || check.keys.stillValid(check.token, check.instanceId, check.stamp) === true) return next();
  return keyStillValid(ctx).then(next);
}


/**
 * The instance API key guard. `loadInstance` answers at once for an instance this node holds (a promise only for
 * one read from the store): with the key known too, the request goes on without waiting for a promise.
 */
export function requireApiKey<I extends object>(keys: KeyResolver, loadInstance: (id: string) => I | null | Promise<I | null>) {
  const invalid = () => new DomainError('INVALID_API_KEY', 'API key is not valid');
  /** what a request the key let in carries on: its instance, and what keyStillValid checks after the body */
  const admit = (ctx: Context, instance: I | null, token: string, id: string, stamp: KeyStamp): void => {
    if (!instance) throw invalid();
    ctx.state.instance = instance;
    ctx.state.authenticated = 'instance';
    // stamped before the lookup: a rotation while it ran is seen by the check after the body (keyStillValid)
    (ctx.state as { [KEY_CHECK]?: KeyCheck })[KEY_CHECK] = { keys, token, instanceId: id, stamp };
  };
  const looked = async (ctx: Context, next: Next, token: string, stamp: KeyStamp, found: string | Promise<string | null>, instance?: Promise<I | null>): Promise<void> => {
    const id = await found;
    if (!id) throw invalid();
    admit(ctx, await (instance ?? loadInstance(id)), token, id, stamp);
    return next();
  };
  return function apiKeyAuth(ctx: Context, next: Next): Promise<void> {
    // a request that falls through one family to the next (e.g. /api/v2/messages/:id) is checked once
    if (ctx.state.authenticated === 'instance') return next();
    const token = bearerToken(ctx);
    if (!API_KEY.test(token)) throw invalid();
    const stamp = keys.stamp();
    const id = keys.known(token);
    if (typeof id !== 'string') return looked(ctx, next, token, stamp, id);
    const instance = loadInstance(id);
    if (instance instanceof Promise) return looked(ctx, next, token, stamp, id, instance);
    admit(ctx, instance, token, id, stamp);
    return next();
  };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export function requireAdmin(adminToken: string) {
  const expected = digest(adminToken);
  return async function adminAuth(ctx: Context, next: Next): Promise<void> {
    if (ctx.state.authenticated === 'admin') return next();
    const token = bearerToken(ctx, 'ADMIN_TOKEN');
    if (!timingSafeEqual(digest(token), expected)) {
      if (API_KEY.test(token)) throw new DomainError('FORBIDDEN', 'an instance API key cannot use the operator interface; use the admin token');
      throw new DomainError('UNAUTHORIZED', 'the admin token is not valid');
    }
    ctx.state.authenticated = 'admin';
    await next();
  };
}

/** Identifiers: prefixed, random, URL-safe. */
import { randomBytes, randomUUID } from 'node:crypto';


const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let used = 0;

/**
 * `bytes` random bytes as text, from a pool of CSPRNG bytes filled 4 KiB at a time, each byte used once: one
 * call into the system's generator per ~340 ids instead of one per id (a send-bulk makes 5,000 job ids at
 * once; one call alone costs 10-40 µs of CPU on the machines measured). node's randomUUID caches its
 * randomness the same way. Not for long-lived secrets (API keys, tokens), which take their own call.
 */
export function pooledRandom(bytes: number, encoding: 'hex' | 'base64url'): string {
  if (used + bytes > pool.length) {
    pool = randomBytes(Math.max(POOL_BYTES, bytes));
    used = 0;
  }
  const text = pool.toString(encoding, used, used + bytes);
  used += bytes;
  return text;
}
const randomHex = (bytes: number) => pooledRandom(bytes, 'hex');

export const newJobId = () => `wq_${randomHex(12)}`;
export const newEventId = () => `ev_${randomHex(12)}`;
export const newMediaId = () => `md_${randomHex(12)}`;
export const newInstanceId = () => randomUUID();
/**
 * An instance id as PostgreSQL's uuid type takes it (any case): what a path or body names is checked with this
 * before it reaches a query, so a malformed one is a 404, not a failed statement.
 */
export const isInstanceId = (id: string) => UUID.test(id);
/** An instance id as the gateway keeps it (lower case; a UUID is case-insensitive), or null when it is none. */
export const canonicalInstanceId = (id: string): string | null => (UUID.test(id) ? id.toLowerCase() : null);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** API key `wapi_<NAME>_<random>`: 32 characters of randomness. */
export const newApiKey = (name: string) => `wapi_${name}_${randomBytes(24).toString('base64url')}`;
export const newAdminToken = () => `mgwadm_${randomBytes(24).toString('base64url')}`;

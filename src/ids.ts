/** Identifiers: prefixed, random, URL-safe. */
import { randomBytes, randomUUID } from 'node:crypto';


const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let used = 0;

/**
 * `bytes` random bytes as text, from a pool of CSPRNG bytes filled 4 KiB at a time, each byte used once: one
 * call into the system's generator per few hundred ids instead of one per id (a send-bulk makes 5,000 job ids at
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

/**
 * An id's 24 characters that sort by when they were made: `t`, the wall clock's milliseconds as 11 hex digits
 * (until the year 2527), then 6 random bytes as hex. For the ids that are a table's unique key and written with
 * every acceptance or event (jobs.id, outbox.event_id): PostgreSQL inserts a new one at the right end of its
 * B-tree, on a page a moment ago written, instead of on a random page of an index that grows forever (jobs are
 * kept). On a table of a million jobs, a random id made each insert dirty a page not touched since the last
 * checkpoint, whose full image then went to the WAL: 5,820 bytes of WAL a job against 729 (bench/job-ids.ts,
 * right after a checkpoint). The `t` sorts after every hex digit (in the C collation and in the languages'
 * ones), so on a database that holds the ids made before (24 random hex digits) the new ones still go to the
 * right end: were they hex too, they would go to one place inside the index, where a full page splits in halves
 * whose left one never fills again (the index grew by 3,296 pages for 300,000 such ids on a million random ones,
 * 2,184 with random ids, 1,822 at the right end). The random part keeps two ids of the same millisecond apart
 * (48 bits: a send-bulk makes up to about a thousand in one millisecond, a chance of two in 10^8 that two of them
 * collide, where the table's unique key refuses the group, which is answered like any failed commit); the clock
 * going back a little only puts a few ids off the end. An id is no secret (a job is read with its instance's
 * key): the moment it shows is about the job's `queuedAt`.
 */
export function timeOrderedPart(now: number = Date.now()): string {
  return `t${(Math.max(0, Math.floor(now)) % 2 ** 44).toString(16).padStart(11, '0')}${randomHex(6)}`;
}

export const newJobId = () => `wq_${timeOrderedPart()}`;
export const newEventId = () => `ev_${timeOrderedPart()}`;
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

/**
 * Insert a group commit's jobs as one statement that is its own transaction, fenced inside it: the leases of
 * the group's instances are read FOR KEY SHARE at this node's epochs, unexpired, and only the jobs of the
 * instances whose lease holds are inserted (what BEGIN, src/cluster/leases.ts fenceLeases, insertJobs and
 * COMMIT do in four round trips; src/queue/sql/claimJob.ts fences the same way). A takeover, which changes
 * the epoch, waits for the statement; an old epoch inserts nothing.
 *
 * Jobs with idempotency keys have them remembered by the same statement (src/queue/sql/
 * rememberIdempotencyKeys.ts), of the held instances only; were one of them held by a younger job (another
 * writer took it since the caller looked it up), the statement fails as a whole (a unique_violation,
 * sql/0009_key_taken.sql): nothing of it is written, and the caller's transaction-per-unit retry decides again.
 *
 * Strategy: the rows (src/queue/sql/job-rows.ts) and the insert of insertJobs.ts, with the fence as a CTE;
 * the answer is the held instances and the inserted jobs' seq, in one result. At most ROWS_PER_STATEMENT jobs
 * (one statement).
 */
import { oneStatement, type Pool } from '../../store/pool.js';
import { heldLeasesSql } from '../../store/lease-fence-sql.js';
import type { Job, NewJob } from '../job.js';
import { INSERT, KEY_ROWS, ROWS_PER_STATEMENT, insertUnkeyed, insertedJob } from './insertJobs.js';
import { perRowSource, rowSource } from './job-rows.js';
import { allKeysRemembered, isKeyTakenError, keyTakenConcurrently, rememberKeysFrom } from './rememberIdempotencyKeys.js';

/** A row of `t` whose instance's lease held. */
const HELD = 't.inst IN (SELECT instance_id FROM f)';

/** The insert, of the rows whose instance's lease held. */
const INSERT_HELD = INSERT.replace('FROM t ORDER BY ord', `FROM t WHERE ${HELD} ORDER BY ord`);
if (INSERT_HELD === INSERT) throw new Error('insertJobsFenced: the insert of insertJobs.ts changed shape; its fence would not apply');

const FENCED = perRowSource((rows) => `WITH f AS (${heldLeasesSql(rows.params + 1)}),
     t AS (${rows.sql}),
     j AS (${INSERT_HELD})
   SELECT instance_id::text AS held, NULL::text AS id, NULL::bigint AS seq FROM f
   UNION ALL
   SELECT NULL, id, seq FROM j`);

/** The keys to remember: of every row, or (`held`) of the held instances' rows. */
const keyRows = (held: boolean) => (held ? `${KEY_ROWS} AND ${HELD}` : KEY_ROWS);
/** Those keys remembered (`k`), and a row that fails the statement unless every one of them was. */
const rememberAll = (held: boolean) => `k AS (${rememberKeysFrom(keyRows(held))})`;
const KEYS_CHECKED = (held: boolean) =>
  `SELECT NULL, NULL, NULL WHERE NOT ${allKeysRemembered('SELECT count(*) FROM k', `SELECT count(*) FROM (${keyRows(held)}) AS w`)}`;

/** Fenced, some jobs with keys. */
const FENCED_KEYED = perRowSource((rows) => `WITH f AS (${heldLeasesSql(rows.params + 1)}),
     t AS (${rows.sql}),
     j AS (${INSERT_HELD}),
     ${rememberAll(true)}
   SELECT instance_id::text AS held, NULL::text AS id, NULL::bigint AS seq FROM f
   UNION ALL
   SELECT NULL, id, seq FROM j
   UNION ALL
   ${KEYS_CHECKED(true)}`);

/** Unfenced, some jobs with keys. */
const KEYED = perRowSource((rows) => `WITH t AS (${rows.sql}),
     j AS (${INSERT}),
     ${rememberAll(false)}
   SELECT NULL::text AS held, id, seq FROM j
   UNION ALL
   ${KEYS_CHECKED(false)}`);

/** A lease the statement fences with: held by `nodeId` at `epoch` (src/queue/types.ts LeaseRef), of its instance. */
export interface InstanceLeaseRef {
  instanceId: string;
  nodeId: string;
  epoch: number;
}

export interface FencedInsert {
  /** the instances whose lease held (null: no fence asked) */
  held: Set<string> | null;
  /** per job in the given order: as inserted, or null when its instance's lease did not hold */
  jobs: (Job | null)[];
}

/**
 * Insert `jobs`, remembering their idempotency keys, in one statement, under `leases` unless null. A broken
 * connection meanwhile is CommitOutcomeUnknown (src/store/pool.ts oneStatement); a key taken meanwhile fails
 * it whole with `keyTakenConcurrently`.
 */
export async function insertJobsFenced(pool: Pool, jobs: readonly NewJob[], leases: readonly InstanceLeaseRef[] | null): Promise<FencedInsert> {
  if (jobs.length > ROWS_PER_STATEMENT) throw new Error(`insertJobsFenced takes at most ${ROWS_PER_STATEMENT} jobs`);
  const keyed = jobs.some((j) => j.idempotencyKey !== null);
  const source = rowSource(jobs.length);
  const values = source.values(jobs, 0, jobs.length);
  type Row = { held?: string | null; id: string | null; seq: number | null };
  let rows: Row[];
  try {
    ({ rows } = leases
      ? await oneStatement<Row>(pool, keyed ? FENCED_KEYED(source) : FENCED(source), [
        ...values,
        leases.map((l) => l.instanceId),
        leases.map((l) => l.nodeId),
        leases.map((l) => l.epoch),
      ])
      : await oneStatement<Row>(pool, keyed ? KEYED(source) : insertUnkeyed(source), values));
  } catch (err) {
    if (isKeyTakenError(err)) throw keyTakenConcurrently();
    throw err;
  }
  const held = leases ? new Set<string>() : null;
  const seqOf = new Map<string, number>();
  for (const r of rows) {
    if (r.held) held?.add(r.held);
    else if (r.id && r.seq !== null) seqOf.set(r.id, Number(r.seq));
  }
  return {
    held,
    jobs: jobs.map((j) => {
      const seq = seqOf.get(j.id);
      if (seq !== undefined) return insertedJob(j, seq);
      if (held && !held.has(j.instanceId)) return null;
      throw new Error(`job ${j.id} was not inserted`);
    }),
  };
}

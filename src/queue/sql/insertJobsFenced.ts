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
 * It can look up keys itself (`KeyCheck`): for an acceptance decided as if none of its keys were remembered,
 * the instances of which one is remembered write nothing and are named in the answer with their remembered keys
 * and those keys' jobs (their batches are decided again by the caller, from that), so a group needs no read
 * before its write, nor after it for its replays.
 *
 * Strategy: the rows (src/queue/sql/job-rows.ts) and the insert of insertJobs.ts, with the fence and the key
 * check as CTEs (every CTE of a statement reads the same snapshot: the check does not see the keys the
 * statement itself remembers); the answer is the held instances, the instances with a known key (their keys'
 * jobs as json, src/queue/sql/row.ts JOB_ROW_JSON: a union's rows share their columns) and the inserted jobs'
 * seq, in one result. At most ROWS_PER_STATEMENT jobs (one statement).
 */
import { oneStatement, type Pool } from '../../store/pool.js';
import { heldLeasesSql } from '../../store/lease-fence-sql.js';
import type { Job, NewJob } from '../job.js';
import { INSERT, KEY_ROWS, ROWS_PER_STATEMENT, insertedJob } from './insertJobs.js';
import { ARRAY_ROWS, JSON_ROWS, perRowSource, rowSourceFor, type RowSource } from './job-rows.js';
import { allKeysRemembered, isKeyTakenError, keyTakenConcurrently, rememberKeysFrom } from './rememberIdempotencyKeys.js';
import { JOB_ROW_JSON, jobRowFromJson, rowToJob } from './row.js';
import type { KeyedJob } from './findByIdempotencyKeys.js';

/** A row of `t` whose instance's lease held. */
const HELD = 't.inst IN (SELECT instance_id FROM f)';
/** A row of `t` whose instance has none of the checked keys remembered. */
const UNKNOWN = 't.inst NOT IN (SELECT inst FROM x)';

/**
 * The checked keys that are remembered, younger than the retention (`h`): the pairs are two arrays (instance
 * ids, keys) from `$first` on, the oldest instant still remembered (epoch ms) after them. Each pair is one
 * probe of the keys' primary key (the LIMIT keeps the lateral a nested loop): a join the planner is free to
 * turn around could read every key younger than the retention instead, on a table it believes small. Its
 * instances are `x` (they write nothing); its keys with their jobs are `y`, what those instances' batches
 * decide again from, so that a replay needs no read after the statement (none in a group without replays).
 */
const rememberedKeysSql = (first: number) => `SELECT w.inst, w.key, hit.job_id, hit.key_hash, hit.key_at
       FROM unnest($${first}::uuid[], $${first + 1}::text[]) AS w (inst, key)
       CROSS JOIN LATERAL (SELECT ik.job_id, ik.payload_hash AS key_hash, (extract(epoch FROM ik.created_at) * 1000)::float8 AS key_at
                             FROM idempotency_keys ik
                            WHERE ik.instance_id = w.inst AND ik.key = w.key AND ik.created_at > to_timestamp($${first + 2}::float8 / 1000)
                            LIMIT 1) AS hit`;

/**
 * The statement, one text per form of the rows and per choice: `fenced` (the leases' three arrays follow the
 * rows' parameters), `keyed` (some jobs have keys: remembered, and the statement fails whole unless every one
 * was), `checked` (the keys to look for follow: their instances write nothing). Its rows: the held instances
 * (`held`), the instances with a known key (`known`; with `checked`, a row per remembered key of theirs too:
 * `key`, `key_hash`, `key_at`, `job`), the inserted jobs (`id`, `seq`).
 */
function statement(fenced: boolean, keyed: boolean, checked: boolean): (rows: RowSource) => string {
  return perRowSource((rows) => {
    const checkAt = rows.params + (fenced ? 4 : 1);
    const conditions = [...(fenced ? [HELD] : []), ...(checked ? [UNKNOWN] : [])];
    const where = conditions.join(' AND ');
    const insert = where ? INSERT.replace('FROM t ORDER BY ord', `FROM t WHERE ${where} ORDER BY ord`) : INSERT;
    if (insert === INSERT && where) throw new Error('insertJobsFenced: the insert of insertJobs.ts changed shape; its conditions would not apply');
    const keyRows = where ? `${KEY_ROWS} AND ${where}` : KEY_ROWS;
    const ctes = [
      ...(fenced ? [`f AS (${heldLeasesSql(rows.params + 1)})`] : []),
      `t AS (${rows.sql})`,
      ...(checked
        ? [
            `h AS (${rememberedKeysSql(checkAt)})`,
            'x AS (SELECT DISTINCT inst FROM h)',
            `y AS (SELECT h.inst, h.key, h.key_hash, h.key_at, ${JOB_ROW_JSON} AS job FROM h JOIN jobs j ON j.id = h.job_id)`,
          ]
        : []),
      `j AS (${insert})`,
      ...(keyed ? [`k AS (${rememberKeysFrom(keyRows)})`] : []),
    ];
    const answers = [
      `SELECT NULL::text AS held, NULL::text AS known, id, seq${checked ? ', NULL::text AS key, NULL::text AS key_hash, NULL::float8 AS key_at, NULL::json AS job' : ''} FROM j`,
      ...(fenced ? [`SELECT instance_id::text, NULL, NULL, NULL${checked ? ', NULL, NULL, NULL, NULL' : ''} FROM f`] : []),
      ...(checked ? ['SELECT NULL, inst::text, NULL, NULL, NULL, NULL, NULL, NULL FROM x', 'SELECT NULL, inst::text, NULL, NULL, key, key_hash, key_at, job FROM y'] : []),
      // a key that another writer took after the caller looked (or did not look): nothing of the statement stays
      ...(keyed ? [`SELECT NULL, NULL, NULL, NULL${checked ? ', NULL, NULL, NULL, NULL' : ''} WHERE NOT ${allKeysRemembered('SELECT count(*) FROM k', `SELECT count(*) FROM (${keyRows}) AS w`)}`] : []),
    ];
    return `WITH ${ctes.join(',\n     ')}\n   ${answers.join('\n   UNION ALL\n   ')}`;
  });
}

/** Every statement, built once: index fenced * 4 + keyed * 2 + checked. */
const STATEMENTS = [false, true].flatMap((fenced) => [false, true].flatMap((keyed) => [false, true].map((checked) => statement(fenced, keyed, checked))));

/**
 * Each statement is prepared under its own name on each connection (src/store/pool.ts oneStatement): parsed
 * once per connection instead of for every group, and planned once PostgreSQL finds its generic plan no
 * dearer than the custom ones. The text under a name never changes (one per index and form of the rows).
 * Measured: 16 rows of 16 instances, sequential on an idle machine, three pairs alternating:
 * p50 2.1-2.9 ms prepared against 3.0-4.1 ms parsed and planned each time.
 */
function statementName(which: number, rows: RowSource): string | undefined {
  if (rows === JSON_ROWS) return `insert_jobs_fenced_${which}_json`;
  if (rows === ARRAY_ROWS) return `insert_jobs_fenced_${which}_arrays`;
  return undefined;
}

/** A lease the statement fences with: held by `nodeId` at `epoch` (src/queue/types.ts LeaseRef), of its instance. */
export interface InstanceLeaseRef {
  instanceId: string;
  nodeId: string;
  epoch: number;
}

/**
 * Idempotency keys the statement looks for itself (an optimistic acceptance decided as if none were known): an
 * instance of which one is remembered, younger than `since`, writes nothing and is named in `known`.
 */
export interface KeyCheck {
  /** pairs: `keys[i]` of `instanceIds[i]` */
  instanceIds: string[];
  keys: string[];
  /** epoch ms: a key remembered at or before it is past the retention */
  since: number;
}

/** A checked key found remembered: its job and payload hash, and when it was remembered (epoch ms). */
export interface RememberedKey extends KeyedJob {
  at: number;
}

export interface FencedInsert {
  /** the instances whose lease held (null: no fence asked) */
  held: Set<string> | null;
  /** the instances of which a checked key is remembered: none of their jobs was inserted */
  known: Set<string>;
  /** of each `known` instance, every checked key of it remembered (younger than the check's `since`) */
  remembered: Map<string, Map<string, RememberedKey>>;
  /** per job in the given order: as inserted, or null when its instance's lease did not hold or it is `known` */
  jobs: (Job | null)[];
}

/**
 * Insert `jobs`, remembering their idempotency keys, in one statement, under `leases` unless null, skipping
 * the instances of which a key of `check` is already remembered. A broken connection meanwhile is
 * CommitOutcomeUnknown (src/store/pool.ts oneStatement); a key taken meanwhile fails it whole with
 * `keyTakenConcurrently`.
 */
export async function insertJobsFenced(pool: Pool, jobs: readonly NewJob[], leases: readonly InstanceLeaseRef[] | null, check: KeyCheck | null = null): Promise<FencedInsert> {
  if (jobs.length > ROWS_PER_STATEMENT) throw new Error(`insertJobsFenced takes at most ${ROWS_PER_STATEMENT} jobs`);
  const keyed = jobs.some((j) => j.idempotencyKey !== null);
  const checked = check !== null && check.keys.length > 0;
  const source = rowSourceFor(jobs, 0, jobs.length);
  const which = (leases ? 4 : 0) + (keyed ? 2 : 0) + (checked ? 1 : 0);
  const sql = (STATEMENTS[which] as (rows: RowSource) => string)(source);
  const params: unknown[] = source.values(jobs, 0, jobs.length);
  if (leases) params.push(leases.map((l) => l.instanceId), leases.map((l) => l.nodeId), leases.map((l) => l.epoch));
  if (checked) params.push(check.instanceIds, check.keys, check.since);
  type Row = { held: string | null; known: string | null; id: string | null; seq: number | null; key?: string | null; key_hash?: string | null; key_at?: number | null; job?: Record<string, unknown> | null };
  let rows: Row[];
  try {
    ({ rows } = await oneStatement<Row>(pool, sql, params, statementName(which, source)));
  } catch (err) {
    if (isKeyTakenError(err)) throw keyTakenConcurrently();
    throw err;
  }
  const held = leases ? new Set<string>() : null;
  const known = new Set<string>();
  const remembered = new Map<string, Map<string, RememberedKey>>();
  const seqOf = new Map<string, number>();
  for (const r of rows) {
    if (r.held) held?.add(r.held);
    else if (r.known) {
      known.add(r.known);
      if (r.key && r.job && r.key_hash && typeof r.key_at === 'number') {
        let m = remembered.get(r.known);
        if (!m) remembered.set(r.known, (m = new Map()));
        m.set(r.key, { job: rowToJob(jobRowFromJson(r.job)), payloadHash: r.key_hash, at: r.key_at });
      }
    } else if (r.id && r.seq !== null) seqOf.set(r.id, Number(r.seq));
  }
  return {
    held,
    known,
    remembered,
    jobs: jobs.map((j) => {
      const seq = seqOf.get(j.id);
      if (seq !== undefined) return insertedJob(j, seq);
      if ((held && !held.has(j.instanceId)) || known.has(j.instanceId)) return null;
      throw new Error(`job ${j.id} was not inserted`);
    }),
  };
}

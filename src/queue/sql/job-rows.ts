/**
 * A batch of new jobs as rows of a statement: `t(id, inst, state, kind, route, chat, phone, payload, hash, key,
 * prio, nb, qa, sa, ea, prev, boot, ord)`, `ord` the job's position in the batch (from 1), instants as epoch
 * milliseconds (exact through float8 / 1000). The inserts (src/queue/sql/insertJobs.ts, insertJobsFenced.ts)
 * read `t`; a batch of thousands is one round trip and a handful of parameters either way (a multi-row VALUES
 * would need a parameter per cell).
 *
 * Two forms, chosen by the batch's size (`rowSourceFor`), because each wins at one end:
 * - **JSON** (`$1`, one document read by json_to_recordset): that function builds a hash table for every object
 *   it reads, which makes each row about 15 µs dearer in PostgreSQL than from the arrays;
 * - **arrays** (`$1 … $17`, one per column, unnested WITH ORDINALITY): cheap per row, but resolving the 17
 *   unnest calls costs every statement about 0.5 ms of parse analysis.
 * bench/job-rows.ts runs one form's statement in turn with the other's (each a median of 20 rounds; arrays /
 * JSON, three runs): 1.64–1.65 at 8 rows, 1.24–1.32 at 16, 1.12–1.20 at 32, 0.99–1.11 at 64, 0.55–0.61 at
 * 1,000; at 128 two runs gave 0.62–0.63 and one 1.08–1.10. So the arrays from 64 rows on, where they stop
 * losing. An acceptance batch (one to a few dozen requests) takes the JSON, a send-bulk the arrays, with its
 * columns of one value as single parameters (`rowSourceFor`, below; columns / arrays 0.76–0.98 from 64 rows).
 * The arrays are PostgreSQL array literals written here (src/queue/sql/array-literal.ts): pg's own array
 * serialisation escapes each cell by a slower path, which dominated a send-bulk of 5,000 when it was tried.
 */
import { acceptJob, applyJobEvent, type JobState } from '../../../machines/job.machine.js';
import type { NewJob } from '../job.js';
import { NumberArray, TextArray } from './array-literal.js';

const INITIAL = acceptJob().next;
const PLANNED = applyJobEvent(INITIAL, { type: 'PLANNED' })?.next;

/** The state a new job is stored in: the job machine's initial state, PLANNED when acceptance gave it a slot. */
export function insertedState(job: Pick<NewJob, 'scheduledAt'>): JobState {
  if (job.scheduledAt === null) return INITIAL;
  if (PLANNED === undefined) throw new Error('the job machine does not allow PLANNED from its initial state');
  return PLANNED;
}

export interface RowSource {
  /** `SELECT … AS t(…, ord)`, reading $1 … $params */
  sql: string;
  /** how many parameters it takes; a statement's own parameters follow them */
  params: number;
  /** its parameters for `jobs[from, to)` */
  values(jobs: readonly NewJob[], from: number, to: number): (string | null)[];
}

/**
 * The columns of the rows in their order ($1 … $17): each one's name in `t`, its PostgreSQL type, and how a job
 * gives its value (a number column's as a number, every other as text: a jsonb's is the JSON text).
 */
const COLUMN_DEFS: readonly {
  name: string;
  type: string;
  number: boolean;
  of: (j: NewJob) => string | number | null;
  /** never one value in every row, so not looked at by rowSourceFor: ids are unique, each payload a message of its own */
  varies?: true;
}[] = [
  { name: 'id', type: 'text', number: false, of: (j) => j.id, varies: true },
  { name: 'inst', type: 'uuid', number: false, of: (j) => j.instanceId },
  { name: 'state', type: 'text', number: false, of: (j) => insertedState(j) },
  { name: 'kind', type: 'text', number: false, of: (j) => j.kind },
  { name: 'route', type: 'text', number: false, of: (j) => j.originRoute },
  { name: 'chat', type: 'text', number: false, of: (j) => j.chatId },
  { name: 'phone', type: 'text', number: false, of: (j) => j.phone },
  { name: 'payload', type: 'jsonb', number: false, of: (j) => JSON.stringify(j.payload), varies: true },
  { name: 'hash', type: 'text', number: false, of: (j) => j.payloadHash },
  { name: 'key', type: 'text', number: false, of: (j) => j.idempotencyKey },
  { name: 'prio', type: 'smallint', number: true, of: (j) => j.priority },
  { name: 'nb', type: 'float8', number: true, of: (j) => j.notBefore },
  { name: 'qa', type: 'float8', number: true, of: (j) => j.queuedAt },
  { name: 'sa', type: 'float8', number: true, of: (j) => j.scheduledAt },
  { name: 'ea', type: 'float8', number: true, of: (j) => j.expiresAt },
  { name: 'prev', type: 'text', number: false, of: (j) => j.previousJobId },
  { name: 'boot', type: 'text', number: false, of: (j) => j.callerBoot },
];

const COLUMNS = COLUMN_DEFS.map((c) => c.name).join(', ');

/** One job as a record of the JSON document (instants as epoch milliseconds). */
const jobRecord = (j: NewJob) => ({
  id: j.id, inst: j.instanceId, state: insertedState(j), kind: j.kind, route: j.originRoute, chat: j.chatId, phone: j.phone,
  payload: j.payload, hash: j.payloadHash, key: j.idempotencyKey, prio: j.priority, nb: j.notBefore, qa: j.queuedAt,
  sa: j.scheduledAt, ea: j.expiresAt, prev: j.previousJobId, boot: j.callerBoot,
});

export const JSON_ROWS: RowSource = {
  sql: `SELECT * FROM ROWS FROM (json_to_recordset($1::json) AS (${COLUMN_DEFS.map((c) => `${c.name} ${c.type}`).join(', ')}))
          WITH ORDINALITY AS t(${COLUMNS}, ord)`,
  params: 1,
  values: (jobs, from, to) => [JSON.stringify(jobs.slice(from, to).map(jobRecord))],
};

/** Every column an array (`$1 … $17`, unnested WITH ORDINALITY): the form when no column holds one value in every row. */
export const ARRAY_ROWS: RowSource = columnsRows(0);

/** From this many rows a statement takes the arrays (see above: around it the two forms are close). */
export const ARRAYS_FROM = 64;

/**
 * A large batch of which some columns hold one value in every row (a send-bulk: one instance, one route, one
 * priority, one instant of acceptance, no keys…): those columns travel as one parameter each, read as a constant
 * of every row, and only the others as arrays. PostgreSQL parses each array element with its type's input
 * function, about 0.6 µs a cell: of a send-bulk's 17 columns 12 are such constants, and a statement of 1,000 of
 * its rows took 36 ms instead of 43 (median of 18 in turn, one run here), its parameters written in 2.6 ms of
 * the client's CPU instead of 4.3. `mask` has bit i set for each constant column i of COLUMN_DEFS; the statement
 * keeps the 17 parameters in their places, so a statement's own parameters follow them as with the arrays.
 * Not a named (prepared) statement unless every column is an array (ARRAY_ROWS, mask 0): its text depends on
 * the batch (src/queue/sql/insertJobsFenced.ts names only the two fixed forms).
 */
function columnsRows(mask: number): RowSource {
  const constant = (i: number) => (mask & (1 << i)) !== 0;
  const arrays = COLUMN_DEFS.map((c, i) => ({ ...c, i })).filter((c) => !constant(c.i));
  const select = COLUMN_DEFS.map((c, i) => (constant(i) ? `$${i + 1}::${c.type} AS ${c.name}` : `u.${c.name}`)).join(', ');
  return {
    sql: `SELECT ${select}, u.ord
            FROM unnest(${arrays.map((c) => `$${c.i + 1}::${c.type}[]`).join(', ')}) WITH ORDINALITY AS u(${arrays.map((c) => c.name).join(', ')}, ord)`,
    params: COLUMN_DEFS.length,
    values(jobs, from, to) {
      const first = jobs[from] as NewJob;
      return COLUMN_DEFS.map((c, i) => {
        if (constant(i)) {
          const v = c.of(first);
          // the statement's text was chosen for these rows: a row that differs would be written with another's value
          for (let k = from + 1; k < to; k++) if (c.of(jobs[k] as NewJob) !== v) throw new Error(`job rows: column ${c.name} is not the same in every row`);
          // as NumberArray would refuse it in an array
          if (typeof v === 'number' && !Number.isFinite(v)) throw new Error(`not a finite number: ${v}`);
          return v === null ? null : String(v);
        }
        if (c.number) {
          const a = new NumberArray();
          for (let k = from; k < to; k++) a.push(c.of(jobs[k] as NewJob) as number | null);
          return a.literal();
        }
        const a = new TextArray();
        if (c.type === 'jsonb') for (let k = from; k < to; k++) a.pushJson(c.of(jobs[k] as NewJob) as string);
        else for (let k = from; k < to; k++) a.push(c.of(jobs[k] as NewJob) as string | null);
        return a.literal();
      });
    },
  };
}

const COLUMNS_FORMS = new Map<number, RowSource>();
const MAX_COLUMNS_FORMS = 64;

/**
 * The form for a statement of `jobs[from, to)`: the JSON document below ARRAYS_FROM rows; from it the arrays,
 * with the columns that hold one value in every row as single parameters (`columnsRows`) when there are any.
 */
export function rowSourceFor(jobs: readonly NewJob[], from: number, to: number): RowSource {
  if (to - from < ARRAYS_FROM) return JSON_ROWS;
  const first = jobs[from] as NewJob;
  let mask = 0;
  COLUMN_DEFS.forEach((c, i) => {
    if (c.varies) return;
    const v = c.of(first);
    for (let k = from + 1; k < to; k++) if (c.of(jobs[k] as NewJob) !== v) return;
    mask |= 1 << i;
  });
  if (mask === 0) return ARRAY_ROWS;
  let form = COLUMNS_FORMS.get(mask);
  if (!form) {
    form = columnsRows(mask);
    // a handful of masks in practice; past the cap a form is built for its statement alone
    if (COLUMNS_FORMS.size < MAX_COLUMNS_FORMS) COLUMNS_FORMS.set(mask, form);
  }
  return form;
}

/** A statement built around a row source, built once for each form. */
export function perRowSource(build: (rows: RowSource) => string): (rows: RowSource) => string {
  // weak: a form past the cap of `rowSourceFor` lives for its statement only
  const built = new WeakMap<RowSource, string>();
  return (rows) => {
    let sql = built.get(rows);
    if (sql === undefined) built.set(rows, (sql = build(rows)));
    return sql;
  };
}

/**
 * A batch of new jobs as rows of a statement: `t(id, inst, state, kind, route, chat, phone, payload, hash, key,
 * prio, nb, qa, sa, ea, prev, boot, ord)`, `ord` the job's position in the batch (from 1), instants as epoch
 * milliseconds (exact through float8 / 1000). The inserts (src/queue/sql/insertJobs.ts, insertJobsFenced.ts)
 * read `t`; a batch of thousands is one round trip and a handful of parameters either way (a multi-row VALUES
 * would need a parameter per cell).
 *
 * Two forms, chosen by the batch's size (`rowSource`), because each wins at one end:
 * - **JSON** (`$1`, one document read by json_to_recordset): that function builds a hash table for every object
 *   it reads, which makes each row about 15 µs dearer in PostgreSQL than from the arrays;
 * - **arrays** (`$1 … $17`, one per column, unnested WITH ORDINALITY): cheap per row, but resolving the 17
 *   unnest calls costs every statement about 0.5 ms of parse analysis.
 * bench/job-rows.ts runs one form's statement in turn with the other's (each a median of 20 rounds; arrays /
 * JSON, three runs): 1.64–1.65 at 8 rows, 1.24–1.32 at 16, 1.12–1.20 at 32, 0.99–1.11 at 64, 0.55–0.61 at
 * 1,000; at 128 two runs gave 0.62–0.63 and one 1.08–1.10. So the arrays from 64 rows on, where they stop
 * losing. An acceptance batch (one to a few dozen requests) takes the JSON, a send-bulk the arrays.
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
  values(jobs: readonly NewJob[], from: number, to: number): string[];
}

const COLUMNS = 'id, inst, state, kind, route, chat, phone, payload, hash, key, prio, nb, qa, sa, ea, prev, boot';

/** One job as a record of the JSON document (instants as epoch milliseconds). */
const jobRecord = (j: NewJob) => ({
  id: j.id, inst: j.instanceId, state: insertedState(j), kind: j.kind, route: j.originRoute, chat: j.chatId, phone: j.phone,
  payload: j.payload, hash: j.payloadHash, key: j.idempotencyKey, prio: j.priority, nb: j.notBefore, qa: j.queuedAt,
  sa: j.scheduledAt, ea: j.expiresAt, prev: j.previousJobId, boot: j.callerBoot,
});

export const JSON_ROWS: RowSource = {
  sql: `SELECT * FROM ROWS FROM (json_to_recordset($1::json) AS (id text, inst uuid, state text, kind text, route text,
          chat text, phone text, payload jsonb, hash text, key text, prio smallint, nb float8, qa float8, sa float8,
          ea float8, prev text, boot text)) WITH ORDINALITY AS t(${COLUMNS}, ord)`,
  params: 1,
  values: (jobs, from, to) => [JSON.stringify(jobs.slice(from, to).map(jobRecord))],
};

export const ARRAY_ROWS: RowSource = {
  sql: `SELECT * FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
          $8::jsonb[], $9::text[], $10::text[], $11::smallint[], $12::float8[], $13::float8[], $14::float8[],
          $15::float8[], $16::text[], $17::text[]) WITH ORDINALITY AS t(${COLUMNS}, ord)`,
  params: 17,
  values(jobs, from, to) {
    const id = new TextArray(), inst = new TextArray(), state = new TextArray(), kind = new TextArray(), route = new TextArray();
    const chat = new TextArray(), phone = new TextArray(), payload = new TextArray(), hash = new TextArray(), key = new TextArray();
    const prio = new NumberArray(), nb = new NumberArray(), qa = new NumberArray(), sa = new NumberArray(), ea = new NumberArray();
    const prev = new TextArray(), boot = new TextArray();
    for (let k = from; k < to; k++) {
      const j = jobs[k] as NewJob;
      id.push(j.id); inst.push(j.instanceId); state.push(insertedState(j)); kind.push(j.kind); route.push(j.originRoute);
      chat.push(j.chatId); phone.push(j.phone); payload.pushJson(JSON.stringify(j.payload)); hash.push(j.payloadHash);
      key.push(j.idempotencyKey); prio.push(j.priority); nb.push(j.notBefore); qa.push(j.queuedAt); sa.push(j.scheduledAt);
      ea.push(j.expiresAt); prev.push(j.previousJobId); boot.push(j.callerBoot);
    }
    return [id, inst, state, kind, route, chat, phone, payload, hash, key, prio, nb, qa, sa, ea, prev, boot].map((a) => a.literal());
  },
};

/** From this many rows a statement takes the arrays (see above: around it the two forms are close). */
export const ARRAYS_FROM = 64;

/** The form for a statement of `rows` jobs. */
export const rowSource = (rows: number): RowSource => (rows >= ARRAYS_FROM ? ARRAY_ROWS : JSON_ROWS);

/** A statement built around a row source, built once for each form. */
export function perRowSource(build: (rows: RowSource) => string): (rows: RowSource) => string {
  const json = build(JSON_ROWS);
  const arrays = build(ARRAY_ROWS);
  return (rows) => (rows === ARRAY_ROWS ? arrays : rows === JSON_ROWS ? json : build(rows));
}

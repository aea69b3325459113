/**
 * Write slots of waiting jobs: a new slot by the job machine's REPLANNED, no slot (null) by its UNSCHEDULED
 * (waiting without a slot until a later plan or the job's expiry), each only from the states the event is
 * allowed in; a job that left them meanwhile (cancelled, expired, claimed) is not touched. No `message.*`
 * event: a new slot is not one (there is no message.scheduled).
 *
 * Strategy: one UPDATE … FROM unnest(ids, slots) per 5,000 rows that changed (a re-plan of a full queue at the
 * default QUEUE_MAX_PENDING is one round trip, not 5,000), and only those rows: the caller passes the slots
 * that differ from what PostgreSQL holds (src/queue/waiting-jobs.ts), so an unchanged job costs no row version.
 * Slots travel as epoch milliseconds (exact through float8 / 1000, as new jobs' instants do in
 * src/queue/sql/job-rows.ts), not as timestamps: 1,000 Date objects turned to text by the client and parsed
 * back by the server were a part of a re-plan's write of 5,000 moved slots (40.0 → 33.9 ms, median of 16 in
 * turn in one run here). Both lists travel as one comma-joined string each, split by the server
 * (`string_to_array`; a slot of none is the element `n`), as a round of leases does (src/cluster/leases.ts):
 * pg's array encoding quotes and escapes every element, and 4,999 moved slots took 44.6 ms as arrays and 40.1
 * ms joined (median of 12 in turn, machine AG; ids are the gateway's own, `wq_` and letters and digits, never
 * a comma). Not a named (prepared) statement: its generic plan, made while the table was small,
 * stayed cached once the table had grown, and a re-plan under load then took seconds. Returns the number of
 * rows written.
 */
import { bulkJobEvent } from '../../../machines/job.machine.js';
import type { Queryable } from '../../store/pool.js';
import type { SlotWrite } from '../planning-types.js';
import { sqlStates } from './row.js';

const planned = bulkJobEvent('REPLANNED');
const unscheduled = bulkJobEvent('UNSCHEDULED');
const SQL = `UPDATE jobs j
                SET scheduled_at = to_timestamp(s.at / 1000), plan_epoch = $4,
                    state = CASE WHEN s.at IS NULL THEN '${unscheduled.step.next}' ELSE '${planned.step.next}' END
               FROM unnest(string_to_array($2, ','), string_to_array($3, ',', 'n')::float8[]) AS s(id, at)
              WHERE j.id = s.id AND j.instance_id = $1
                AND ((s.at IS NOT NULL AND j.state IN (${sqlStates(planned.from)}))
                  OR (s.at IS NULL AND j.state IN (${sqlStates(unscheduled.from)})))`;

/**
 * Rows per statement: a re-plan of 5,000 is one statement, 23–35 ms here, far inside the statement deadline
 * (4 s); a larger queue is several, in one transaction. 5,000 moved slots in one statement against five of
 * 1,000, in turn in one run (twice 12 each): median 22.7 / 22.7 against 31.7 / 30.7 ms.
 */
const ROWS_PER_STATEMENT = 5_000;

/** The jobs' ids as one string; an id holding the separator would split wrongly, so none is let through. */
function joinedIds(part: readonly SlotWrite[]): string {
  if (part.some((s) => s.jobId.includes(','))) throw new Error('saveSlots: a job id holds a comma');
  return part.map((s) => s.jobId).join(',');
}

export async function saveSlots(q: Queryable, instanceId: string, slots: readonly SlotWrite[], epoch: number): Promise<number> {
  let n = 0;
  for (let i = 0; i < slots.length; i += ROWS_PER_STATEMENT) {
    const part = slots.slice(i, i + ROWS_PER_STATEMENT);
    const r = await q.query(SQL, [instanceId, joinedIds(part), part.map((s) => s.scheduledAt ?? 'n').join(','), epoch]);
    n += r.rowCount ?? 0;
  }
  return n;
}

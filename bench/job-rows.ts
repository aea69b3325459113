/**
 * The two forms in which a statement's new jobs reach PostgreSQL (src/queue/sql/job-rows.ts): one JSON
 * document read by json_to_recordset, or one array per column unnested. The insert statement of each form
 * runs in turn with the other, for batches of several sizes, each statement in its own transaction rolled
 * back (the table does not grow between them). Prints the median time of a statement for each form and size,
 * the client CPU of writing its parameters, and `arrays / JSON`; the gateway switches to the arrays from
 * ARRAYS_FROM rows on, which is right when the ratio is above 1 below it and under 1 above it.
 * From ARRAYS_FROM rows a third form runs in turn with them: the arrays with the columns that hold one value in
 * every row sent as single parameters (rowSourceFor; here 12 of the 17, as in a send-bulk), and `columns / arrays`.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/job-rows.ts
 *   BENCH_ROUNDS=20
 */
import { randomUUID } from 'node:crypto';
import { createTestDb } from '../test/helpers/db.js';
import { ARRAY_ROWS, ARRAYS_FROM, JSON_ROWS, rowSourceFor, type RowSource } from '../src/queue/sql/job-rows.js';
import { insertUnkeyed } from '../src/queue/sql/insertJobs.js';
import { newJobId } from '../src/ids.js';
import type { NewJob } from '../src/queue/job.js';
import { fmt } from './lib/load.js';
import { median } from './lib/queue-fixture.js';

if (!process.env.TEST_DATABASE_URL) {
  console.error('bench/job-rows.ts needs TEST_DATABASE_URL (a PostgreSQL server)');
  process.exit(2);
}
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const SIZES = (process.env.BENCH_SIZES ?? "8,16,32,64,128,1000").split(",").map(Number);
/** statements per round and form: small batches are timed over many, so that one slow round trip does not decide */
const per = (size: number) => Math.max(1, Math.round(2_000 / size));

const db = await createTestDb('bench_job_rows');
const instanceId = randomUUID();
await db.pool.query("INSERT INTO instances (id, name, driver) VALUES ($1, 'rows', 'sandbox')", [instanceId]);
const now = Date.now();
const jobs = (n: number): NewJob[] => Array.from({ length: n }, (_, i) => ({
  id: newJobId(), instanceId, originRoute: '/api/v2/send-message', chatId: `49151${String(i).padStart(8, '0')}@c.us`,
  phone: `49151${String(i).padStart(8, '0')}`, payloadHash: null, idempotencyKey: null, priority: 5, notBefore: null,
  queuedAt: now, scheduledAt: now + i * 1_000, expiresAt: now + 86_400_000, previousJobId: null, callerBoot: null,
  kind: 'text', payload: { body: `message ${i} with "quotes" and ü`, chatId: `49151${String(i).padStart(8, '0')}@c.us` },
}));

const client = await db.pool.connect();
/** One form's statement over `batches`: wall ms per statement, and the client CPU of writing the parameters per statement. */
async function run(rows: RowSource, batches: NewJob[][]): Promise<{ ms: number; cpuUs: number }> {
  const sql = insertUnkeyed(rows);
  let ms = 0;
  let cpu = 0;
  for (const b of batches) {
    const c0 = process.cpuUsage();
    const params = rows.values(b, 0, b.length);
    const c = process.cpuUsage(c0);
    cpu += c.user + c.system;
    await client.query('BEGIN');
    const t0 = performance.now();
    const r = await client.query(sql, params);
    ms += performance.now() - t0;
    await client.query('ROLLBACK');
    if (r.rowCount !== b.length) throw new Error(`${b.length} jobs, ${r.rowCount} inserted`);
  }
  return { ms: ms / batches.length, cpuUs: cpu / batches.length };
}

console.log(`job rows: one insert statement per batch, JSON document vs arrays, in turn; ${ROUNDS} rounds; arrays from ${ARRAYS_FROM} rows in the gateway`);
try {
  for (const size of SIZES) {
    const json: number[] = [], arrays: number[] = [], jsonCpu: number[] = [], arraysCpu: number[] = [], cols: number[] = [], colsCpu: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const batches = Array.from({ length: per(size) }, () => jobs(size));
      const forms: [RowSource, number[], number[]][] = [[JSON_ROWS, json, jsonCpu], [ARRAY_ROWS, arrays, arraysCpu]];
      if (size >= ARRAYS_FROM) {
        const columns = rowSourceFor(batches[0] as NewJob[], 0, size);
        if (columns === ARRAY_ROWS || columns === JSON_ROWS) throw new Error('the batch has no column of one value');
        forms.push([columns, cols, colsCpu]);
      }
      // alternate which goes first, so that neither always meets a warmer cache
      const order = r % 2 === 0 ? forms : [...forms].reverse();
      for (const [rows, times, cpus] of order) {
        const f = await run(rows, batches);
        times.push(f.ms);
        cpus.push(f.cpuUs);
      }
    }
    const j = median(json);
    const a = median(arrays);
    const c = size >= ARRAYS_FROM ? `  columns ${fmt(median(cols), 2)} ms  columns / arrays ${fmt(median(cols) / a, 2)} (${fmt(median(colsCpu), 0)} µs)` : '';
    console.log(`${String(size).padStart(5)} rows: JSON ${fmt(j, 2)} ms  arrays ${fmt(a, 2)} ms  arrays / JSON ${fmt(a / j, 2)}  (client writes its parameters in ${fmt(median(jsonCpu), 0)} / ${fmt(median(arraysCpu), 0)} µs; the gateway uses ${size >= ARRAYS_FROM ? 'columns' : 'JSON'})${c}`);
  }
} finally {
  client.release();
  await db.close();
}

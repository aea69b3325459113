/**
 * The sends made while the store was away, kept on disk (src/queue/degraded-journal.ts): what a journal says is
 * still unwritten, and a start writing it to the dispatch history: once, for instances that still exist, moving
 * the last dispatch forward, the file removed after. Found from the outside: a gateway SIGKILLed while degraded
 * forgot its three sends of the hour, and after the restart the hourly limit let three more through. (That the
 * sends reach the journal while degraded is held by store-outage.test.ts.) And the outcomes the store did not
 * take: a start moves their jobs from `sending` as the outcome says, with the event, before any job left
 * `sending` becomes `unknown` (a gateway killed while the store was away, after a v1 caller was told "sent",
 * left that job `unknown`; the whole path is held by test/e2e/crash-recovery.test.ts). Real PostgreSQL.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { createInstance, deleteInstance } from '../../src/store/instances.js';
import { DegradedJournal, journalFile, replayDegradedJournal, unstoredOutcomes, unwrittenSends, type EmitEvent } from '../../src/queue/degraded-journal.js';
import type { Queryable } from '../../src/store/pool.js';
import { createLogger, silentLogger } from '../../src/log.js';

let db: TestDb;
let dir = '';
before(async () => {
  db = await createTestDb('degraded_journal');
  dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-journal-'));
  await mkdir(path.join(dir, 'run'));
});
after(async () => {
  await db.close();
  await rm(dir, { recursive: true, force: true });
});

const line = (i: string, at: number, op: string) => `${JSON.stringify({ i, at, op })}\n`;
const noEvents: EmitEvent = async () => false;

const A = '0b7c4a52-7e1a-4c1e-9a3b-6f0c1d2e3f40';
const B = '1c8d5b63-8f2b-4d2f-8b4c-7a1d2e3f4051';

test('what is still unwritten: kept, less dropped and written; a torn last line and what this module never writes are skipped', () => {
  const text = line(A, 1, 'kept') + line(A, 2, 'kept') + line(B, 3, 'kept') + line(A, 1, 'dropped') + line(B, 3, 'written') + line(A, 5, 'kept') +
    line('not-a-uuid', 7, 'kept') + line(B, 1e300, 'kept') + line(B, 1.5, 'kept') + line(B, -1, 'kept') + '{"i":"a","at":';
  assert.deepEqual([...unwrittenSends(text)], [[A, [2, 5]]]);
});

test('the journal of a running process: written as sends are kept, removed once all are written or dropped', async () => {
  const file = path.join(dir, 'run', 'live.jsonl');
  const j = new DegradedJournal(file);
  j.kept(A, 10);
  j.kept(B, 11);
  j.dropped(A, 10);
  assert.deepEqual([...unwrittenSends(await readFile(file, 'utf8'))], [[B, [11]]], 'on disk before anything is written back');
  j.written(B, [11]);
  await assert.rejects(readFile(file, 'utf8'), { code: 'ENOENT' });
});

test('a start writes the unwritten sends to the history once, of instances that exist, and removes the journal', async () => {
  const now = Date.UTC(2026, 10, 29, 12, 0, 0);
  const { instance } = await createInstance(db.pool, { name: 'journaled', driver: 'sandbox' });
  const { instance: gone } = await createInstance(db.pool, { name: 'gone', driver: 'sandbox' });
  await deleteInstance(db.pool, gone.id);
  const file = journalFile(dir);
  const ats = [now - 120_000, now - 60_000, now - 30_000];
  const old = now - 25 * 3_600_000;
  // from a clock that was ahead (year 2100): written back, it would hold the instance's pause until then
  const future = Date.UTC(2100, 0, 1);
  const text = ats.map((at) => line(instance.id, at, 'kept')).join('') + line(instance.id, old, 'kept') + line(instance.id, future, 'kept') +
    line(gone.id, now - 1_000, 'kept');
  await writeFile(file, text);

  assert.equal(await replayDegradedJournal(db.pool, file, now, silentLogger(), noEvents), 2);
  await assert.rejects(readFile(file, 'utf8'), { code: 'ENOENT' }, 'removed');
  const history = async () =>
    (await db.pool.query<{ at: Date }>('SELECT dispatched_at AS at FROM dispatches WHERE instance_id = $1 ORDER BY 1', [instance.id])).rows.map((r) => r.at.getTime());
  assert.deepEqual(await history(), ats, 'the three of the last day, not the one older than any window nor the one from the future');
  const { rows } = await db.pool.query<{ at: Date }>('SELECT last_dispatch_at AS at FROM instances WHERE id = $1', [instance.id]);
  assert.equal(rows[0]?.at.getTime(), now - 30_000, 'the last dispatch moved forward');

  // a recovery that committed but was killed before it wrote `written`: the next start finds them there already
  await writeFile(file, text);
  await replayDegradedJournal(db.pool, file, now, silentLogger(), noEvents);
  assert.deepEqual(await history(), ats, 'not twice');
  assert.equal(await replayDegradedJournal(db.pool, file, now, silentLogger(), noEvents), 0, 'no journal: nothing');

  // a directory in its place: the start is refused naming the file and what to do
  await mkdir(file);
  await assert.rejects(replayDegradedJournal(db.pool, file, now, silentLogger(), noEvents), (err: Error) => {
    assert.ok(err.message.includes(file) && /move it away/.test(err.message), err.message);
    return true;
  });
  await rm(file, { recursive: true });
});

let n = 0;
async function addJob(q: Queryable, instanceId: string, state: string): Promise<string> {
  const id = `wq_t${String(++n).padStart(23, '0')}`;
  await q.query(
    `INSERT INTO jobs (id, instance_id, state, kind, origin_route, phone, payload, payload_hash, priority, queued_at, dispatched_at, terminal_at, expires_at)
     VALUES ($1, $2, $3, 'text', '/api/send-message', '4915112345678', '{"chatId":"4915112345678@c.us","body":"journaled"}', '', 9, now(), now(),
             CASE WHEN $3 IN ('sent','failed','unknown','cancelled','expired') THEN now() END, now() + interval '1 day')`,
    [id, instanceId, state],
  );
  if (state === 'sending') await q.query('INSERT INTO dispatches (instance_id, job_id, dispatched_at) VALUES ($1, $2, now())', [instanceId, id]);
  return id;
}

const outcomeLine = (i: string, j: string, at: number, o: unknown) => `${JSON.stringify({ i, at, op: 'outcome', j, o })}\n`;

test('the outcomes still to store: an outcome less those stored; one of a shape this module never writes is skipped', () => {
  const text = outcomeLine(A, 'wq_1', 5, { kind: 'confirmed', messageId: 'm1', callAt: 4 }) + outcomeLine(A, 'wq_2', 6, { kind: 'failed', resultCode: 'X', errorMessage: 'e' }) +
    `${JSON.stringify({ i: A, at: 7, op: 'stored', j: 'wq_2' })}\n` + outcomeLine(B, 'wq_3', 8, { kind: 'assumed', messageId: null }) +
    outcomeLine(B, 'wq_4', 9, { kind: 'confirmed' }) + outcomeLine(B, 'wq_5', 9, { kind: 'sent', messageId: 'm' }) + outcomeLine(B, 'a b', 9, { kind: 'unknown', unknownReason: 'r' }) +
    outcomeLine(B, 'wq_6', 10, { kind: 'unknown', unknownReason: 'r', extra: 1 }) + line(A, 3, 'kept');
  assert.deepEqual(unstoredOutcomes(text), [
    { instanceId: A, jobId: 'wq_1', outcome: { kind: 'confirmed', messageId: 'm1', callAt: 4 }, at: 5 },
    { instanceId: B, jobId: 'wq_3', outcome: { kind: 'assumed', messageId: null }, at: 8 },
    { instanceId: B, jobId: 'wq_6', outcome: { kind: 'unknown', unknownReason: 'r' }, at: 10 },
  ]);
  assert.deepEqual([...unwrittenSends(text)], [[A, [3]]], 'outcome lines are no sends');
});

test('a running process journals an outcome before it is stored; the file stays while a send or an outcome is open', async () => {
  const file = path.join(dir, 'run', 'outcomes.jsonl');
  const j = new DegradedJournal(file);
  j.kept(A, 10);
  j.outcome(A, 'wq_1', { kind: 'confirmed', messageId: 'm1' }, 11);
  j.outcome(A, 'wq_1', { kind: 'confirmed', messageId: 'm1' }, 11);
  j.written(A, [10]);
  assert.deepEqual(unstoredOutcomes(await readFile(file, 'utf8')), [{ instanceId: A, jobId: 'wq_1', outcome: { kind: 'confirmed', messageId: 'm1' }, at: 11 }], 'kept once, on disk');
  j.stored(A, 'wq_2', 12);
  assert.equal(unstoredOutcomes(await readFile(file, 'utf8')).length, 1, 'an outcome never journaled is not stored');
  j.stored(A, 'wq_1', 11);
  await assert.rejects(readFile(file, 'utf8'), { code: 'ENOENT' }, 'nothing open: removed');
});

test('a start moves the jobs of journaled outcomes from sending as each says, with its event, and leaves jobs no longer sending', async () => {
  const now = Date.UTC(2026, 10, 30, 12, 0, 0);
  const { instance } = await createInstance(db.pool, { name: 'outcomes', driver: 'sandbox' });
  const id = instance.id;
  const sent = await addJob(db.pool, id, 'sending');
  const failed = await addJob(db.pool, id, 'sending');
  const back = await addJob(db.pool, id, 'sending');
  const recovered = await addJob(db.pool, id, 'unknown');
  const left = await addJob(db.pool, id, 'sending');
  const file = journalFile(dir);
  await writeFile(file, outcomeLine(id, sent, now - 5_000, { kind: 'confirmed', messageId: 'true_4915112345678@c.us_ABC' }) +
    outcomeLine(id, failed, now - 4_000, { kind: 'failed', resultCode: 'NOT_REGISTERED', errorMessage: 'not on the network' }) +
    outcomeLine(id, back, now - 3_000, { kind: 'failed', resultCode: 'INSTANCE_OFFLINE', errorMessage: 'no session' }) +
    outcomeLine(id, recovered, now - 2_000, { kind: 'confirmed', messageId: 'late' }));
  const events: { q: Queryable; instanceId: string; event: string; data: unknown }[] = [];
  const emit: EmitEvent = async (q, instanceId, event, data) => {
    events.push({ q, instanceId, event, data });
    return true;
  };

  assert.equal(await replayDegradedJournal(db.pool, file, now, silentLogger(), emit), 1);
  await assert.rejects(readFile(file, 'utf8'), { code: 'ENOENT' }, 'removed');
  const { rows } = await db.pool.query<{ id: string; state: string; delivery_confidence: string | null; message_id: string | null; result_code: string | null; terminal_at: Date | null; dispatched_at: Date | null }>(
    'SELECT id, state, delivery_confidence, message_id, result_code, terminal_at, dispatched_at FROM jobs WHERE instance_id = $1', [id]);
  const job = (jobId: string) => rows.find((r) => r.id === jobId);
  assert.deepEqual([job(sent)?.state, job(sent)?.delivery_confidence, job(sent)?.message_id, job(sent)?.result_code, job(sent)?.terminal_at?.getTime()],
    ['sent', 'confirmed', 'true_4915112345678@c.us_ABC', 'SENT', now - 5_000]);
  assert.deepEqual([job(failed)?.state, job(failed)?.result_code], ['failed', 'NOT_REGISTERED']);
  assert.deepEqual([job(back)?.state, job(back)?.dispatched_at], ['scheduled', null], 'never reached the network: waiting again');
  assert.equal(job(recovered)?.state, 'unknown', 'made unknown by another node meanwhile: left as it is');
  assert.equal(job(left)?.state, 'sending', 'no outcome journaled: the queue\'s start makes it unknown');
  const { rows: counted } = await db.pool.query<{ job_id: string }>('SELECT job_id FROM dispatches WHERE instance_id = $1', [id]);
  assert.deepEqual(counted.map((r) => r.job_id).sort(), [sent, left].sort(), 'the failed and the returned stop counting against the windows');
  assert.deepEqual(events.map((e) => [e.instanceId, e.event]), [[id, 'message.sent'], [id, 'message.failed']]);
  assert.deepEqual(events[0]?.data, { jobId: sent, messageId: 'true_4915112345678@c.us_ABC', deliveryConfidence: 'confirmed', dispatchedAt: job(sent)?.dispatched_at?.toISOString() });
  assert.notEqual(events[0]?.q, db.pool, 'each event is written in its move\'s transaction');
});

test('a journal whose lines cannot be read is said in a warning at start, not dropped in silence', async () => {
  const file = journalFile(dir);
  await writeFile(file, 'hello world\n{not json\n\u0000\n' + line(A, 1, 'dropped'));
  const lines: string[] = [];
  const log = createLogger({ level: 'warn', stream: { write: (l: string) => void lines.push(l) } });
  assert.equal(await replayDegradedJournal(db.pool, file, Date.now(), log, noEvents), 0);
  const warned = lines.map((l) => JSON.parse(l) as { msg: string; unreadable?: number; read?: number }).find((l) => l.unreadable !== undefined);
  assert.deepEqual([warned?.unreadable, warned?.read], [3, 1], lines.join(''));
  await assert.rejects(readFile(file, 'utf8'), { code: 'ENOENT' });
});

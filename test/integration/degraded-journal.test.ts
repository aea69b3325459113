/**
 * The sends made while the store was away, kept on disk (src/queue/degraded-journal.ts): what a journal says is
 * still unwritten, and a start writing it to the dispatch history: once, for instances that still exist, moving
 * the last dispatch forward, the file removed after. Found from the outside: a gateway SIGKILLed while degraded
 * forgot its three sends of the hour, and after the restart the hourly limit let three more through. (That the
 * sends reach the journal while degraded is held by store-outage.test.ts.) Real PostgreSQL.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { createInstance, deleteInstance } from '../../src/store/instances.js';
import { DegradedJournal, journalFile, replayDegradedJournal, unwrittenSends } from '../../src/queue/degraded-journal.js';
import { silentLogger } from '../../src/log.js';

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

  assert.equal(await replayDegradedJournal(db.pool, file, now, silentLogger()), 2);
  await assert.rejects(readFile(file, 'utf8'), { code: 'ENOENT' }, 'removed');
  const history = async () =>
    (await db.pool.query<{ at: Date }>('SELECT dispatched_at AS at FROM dispatches WHERE instance_id = $1 ORDER BY 1', [instance.id])).rows.map((r) => r.at.getTime());
  assert.deepEqual(await history(), ats, 'the three of the last day, not the one older than any window nor the one from the future');
  const { rows } = await db.pool.query<{ at: Date }>('SELECT last_dispatch_at AS at FROM instances WHERE id = $1', [instance.id]);
  assert.equal(rows[0]?.at.getTime(), now - 30_000, 'the last dispatch moved forward');

  // a recovery that committed but was killed before it wrote `written`: the next start finds them there already
  await writeFile(file, text);
  await replayDegradedJournal(db.pool, file, now, silentLogger());
  assert.deepEqual(await history(), ats, 'not twice');
  assert.equal(await replayDegradedJournal(db.pool, file, now, silentLogger()), 0, 'no journal: nothing');

  // a directory in its place: the start is refused naming the file and what to do
  await mkdir(file);
  await assert.rejects(replayDegradedJournal(db.pool, file, now, silentLogger()), (err: Error) => {
    assert.ok(err.message.includes(file) && /move it away/.test(err.message), err.message);
    return true;
  });
  await rm(file, { recursive: true });
});

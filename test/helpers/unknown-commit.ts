/**
 * A commit of unknown outcome (src/queue/sql/insertJobsFenced.ts): the next acceptance's one statement waits
 * for the `jobs` table, locked by another session, and its connection is terminated while it waits, so the
 * gateway cannot know whether it committed; it answers 504 INSTANCE_TIMEOUT and its queue reads itself again
 * from PostgreSQL. `meanwhile` runs on the locking session before it lets go (e.g. commits a row in the
 * acceptance's place, standing for a commit whose answer was lost).
 */
import assert from 'node:assert/strict';
import pg from 'pg';
import { waitFor, type ApiResponse, type TestGateway } from './gateway.js';

export async function commitOfUnknownOutcome(
  t: TestGateway,
  apiKey: string,
  body: Record<string, unknown>,
  meanwhile: (holder: pg.Client) => Promise<void> = async () => {},
): Promise<ApiResponse> {
  const holder = new pg.Client(t.db.config);
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE');
    const answer = t.api(apiKey, 'POST', '/api/v2/send-message', body);
    const pid = await waitFor(async () => {
      const { rows } = await t.db.pool.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH f AS%'");
      return rows[0]?.pid;
    }, 'the acceptance waiting for the jobs table');
    await meanwhile(holder);
    await holder.query('SELECT pg_terminate_backend($1)', [pid]);
    await holder.query('COMMIT');
    const r = await answer;
    assert.equal(r.status, 504, r.text);
    assert.equal(r.body.code, 'INSTANCE_TIMEOUT');
    return r;
  } finally {
    await holder.end().catch(() => undefined);
  }
}

/**
 * An acceptance held inside its group commit: another session holds the idempotency-key table locked, so a v2
 * send with a key stops at its key lookup. Resolves once PostgreSQL shows it waiting for the lock; `release()`
 * (idempotent) lets it commit and closes the holding session.
 */
import pg from 'pg';
import { waitFor, type ApiResponse, type TestGateway } from './gateway.js';

export interface StalledAcceptance {
  /** the send's answer, once released */
  answer: Promise<ApiResponse>;
  release(): Promise<void>;
}

export async function stalledAcceptance(t: TestGateway, apiKey: string, idempotencyKey: string): Promise<StalledAcceptance> {
  const holder = new pg.Client(t.db.config);
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE idempotency_keys IN ACCESS EXCLUSIVE MODE');
  let released: Promise<void> | null = null;
  const release = () => (released ??= holder.query('ROLLBACK').then(() => holder.end()));
  const answer = t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'keyed', idempotencyKey });
  try {
    await waitFor(async () => {
      const { rows } = await t.db.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = 'idempotency_keys'::regclass");
      return (rows[0]?.n ?? 0) > 0;
    }, 'the acceptance waiting for the key table');
  } catch (err) {
    await release();
    throw err;
  }
  return { answer, release };
}

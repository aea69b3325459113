/** The `pg` pool, and the one transaction helper every multi-statement change goes through. */
import pg from 'pg';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

// Return int8 (bigint) columns and counts as JS numbers: our bigints are sequence numbers and byte sizes
// far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));

export type PoolConfig = pg.PoolConfig;

export function createPool(config: PoolConfig): Pool {
  const pool = new pg.Pool({ max: 10, idleTimeoutMillis: 10_000, connectionTimeoutMillis: 5_000, ...config });
  // An idle client losing its server must not crash the process; the next query reports the fault.
  pool.on('error', () => undefined);
  return pool;
}

export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Embedded PostgreSQL for the zero-configuration start: PGlite (PostgreSQL compiled to WASM) persisted in
 * DATA_DIR/pg, served by pglite-socket on a unix socket inside DATA_DIR/run (mode 0700), so the very same
 * `pg` code that talks to a real server talks to it. It serializes transactions, which is fine for one node.
 */
import { mkdir, chmod, rm } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

export interface EmbeddedPostgres {
  /** connection settings for `pg` */
  connection: { host: string; port: number; user: string; database: string };
  stop(): Promise<void>;
}

const SOCKET_PORT = 5432;

export async function startEmbeddedPostgres(dataDir: string): Promise<EmbeddedPostgres> {
  const pgDir = path.join(dataDir, 'pg');
  const runDir = path.join(dataDir, 'run');
  await mkdir(pgDir, { recursive: true, mode: 0o700 });
  await mkdir(runDir, { recursive: true, mode: 0o700 });
  await chmod(runDir, 0o700);
  const socketPath = path.join(runDir, `.s.PGSQL.${SOCKET_PORT}`);
  // A socket file left by a killed process would make listen() fail.
  await rm(socketPath, { force: true });
  const db = await PGlite.create(pgDir);
  const server = new PGLiteSocketServer({ db, path: socketPath, maxConnections: 64 });
  await server.start();
  return {
    connection: { host: runDir, port: SOCKET_PORT, user: 'postgres', database: 'postgres' },
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}

/**
 * For tests that read a grown table's plans or fill it by hand: the schema before a migration, an instance row of
 * its own, and the scans of a statement's plan (EXPLAIN (FORMAT JSON), PostgreSQL's custom plan for these parameters).
 */
import { randomUUID } from 'node:crypto';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { migrate, SQL_DIR } from '../../src/store/migrate.js';
import type { Pool, Queryable } from '../../src/store/pool.js';

/** Apply the migrations numbered below `version` only: the schema a database had before it (for a migration's fill). */
export async function migrateBelow(pool: Pool, version: number): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mgw-sql-'));
  try {
    for (const f of await readdir(SQL_DIR)) if (/^\d{4}_/.test(f) && Number(f.slice(0, 4)) < version) await copyFile(path.join(SQL_DIR, f), path.join(dir, f));
    await migrate(pool, dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A new sandbox instance's row; its id. */
export async function addInstance(q: Queryable, name: string): Promise<string> {
  const id = randomUUID();
  await q.query("INSERT INTO instances (id, name, driver) VALUES ($1, $2, 'sandbox')", [id, name]);
  return id;
}

/** A scan of a plan: the relation it reads, and its index or, without one, its node type (`Seq Scan`). */
export interface PlanScan {
  relation: string | undefined;
  via: string;
}

/** Every scan of the statement's plan with these parameters, outermost first. */
export async function scansOf(q: Queryable, sql: string, params: unknown[]): Promise<PlanScan[]> {
  const { rows } = await q.query<{ 'QUERY PLAN': [{ Plan: unknown }] }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
  const out: PlanScan[] = [];
  const walk = (node: unknown): void => {
    if (!node || typeof node !== 'object') return;
    const p = node as { 'Node Type'?: string; 'Index Name'?: string; 'Relation Name'?: string; Plans?: unknown[] };
    if (p['Node Type']?.includes('Scan')) out.push({ relation: p['Relation Name'], via: p['Index Name'] ?? p['Node Type'] });
    for (const c of p.Plans ?? []) walk(c);
  };
  walk(rows[0]?.['QUERY PLAN'][0].Plan);
  return out;
}

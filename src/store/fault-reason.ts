/**
 * What a statement's failure says when PostgreSQL failed it for a reason of its own, not of the statement: its
 * SQLSTATE (and severity ERROR, as pg reads the server's ErrorResponse). Read by src/store/health.ts
 * (`storeFaultOf`, the answer a caller gets) and src/store/pool.ts (the faults tallied for the operator). Never
 * PostgreSQL's own message: it names the server's files.
 */

/**
 * The fault's reason for an error with `code` and `severity` as pg gives them, or null: insufficient resources
 * (class 53: a full disk, no memory), a system error (class 58: an I/O error, a file of the database gone),
 * damaged data (XX001, XX002).
 */
export function faultReason(code: unknown, severity: unknown): string | null {
  if (typeof code !== 'string' || severity !== 'ERROR') return null;
  if (code === '53100') return 'PostgreSQL\'s disk is full';
  if (code === '53200') return 'PostgreSQL is out of memory';
  if (code.startsWith('53')) return `PostgreSQL lacks a resource (${code})`;
  if (code.startsWith('58')) return `PostgreSQL could not read or write its files (${code})`;
  if (code === 'XX001' || code === 'XX002') return `PostgreSQL found damaged data (${code})`;
  return null;
}

/**
 * Array literals (src/queue/sql/array-literal.ts) read back by PostgreSQL's own array input: every string
 * comes back as written, on the fast path (JSON.stringify of the column) and on the element-by-element path
 * (a column holding a control character or a surrogate), nulls as nulls, JSON texts as their values, and
 * numbers exactly.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { NumberArray, TextArray } from '../../src/queue/sql/array-literal.js';

let db: TestDb;
before(async () => {
  db = await createTestDb('array_literal', { migrate: false });
});
after(async () => {
  await db?.close();
});

const PLAIN = ['', 'a', '"', '\\', '\\"', '"\\', '{a,b}', '{', '}', ',', ' lead and trail ', 'NULL', 'null', 'Null', 'ü ß 中 ∑', '\u007f', 'a\\nb', '\\u0041'];
const UNSAFE = ['line\nbreak', 'tab\there', '\r', '\u0001', '\u001f', '😀 emoji', '\ud800 lone high', 'lone low \udc00'];

async function roundTrip(values: (string | null)[]): Promise<(string | null)[]> {
  const a = new TextArray();
  for (const v of values) a.push(v);
  const { rows } = await db.pool.query<{ v: (string | null)[] }>('SELECT $1::text[] AS v', [a.literal()]);
  return rows[0]!.v;
}

test('text arrays: every string as written, with nulls, on both paths', async () => {
  assert.deepEqual(await roundTrip(PLAIN), PLAIN);
  assert.deepEqual(await roundTrip([null, ...PLAIN, null]), [null, ...PLAIN, null]);
  assert.deepEqual(await roundTrip([]), []);
  assert.deepEqual(await roundTrip([null]), [null]);
  for (const u of UNSAFE) {
    // a lone surrogate cannot be written as UTF-8: the client sends U+FFFD for it, as for any string parameter
    const expected = u.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
    assert.deepEqual(await roundTrip([...PLAIN, u, null]), [...PLAIN, expected, null], JSON.stringify(u));
  }
});

test('JSON texts: a jsonb[] of them reads back as their values, whatever their strings hold', async () => {
  const values: unknown[] = [{ body: 'x' }, { body: '"quoted" \\ back\nslash\t😀', list: [1.5, null, '{a,b}'] }, 'NULL', null, [], {}];
  const a = new TextArray();
  for (const v of values) a.pushJson(JSON.stringify(v));
  const { rows } = await db.pool.query<{ v: string }>('SELECT to_json($1::jsonb[])::text AS v', [a.literal()]);
  assert.deepEqual(JSON.parse(rows[0]!.v), values);
});

test('number arrays: exact, with nulls; a number that is not finite is refused', async () => {
  const values = [0, 1, -1, 5, 1_700_000_000_123, 1.5, null, Number.MAX_SAFE_INTEGER, 1e21];
  const a = new NumberArray();
  for (const v of values) a.push(v);
  const { rows } = await db.pool.query<{ v: (number | null)[] }>('SELECT array(SELECT x::float8 FROM unnest($1::float8[]) AS x)::text[] AS v', [a.literal()]);
  assert.deepEqual(rows[0]!.v.map((x) => (x === null ? null : Number(x))), values);
  assert.throws(() => new NumberArray().push(Number.NaN), /not a finite number/);
  assert.throws(() => new NumberArray().push(Number.POSITIVE_INFINITY), /not a finite number/);
});

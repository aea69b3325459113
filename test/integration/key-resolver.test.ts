/**
 * The API key resolver's lookups (src/http/auth.ts KeyResolver) against a real PostgreSQL: keys not in its cache
 * are verified together, one statement for all that wait and at most two statements at once, however many
 * requests bring new keys at the same time (a flood of unknown keys must not take the pool's connections); each
 * key still gets its own answer, a rotated key is refused at once, and a lookup that a rotation overtook still
 * answers every request waiting for it.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { simulatedClock } from '../../src/clock.js';
import { KeyResolver } from '../../src/http/auth.js';
import { createInstance, rotateKey } from '../../src/store/instances.js';
import type { Queryable } from '../../src/store/pool.js';

let db: TestDb;
before(async () => {
  db = await createTestDb('key_resolver');
});
after(async () => {
  await db?.close();
});

/** The test database's pool, counting the statements sent through it and the most running at once. */
function counted(): { q: Queryable; sent: () => number; most: () => number } {
  let sent = 0;
  let running = 0;
  let most = 0;
  const q = {
    query: (async (text: string, values?: unknown[]) => {
      sent++;
      running++;
      most = Math.max(most, running);
      try {
        return await db.pool.query(text, values);
      } finally {
        running--;
      }
    }) as Queryable['query'],
  };
  return { q, sent: () => sent, most: () => most };
}

const unknownKey = () => `wapi_nobody_${randomBytes(18).toString('base64url')}`;

test('a burst of new keys, known and unknown, is verified by a few statements, each key answered for itself', async () => {
  const known = await Promise.all(Array.from({ length: 5 }, (_, i) => createInstance(db.pool, { name: `known-${i}`, driver: 'sandbox' })));
  const c = counted();
  const keys = new KeyResolver(c.q, simulatedClock());
  const asked = [...known.map((k) => k.apiKey), ...Array.from({ length: 995 }, unknownKey)];
  const answers = await Promise.all(asked.map((k) => keys.resolve(k)));
  assert.deepEqual(answers.slice(0, 5), known.map((k) => k.instance.id), 'each known key its own instance');
  assert.ok(answers.slice(5).every((a) => a === null), 'every unknown key: none');
  assert.ok(c.sent() <= 4, `1,000 keys in at most 4 statements of 500 (sent ${c.sent()})`);
  assert.ok(c.most() <= 2, `at most 2 statements at once (${c.most()})`);
  // verified keys are answered from the cache
  const before = c.sent();
  assert.equal(await keys.resolve(known[0]?.apiKey ?? ''), known[0]?.instance.id);
  assert.equal(c.sent(), before);
});

test('requests with new keys arriving while lookups run wait for the next statement, never more than two at once', async () => {
  const { instance, apiKey } = await createInstance(db.pool, { name: 'steady', driver: 'sandbox' });
  const c = counted();
  const keys = new KeyResolver(c.q, simulatedClock());
  const answers: Promise<string | null>[] = [];
  for (let turn = 0; turn < 20; turn++) {
    for (let i = 0; i < 50; i++) answers.push(keys.resolve(unknownKey()));
    await new Promise((r) => setImmediate(r));
  }
  answers.push(keys.resolve(apiKey));
  const all = await Promise.all(answers);
  assert.equal(all.at(-1), instance.id);
  assert.equal(all.filter((a) => a !== null).length, 1);
  assert.ok(c.most() <= 2, `at most 2 statements at once (${c.most()})`);
  assert.ok(c.sent() < 1_001, `fewer statements than keys (${c.sent()} for 1,001)`);
});

/**
 * The test database's pool, with every statement held before it is sent (`hold: 'before'`) or after its answer
 * came back (`hold: 'after'`) until `release` is called: the order of a lookup and a rotation is then chosen by the
 * test, not by which pool connection happens to run first.
 */
function gated(hold: 'before' | 'after'): { q: Queryable; arrived: Promise<void>; release: () => void } {
  let release!: () => void;
  const open = new Promise<void>((r) => (release = r));
  let arrive!: () => void;
  const arrived = new Promise<void>((r) => (arrive = r));
  const q = {
    query: (async (text: string, values?: unknown[]) => {
      if (hold === 'before') {
        arrive();
        await open;
        return db.pool.query(text, values);
      }
      const result = await db.pool.query(text, values);
      arrive();
      await open;
      return result;
    }) as Queryable['query'],
  };
  return { q, arrived, release };
}

test('a rotation before the lookup statement runs: every request waiting is refused, the new key accepted', async () => {
  const { instance, apiKey } = await createInstance(db.pool, { name: 'rotated-before', driver: 'sandbox' });
  const g = gated('before');
  const keys = new KeyResolver(g.q, simulatedClock());
  const first = keys.resolve(apiKey);
  await g.arrived;
  // the statement is on its way but not sent: the rotation commits first, then a second request for the old key
  const fresh = await rotateKey(db.pool, instance);
  keys.clear();
  const second = keys.resolve(apiKey);
  g.release();
  const [a, b] = await Promise.all([first, second]);
  assert.equal(a, null, 'the statement ran after the rotation: the old key is no longer valid');
  assert.equal(b, null);
  assert.equal(await keys.resolve(apiKey), null);
  assert.equal(await keys.resolve(fresh), instance.id);
});

test('a rotation overtaking a lookup whose answer is on its way: that request keeps it, the cache does not, the old key is refused from then on', async () => {
  const { instance, apiKey } = await createInstance(db.pool, { name: 'rotated-during', driver: 'sandbox' });
  const g = gated('after');
  const keys = new KeyResolver(g.q, simulatedClock());
  const first = keys.resolve(apiKey);
  await g.arrived;
  // the statement has read the old key's row; its answer is held while the rotation commits and the cache clears
  const fresh = await rotateKey(db.pool, instance);
  keys.clear();
  g.release();
  assert.equal(await first, instance.id, 'the request came before the rotation and its statement read the key before it');
  assert.equal(await keys.resolve(apiKey), null, 'the answer that the rotation overtook was not put back in the cache');
  assert.equal(await keys.resolve(fresh), instance.id);
});

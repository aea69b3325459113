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
import net, { type AddressInfo } from 'node:net';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { simulatedClock } from '../../src/clock.js';
import { KeyResolver } from '../../src/http/auth.js';
import { createInstance, rotateKey } from '../../src/store/instances.js';
import { createPool, type Pool, type Queryable } from '../../src/store/pool.js';
import { isDomainError } from '../../src/errors.js';

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
  keys.forget([instance.id]);
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
  keys.forget([instance.id]);
  g.release();
  assert.equal(await first, instance.id, 'the request came before the rotation and its statement read the key before it');
  assert.equal(await keys.resolve(apiKey), null, 'the answer that the rotation overtook was not put back in the cache');
  assert.equal(await keys.resolve(fresh), instance.id);
});

/**
 * The test database, or (`down()`) a PostgreSQL that refuses connections: a pool of the store's own (src/store/
 * pool.ts, which marks what it raises) pointed at a port nothing listens on.
 */
interface Failing { q: Queryable; down(): void; up(): void; end(): Promise<void> }
async function failing(): Promise<Failing> {
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const { port } = closed.address() as AddressInfo;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const refused: Pool = createPool({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
  let isDown = false;
  const q = { query: ((text: string, values?: unknown[]) => (isDown ? refused : db.pool).query(text, values)) as Queryable['query'] };
  return { q, down: () => (isDown = true), up: () => (isDown = false), end: () => refused.end() };
}

const unverifiable = (err: unknown) => isDomainError(err, 'QUEUE_STORE_UNAVAILABLE');

/** An instance and its key, as createInstance made them. */
type Made = Awaited<ReturnType<typeof createInstance>>;

/**
 * Two instances whose keys a resolver over `failing()` verified (cached), then the key of `revoked` rotated in the
 * store (the resolver not told yet): `run` tells it, takes the store away and asks.
 */
async function afterRotation(
  label: string,
  run: (w: { kept: Made; revoked: Made; keys: KeyResolver; store: Failing; clock: ReturnType<typeof simulatedClock> }) => Promise<void>,
): Promise<void> {
  const kept = await createInstance(db.pool, { name: `${label}-kept`, driver: 'sandbox' });
  const revoked = await createInstance(db.pool, { name: `${label}-revoked`, driver: 'sandbox' });
  const store = await failing();
  const clock = simulatedClock();
  const keys = new KeyResolver(store.q, clock);
  try {
    assert.equal(await keys.resolve(kept.apiKey), kept.instance.id);
    assert.equal(await keys.resolve(revoked.apiKey), revoked.instance.id);
    await rotateKey(db.pool, revoked.instance);
    await run({ kept, revoked, keys, store, clock });
  } finally {
    await store.end();
  }
}

test("a rotation forgets that instance's keys alone: another instance's key verified before stays usable through the next outage", () =>
  afterRotation('forget', async ({ kept: b, revoked: a, keys, store, clock }) => {
    keys.forget([a.instance.id]);
    store.down();
    // it forgot every instance's keys: B's key, not used again since, could not be verified in the outage (503)
    assert.equal(await keys.resolve(b.apiKey), b.instance.id, 'B verified before the outage');
    clock.increment(60_000);
    assert.equal(await keys.resolve(b.apiKey), b.instance.id, 'past its cache time too, while no lookup answers');
    await assert.rejects(keys.resolve(a.apiKey), unverifiable, "A's rotated key is not answered from memory");
    store.up();
    assert.equal(await keys.resolve(a.apiKey), null, 'refused once the store answers');
  }));

test('a notice that names no instance: every cached key is verified again at once; confirmed, it is usable through the next outage', () =>
  // revoked while this node did not hear of it, then the notices are heard again (any key may have changed)
  afterRotation('reverify', async ({ kept: a, revoked: r, keys, store }) => {
    keys.reverifyAll();
    // the lookups it started have answered (a resolve joins the one on its way)
    assert.equal(await keys.resolve(a.apiKey), a.instance.id);
    assert.equal(await keys.resolve(r.apiKey), null, 'the revoked key is refused');
    store.down();
    assert.equal(await keys.resolve(a.apiKey), a.instance.id, 'confirmed before the outage: answered in it');
    await assert.rejects(keys.resolve(r.apiKey), unverifiable);
  }));

test('keys to verify again while the store is unreachable are not answered from memory: one revoked meanwhile must not pass', () =>
  afterRotation('unsure', async ({ kept: a, revoked: r, keys, store }) => {
    store.down();
    // (found from the outside: a key rotated on another node while this one listened anew was accepted in an outage)
    keys.reverifyAll();
    await assert.rejects(keys.resolve(r.apiKey), unverifiable, 'the missed revocation does not pass');
    await assert.rejects(keys.resolve(a.apiKey), unverifiable, 'nor any key not confirmed since');
    store.up();
    assert.equal(await keys.resolve(r.apiKey), null);
    assert.equal(await keys.resolve(a.apiKey), a.instance.id);
    store.down();
    assert.equal(await keys.resolve(a.apiKey), a.instance.id, 'confirmed again: usable through the next outage');
  }));

/**
 * Name resolution for the URLs a client or an operator chooses (a `mediaUrl`, a webhook URL): a name whose DNS
 * never answers is refused after a deadline, and hanging names never hold more than a few of libuv's threads
 * (src/media/agent.ts boundedResolver). The lookup here stands in for the system resolver (DNS is not reachable
 * from this machine): it answers when the test says so.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { boundedResolver, cachedResolver, LOOKUP_TIMEOUT_CODE, type ResolvedAddress } from '../../src/media/agent.js';
import { assertPublicUrl } from '../../src/media/ssrf.js';

/** A lookup whose every call waits until the test answers it. */
function heldLookup() {
  const calls: { host: string; answer(a: ResolvedAddress[]): void }[] = [];
  let running = 0;
  let most = 0;
  const lookup = (host: string) =>
    new Promise<ResolvedAddress[]>((resolve) => {
      running += 1;
      most = Math.max(most, running);
      calls.push({
        host,
        answer: (a) => {
          running -= 1;
          resolve(a);
        },
      });
    });
  return { lookup, calls, most: () => most };
}

const PUBLIC: ResolvedAddress[] = [{ address: '93.184.216.34', family: 4 }];
const code = (err: unknown) => (err as { code?: unknown }).code;

test('at most `concurrency` lookups run at once; the others wait for a turn and run in their order', async () => {
  const held = heldLookup();
  const resolve = boundedResolver(held.lookup, { concurrency: 2, deadlineMs: 10_000 });
  const answers = ['a', 'b', 'c', 'd'].map((h) => resolve(h));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(held.calls.map((c) => c.host), ['a', 'b']);
  held.calls[0]?.answer(PUBLIC);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(held.calls.map((c) => c.host), ['a', 'b', 'c']);
  for (const c of held.calls.slice(1)) c.answer(PUBLIC);
  await new Promise((r) => setImmediate(r));
  held.calls[3]?.answer(PUBLIC);
  assert.deepEqual(await Promise.all(answers), [PUBLIC, PUBLIC, PUBLIC, PUBLIC]);
  assert.equal(held.most(), 2);
});

test('a name that does not resolve in time is refused at its deadline, and keeps its turn until its lookup ends', async () => {
  const held = heldLookup();
  const resolve = boundedResolver(held.lookup, { concurrency: 1, deadlineMs: 30 });
  const hanging = resolve('hangs.example');
  const queued = resolve('queued.example');
  await assert.rejects(hanging, (err) => code(err) === LOOKUP_TIMEOUT_CODE);
  // the queued one timed out waiting for the turn the hanging lookup still holds: it never started
  await assert.rejects(queued, (err) => code(err) === LOOKUP_TIMEOUT_CODE);
  assert.deepEqual(held.calls.map((c) => c.host), ['hangs.example']);
  // once the hanging lookup ends (its answer no longer wanted), the next name gets the turn
  held.calls[0]?.answer(PUBLIC);
  const next = resolve('next.example');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(held.calls.map((c) => c.host), ['hangs.example', 'next.example']);
  held.calls[1]?.answer(PUBLIC);
  assert.deepEqual(await next, PUBLIC);
});

test('a mediaUrl whose name does not resolve in time is refused 400 unresolvable, saying so', async () => {
  const resolver = boundedResolver(() => new Promise<ResolvedAddress[]>(() => undefined), { concurrency: 1, deadlineMs: 20 });
  await assert.rejects(assertPublicUrl('http://never-answers.example/a.png', { resolver }), (err: unknown) => {
    const e = err as { code?: string; status?: number; message?: string; data?: Record<string, unknown> };
    assert.equal(e.code, 'VALIDATION_FAILED');
    assert.equal(e.data?.reason, 'unresolvable');
    assert.match(String(e.message), /did not resolve within/);
    return true;
  });
});

test('a name that resolved a moment ago is answered again without a lookup (no turn to wait for), until its minute is over; failures are not kept', async () => {
  let t = 1_000;
  const asked: string[] = [];
  let fail = false;
  const resolve = cachedResolver(async (host) => {
    asked.push(host);
    if (fail) throw Object.assign(new Error('no'), { code: 'ENOTFOUND' });
    return host.startsWith('empty') ? [] : PUBLIC;
  }, { ttlMs: 60_000, names: 2, now: () => t });
  assert.deepEqual(await resolve('hook.example'), PUBLIC);
  assert.deepEqual(await resolve('HOOK.example'), PUBLIC, 'names are case-insensitive');
  assert.deepEqual(asked, ['hook.example']);
  t += 60_000;
  assert.deepEqual(await resolve('hook.example'), PUBLIC);
  assert.deepEqual(asked, ['hook.example', 'hook.example'], 'asked again once its minute is over');
  // an empty answer and a failure are not kept
  assert.deepEqual(await resolve('empty.example'), []);
  assert.deepEqual(await resolve('empty.example'), []);
  fail = true;
  await assert.rejects(resolve('gone.example'));
  await assert.rejects(resolve('gone.example'));
  assert.equal(asked.filter((h) => h === 'empty.example' || h === 'gone.example').length, 4);
  // at most `names` answers: the oldest goes first
  fail = false;
  await resolve('a.example');
  await resolve('b.example');
  asked.length = 0;
  await resolve('hook.example');
  await resolve('b.example');
  assert.deepEqual(asked, ['hook.example'], 'hook.example was the oldest and went; b.example stayed');
});

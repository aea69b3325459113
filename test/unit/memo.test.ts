/** src/memo.ts staleWhileRevalidate: only the first read waits; later reads answer from memory at once. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { staleWhileRevalidate } from '../../src/memo.js';

/** A load whose calls the test answers one by one. */
function controlledLoad() {
  const calls: { key: string; resolve: (v: number) => void; reject: (e: Error) => void }[] = [];
  const load = (key: string) => new Promise<number>((resolve, reject) => calls.push({ key, resolve, reject }));
  return { calls, load };
}
const turn = () => new Promise((r) => setImmediate(r));

test('the first read waits for the load; concurrent first reads share it', async () => {
  const { calls, load } = controlledLoad();
  const read = staleWhileRevalidate(60_000, load);
  const a = read('k');
  const b = read('k');
  assert.equal(calls.length, 1);
  calls[0]?.resolve(7);
  assert.deepEqual(await Promise.all([a, b]), [7, 7]);
  assert.equal(await read('k'), 7, 'fresh: from memory');
  assert.equal(calls.length, 1, 'no second load while fresh');
});

test('a stale value is answered at once and refreshed in the background, one refresh at a time', async () => {
  const { calls, load } = controlledLoad();
  const read = staleWhileRevalidate(0, load); // every value is stale at once
  const first = read('k');
  calls[0]?.resolve(1);
  assert.equal(await first, 1);
  assert.equal(await read('k'), 1, 'the stale value, not waiting for the refresh');
  assert.equal(await read('k'), 1);
  assert.equal(calls.length, 2, 'one refresh in flight, not one per read');
  calls[1]?.resolve(2);
  await turn();
  assert.equal(await read('k'), 2, 'the refreshed value');
});

test('a failed refresh keeps the last value; a failed first load fails that read only', async () => {
  const { calls, load } = controlledLoad();
  const read = staleWhileRevalidate(0, load);
  const first = read('k');
  calls[0]?.reject(new Error('store down'));
  await assert.rejects(first, /store down/);
  const again = read('k');
  assert.equal(calls.length, 2, 'a failed first load is not remembered');
  calls[1]?.resolve(5);
  assert.equal(await again, 5);
  assert.equal(await read('k'), 5);
  calls[2]?.reject(new Error('store down'));
  await turn();
  assert.equal(await read('k'), 5, 'the last value survives a failed refresh');
  assert.equal(calls.length, 4, 'and the next read tries again');
});

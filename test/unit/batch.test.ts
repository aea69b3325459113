/**
 * The store's group commit of writes (src/store/batch.ts Batcher): a write that fails as a whole is written again
 * input by input, so that one bad input cannot fail the others, unless the store failed it (unreachable, too slow,
 * a COMMIT of unknown outcome): then every input fails with that error at once. Found from the outside: creations
 * asked during an outage were each written again alone, one store deadline after another.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Batcher } from '../../src/store/batch.js';
import { CommitOutcomeUnknown, raisedByStore } from '../../src/store/pool.js';
import { StoreTimedOut } from '../../src/store/health.js';

/** A Batcher whose writes are counted and fail with `fail(inputs)` (null: each input answered itself). */
function batcher(fail: (inputs: number[]) => Error | null) {
  const writes: number[][] = [];
  const b = new Batcher<number, number>(async (inputs) => {
    writes.push(inputs);
    const err = fail(inputs);
    if (err) throw err;
    return inputs.map((i) => i * 10);
  });
  return { b, writes };
}

const refused = () => raisedByStore(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));

test('a write one input failed is written again input by input: the others are answered', async () => {
  const { b, writes } = batcher((inputs) => (inputs.includes(2) ? new Error('input 2 is bad') : null));
  const answers = await Promise.allSettled([1, 2, 3].map((i) => b.submit(i)));
  assert.deepEqual(answers.map((a) => (a.status === 'fulfilled' ? a.value : (a.reason as Error).message)), [10, 'input 2 is bad', 30]);
  assert.deepEqual(writes, [[1, 2, 3], [1], [2], [3]]);
});

for (const [what, err] of [
  ['the store unreachable', refused],
  ['a statement the store cancelled (its deadline)', () => new StoreTimedOut('canceling statement due to statement timeout')],
  ['a COMMIT of unknown outcome', () => new CommitOutcomeUnknown(new Error('Connection terminated'))],
] as const) {
  test(`a write the store failed (${what}) fails every input at once, none written again alone`, async () => {
    const { b, writes } = batcher(() => err());
    const answers = await Promise.allSettled([1, 2, 3].map((i) => b.submit(i)));
    assert.ok(answers.every((a) => a.status === 'rejected'));
    assert.deepEqual(writes, [[1, 2, 3]]);
  });
}

/** Weighted rendezvous placement (src/cluster/placement.ts): fair by capacity, stable when nodes come and go. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { placeInstance } from '../../src/cluster/placement.js';

const node = (id: string, capacity = 100) => ({ id, url: '', capacity });
const ids = Array.from({ length: 6_000 }, () => randomUUID());

function shares(nodes: ReturnType<typeof node>[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const i of ids) {
    const n = placeInstance(i, nodes) as string;
    m.set(n, (m.get(n) ?? 0) + 1);
  }
  return m;
}

test('equal capacities: each of three nodes gets a third (±3 %)', () => {
  const s = shares([node('a'), node('b'), node('c')]);
  for (const n of ['a', 'b', 'c']) assert.ok(Math.abs((s.get(n) ?? 0) / ids.length - 1 / 3) < 0.03, `${n}: ${s.get(n)}`);
});

test('capacity weighs: a node of twice the capacity gets about half of two', () => {
  const s = shares([node('a', 200), node('b', 100)]);
  assert.ok(Math.abs((s.get('a') ?? 0) / ids.length - 2 / 3) < 0.03, `a: ${s.get('a')}`);
});

test('a node joining takes only from the others, about its share; a node leaving moves only its own', () => {
  const two = [node('a'), node('b')];
  const three = [...two, node('c')];
  let moved = 0;
  for (const i of ids) {
    const before = placeInstance(i, two);
    const after = placeInstance(i, three);
    if (before !== after) {
      assert.equal(after, 'c', 'an instance moves only to the new node');
      moved++;
    }
    // leaving again: back where it was
    assert.equal(placeInstance(i, two), before);
  }
  assert.ok(Math.abs(moved / ids.length - 1 / 3) < 0.03, `moved ${moved}`);
});

test('a pinned node wins while it is live; no live node: null', () => {
  assert.equal(placeInstance('x', [node('a'), node('b')], 'b'), 'b');
  assert.notEqual(placeInstance('x', [node('a')], 'b'), 'b');
  assert.equal(placeInstance('x', []), null);
});

/**
 * The committed state diagrams (docs/machines/*.md) must be what `npm run diagrams` makes from machines/ now.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createMachine } from 'xstate';
import { DOCS_DIR, generateDiagrams, readGeneratedDocs, renderMermaid } from '../../scripts/diagrams.js';

const HINT = 'docs/machines is out of date: run `npm run diagrams` and commit the result';

test('committed diagrams match the machines', async () => {
  const expected = await generateDiagrams();
  const committed = await readGeneratedDocs(DOCS_DIR);
  assert.ok(expected.has('instance.md'), 'the instance machine is found');
  assert.deepEqual([...committed.keys()].sort(), [...expected.keys()].sort(), HINT);
  for (const [name, text] of expected) {
    const difference = firstDifference(committed.get(name) ?? '', text);
    if (difference) assert.fail(`docs/machines/${name} differs at ${difference}. ${HINT}`);
  }
});

/** Where two texts first differ, short enough to read in a test report; null when equal. */
function firstDifference(actual: string, expected: string): string | null {
  if (actual === expected) return null;
  const a = actual.split('\n');
  const e = expected.split('\n');
  const i = e.findIndex((line, n) => line !== a[n]);
  const at = i === -1 ? e.length : i;
  return `line ${at + 1}: committed ${JSON.stringify(a[at] ?? '<end>')}, generated ${JSON.stringify(e[at] ?? '<end>')}`;
}

test('generation is deterministic', async () => {
  const [a, b] = await Promise.all([generateDiagrams(), generateDiagrams()]);
  assert.deepEqual([...a], [...b]);
});

test('the Mermaid keeps nested states, guards, delays and eventless transitions, and avoids composite endpoints', () => {
  const machine = createMachine({
    id: 'door',
    initial: 'closed',
    states: {
      closed: {
        initial: 'locked',
        on: { OPEN: { target: 'open', guard: 'unlocked' } },
        states: { locked: { on: { UNLOCK: 'unlocked' } }, unlocked: { after: { 5000: 'locked' } } },
      },
      open: { always: { target: 'gone', guard: 'broken' }, on: { CLOSE: 'closed', KNOCK: {} } },
      gone: { type: 'final' },
    },
  });
  assert.equal(
    renderMermaid(machine),
    [
      'stateDiagram-v2',
      '  [*] --> closed',
      '  state closed {',
      '    [*] --> locked',
      '    state "(any)" as closed__any',
      '    locked',
      '    unlocked',
      '    locked --> unlocked : UNLOCK',
      '    unlocked --> locked : after 5000 ms',
      '  }',
      '  open',
      '  gone',
      '  gone --> [*]',
      '  closed__any --> open : OPEN [unlocked]',
      '  open --> locked : CLOSE',
      '  open --> gone : always [broken]',
    ].join('\n'),
  );
});

/**
 * The crash checker, short run: the gateway as its own process is SIGKILLed at random moments five times
 * under v1 + v2 load (idempotency keys, retries after lost answers) and restarted; then the sandbox ledger
 * must agree with the jobs table: no message twice, no accepted job lost, none left `sending`.
 * The long run is `npm run chaos` (scripts/chaos.ts), on the same checker (test/helpers/crash-checker.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatSummary, runCrashCheck } from '../helpers/crash-checker.js';

test('SIGKILLed five times under load: nothing sent twice, nothing accepted lost', {
  skip: !process.env.TEST_DATABASE_URL && 'needs TEST_DATABASE_URL (the gateway process and the checker share the database)',
  timeout: 120_000,
}, async (t) => {
  const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 1_000_000));
  const result = await runCrashCheck({ kills: 5, seed, minUpMs: 200, maxUpMs: 1_200, settleMs: 10_000 });
  const summary = formatSummary(result);
  t.diagnostic(summary);
  const v = result.verdict;
  assert.ok(v.accepted > 0, `the load was accepted at all\n${summary}`);
  assert.ok(v.ledgerEntries > 0, `something reached the network\n${summary}`);
  assert.equal(v.duplicates, 0, summary);
  assert.equal(v.orphanSends, 0, summary);
  assert.equal(v.lost, 0, summary);
  assert.equal(v.leftSending, 0, summary);
  assert.equal(v.sentNotInLedger, 0, summary);
  assert.equal(v.strayLedgerEntries, 0, summary);
  assert.deepEqual(result.crashes, [], summary);
});

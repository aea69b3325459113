/**
 * The crash checker's verdict: what the network received (the sandbox ledger) against what the gateway
 * recorded (the jobs table) and what the clients were told. Pure: it only compares the three.
 *
 * Rules (issue 13, "Crash checker"):
 * - no body twice in the ledger (every request body is unique);
 * - no accepted job lost: every 202/200 a client got has its job; every job is terminal or still waiting
 *   (`queued`/`scheduled`), none left `sending`;
 * - every `sent` job's message is in the ledger exactly once;
 * - every ledger entry belongs to a `sent` or `unknown` job; nothing `failed`/`cancelled`/`expired` is in it.
 */
import type { RequestRecord } from './crash-load.js';

export interface JobRow {
  id: string;
  state: string;
  messageId: string | null;
  body: string | null;
  originRoute: string;
  resultCode: string | null;
  errorMessage: string | null;
  /** unix ms */
  queuedAt: number;
  dispatchedAt: number | null;
}

export interface LedgerRow {
  seq: number;
  messageId: string | null;
  body: string | null;
}

/** Which gateway process (1-based, in start order) was alive at `t`: the start times of the processes. */
export type Incarnation = (t: number) => number;

export interface Verdict {
  requests: number;
  attempts: number;
  accepted: number;
  jobs: number;
  byState: Record<string, number>;
  /** failed jobs by result code and message */
  failedReasons: Record<string, number>;
  ledgerEntries: number;
  /** the same message more than once in the ledger, other than a v1 resend of a message in flight at a kill */
  duplicates: number;
  /** v1 resends of a message that was going out when its gateway was killed (inherent to v1: no key) */
  v1InFlightResends: number;
  /** v1 jobs sent by a later gateway than the one whose caller waited for them */
  orphanSends: number;
  lost: number;
  leftSending: number;
  sentNotInLedger: number;
  strayLedgerEntries: number;
  notSentButDelivered: number;
  /** one line per violation, for the report */
  violations: string[];
}

const V1_ROUTES = new Set(['/api/send-message', '/api/send-media']);
const NOT_DELIVERED = new Set(['failed', 'cancelled', 'expired']);
const WAITING = new Set(['queued', 'scheduled']);
const MAX_LINES = 40;

export function verify(records: RequestRecord[], attempts: number, jobs: JobRow[], ledger: LedgerRow[], incarnation: Incarnation = () => 0): Verdict {
  const violations: string[] = [];
  const note = (line: string) => {
    if (violations.length < MAX_LINES) violations.push(line);
    else if (violations.length === MAX_LINES) violations.push('… (more violations left out)');
  };

  const jobsById = new Map(jobs.map((j) => [j.id, j]));
  const jobsByMessageId = new Map(jobs.filter((j) => j.messageId).map((j) => [j.messageId, j]));
  const jobsByBody = new Map<string, JobRow[]>();
  for (const j of jobs) if (j.body !== null) jobsByBody.set(j.body, [...(jobsByBody.get(j.body) ?? []), j]);

  // v1 jobs dispatched by a later gateway than the one that accepted them: their synchronous caller was cut off
  // by the kill and (SPEC.md rule 1) resends, so the message must not go out any more
  const orphaned = (j: JobRow) => V1_ROUTES.has(j.originRoute) && j.dispatchedAt !== null && incarnation(j.dispatchedAt) > incarnation(j.queuedAt);
  let orphanSends = 0;
  for (const j of jobs) {
    if (orphaned(j) && (j.state === 'sent' || j.state === 'unknown')) {
      orphanSends++;
      note(`v1 job sent after its request died with the gateway: ${describe(j, incarnation)} "${j.body ?? ''}"`);
    }
  }

  // the ledger: duplicates by body
  const ledgerByBody = new Map<string, LedgerRow[]>();
  for (const e of ledger) if (e.body !== null) ledgerByBody.set(e.body, [...(ledgerByBody.get(e.body) ?? []), e]);
  let duplicates = 0;
  let v1InFlightResends = 0;
  for (const [body, entries] of ledgerByBody) {
    if (entries.length < 2) continue;
    const owners = jobsByBody.get(body) ?? [];
    // A v1 caller whose gateway died while its message was going out got no answer and resends: without an
    // idempotency key that second copy is the v1 contract's, not the gateway's (each job went out at most
    // once, from the gateway that held its caller's connection; an `unknown` one may not have gone out).
    const inherent = entries.length <= owners.length && owners.every((j) => V1_ROUTES.has(j.originRoute) && !orphaned(j));
    if (inherent) {
      v1InFlightResends += entries.length - 1;
      continue;
    }
    duplicates += entries.length - 1;
    const desc = owners.map((j) => describe(j, incarnation)).join('; ');
    note(`duplicate: "${body}" is in the ledger ${entries.length} times (seq ${entries.map((e) => e.seq).join(', ')}); jobs: ${desc || 'none'}`);
  }

  // no accepted job lost
  let lost = 0;
  for (const r of records.filter((x) => x.accepted)) {
    const job = r.api === 'v2' ? (r.jobId ? jobsById.get(r.jobId) : undefined) : r.messageId ? jobsByMessageId.get(r.messageId) : undefined;
    if (!job) {
      lost++;
      note(`lost: ${r.api} "${r.body}" was answered ${r.status} (${r.jobId ?? r.messageId ?? 'no id'}) but has no job`);
    } else if (r.api === 'v1' && job.state !== 'sent') {
      lost++;
      note(`lost: v1 "${r.body}" was answered 200 sent but its job ${job.id} is ${job.state}`);
    }
  }
  let leftSending = 0;
  for (const j of jobs) {
    if (j.state === 'sending') {
      leftSending++;
      note(`left sending: job ${j.id} "${j.body ?? ''}"`);
    }
  }

  // every sent job in the ledger exactly once (by its network message id)
  const ledgerByMessageId = new Map<string, LedgerRow[]>();
  for (const e of ledger) if (e.messageId) ledgerByMessageId.set(e.messageId, [...(ledgerByMessageId.get(e.messageId) ?? []), e]);
  let sentNotInLedger = 0;
  for (const j of jobs.filter((x) => x.state === 'sent')) {
    const byId = j.messageId ? (ledgerByMessageId.get(j.messageId) ?? []) : [];
    const byBody = j.body !== null ? (ledgerByBody.get(j.body) ?? []) : [];
    const n = byId.length > 0 ? byId.length : byBody.length;
    if (n !== 1) {
      if (n === 0) sentNotInLedger++;
      note(`sent job ${j.id} "${j.body ?? ''}" is in the ledger ${n} times`);
    }
  }

  // every ledger entry belongs to a sent or unknown job; nothing not delivered is in it
  let strayLedgerEntries = 0;
  let notSentButDelivered = 0;
  for (const e of ledger) {
    const byId = e.messageId ? jobsByMessageId.get(e.messageId) : undefined;
    if (byId?.state === 'sent') continue;
    const owners = e.body !== null ? (jobsByBody.get(e.body) ?? []) : [];
    if (owners.some((j) => j.state === 'sent' || j.state === 'unknown')) continue;
    strayLedgerEntries++;
    const bad = owners.filter((j) => NOT_DELIVERED.has(j.state) || WAITING.has(j.state));
    if (bad.length > 0) notSentButDelivered++;
    const desc = owners.map((j) => `${j.id} ${j.state}`).join(', ') || 'no job';
    note(`ledger entry ${e.seq} "${e.body ?? ''}" belongs to no sent/unknown job (${desc})`);
  }

  const byState: Record<string, number> = {};
  for (const j of jobs) byState[j.state] = (byState[j.state] ?? 0) + 1;
  const failedReasons: Record<string, number> = {};
  for (const j of jobs.filter((x) => x.state === 'failed')) {
    const reason = `${j.resultCode ?? '-'}: ${j.errorMessage ?? ''}`;
    failedReasons[reason] = (failedReasons[reason] ?? 0) + 1;
  }
  return {
    requests: records.length,
    attempts,
    accepted: records.filter((r) => r.accepted).length,
    jobs: jobs.length,
    byState,
    failedReasons,
    ledgerEntries: ledger.length,
    duplicates,
    v1InFlightResends,
    orphanSends,
    lost,
    leftSending,
    sentNotInLedger,
    strayLedgerEntries,
    notSentButDelivered,
    violations,
  };
}

/** Whether the verdict breaks any rule. */
export const violated = (v: Verdict): boolean =>
  v.duplicates + v.orphanSends + v.lost + v.leftSending + v.sentNotInLedger + v.strayLedgerEntries + v.notSentButDelivered > 0;

/** A job in a violation line: its state, route, and which gateway process accepted and dispatched it. */
function describe(j: JobRow, incarnation: Incarnation): string {
  const dispatched = j.dispatchedAt === null ? 'never dispatched' : `dispatched by gateway #${incarnation(j.dispatchedAt)}`;
  return `${j.id} ${j.state} via ${j.originRoute}, accepted by gateway #${incarnation(j.queuedAt)}, ${dispatched}`;
}

/**
 * What the queue benchmarks (bench/full-queue.ts, bench/bulk.ts) share: instance settings that hold a queue
 * still while it is measured, a way to fill one, a timed request, and a count of the rows a step wrote.
 */
import type { Pool } from '../../src/store/pool.js';
import type { InstanceSettings } from '../../src/queue/settings.js';

const hhmm = (t: number) => new Date(t).toISOString().slice(11, 16);

/**
 * The new-instance limits (40/h, 500/24 h, 4–12 s pauses) with quiet hours around `now` (UTC), so nothing is
 * dispatched while the benchmark runs and every slot is planned through the limits and the quiet window; a
 * 30-day validity so that 5,000 jobs (ten days at 500 a day) are all reachable.
 */
export function holdSettings(now = Date.now()): Partial<InstanceSettings> {
  return {
    maxPerHour: 40,
    maxPer24h: 500,
    minDelayMs: 4_000,
    maxDelayMs: 12_000,
    quietHours: { start: hhmm(now - 3_600_000), end: hhmm(now + 6 * 3_600_000), tz: 'UTC' },
    defaultTtlSeconds: 2_592_000,
  };
}

export interface Timed {
  ms: number;
  status: number;
  body: { success?: boolean; code?: string; data?: Record<string, unknown> };
}

/** One request, timed from its start to the end of its answer. */
export async function timed(url: string, apiKey: string, method: string, body?: string): Promise<Timed> {
  const t0 = performance.now();
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body } : {}),
  });
  const text = await res.text();
  const ms = performance.now() - t0;
  return { ms, status: res.status, body: JSON.parse(text) as Timed['body'] };
}

/** A send-bulk body of `n` entries. */
export const bulkBody = (n: number, tag: string) =>
  JSON.stringify({ messages: Array.from({ length: n }, (_, i) => ({ phone: `4916${String(i).padStart(8, '0')}`, message: `${tag} ${i}` })) });

/** Fill an instance's queue with `n` priority-5 jobs (send-bulk in chunks); answers how many were queued. */
export async function fill(base: string, apiKey: string, n: number): Promise<number> {
  let queued = 0;
  for (let left = n; left > 0; left -= 1_000) {
    const r = await timed(`${base}/api/send-bulk`, apiKey, 'POST', bulkBody(Math.min(1_000, left), `fill${left}`));
    const messages = (r.body.data?.messages ?? []) as { status: string }[];
    queued += messages.filter((m) => m.status === 'queued').length;
  }
  return queued;
}

/** The row versions (xmin) of an instance's jobs: compare two to count the rows a step wrote. */
export async function rowVersions(pool: Pool, instanceId: string): Promise<Map<string, string>> {
  const { rows } = await pool.query<{ id: string; v: string }>('SELECT id, xmin::text AS v FROM jobs WHERE instance_id = $1', [instanceId]);
  return new Map(rows.map((r) => [r.id, r.v]));
}

/** Rows of `before` whose version changed in `after` (updated), not counting rows that are new. */
export function rowsWritten(before: Map<string, string>, after: Map<string, string>): number {
  let n = 0;
  for (const [id, v] of before) if (after.get(id) !== undefined && after.get(id) !== v) n++;
  return n;
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor((s.length - 1) / 2)]!;
};

export const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

/**
 * Load for the crash checker: concurrent clients that behave as SPEC.md tells callers to.
 * - v2 clients send with an idempotency key and retry the same key (same body) after a lost answer: a
 *   connection error, or a 5xx (the gateway is restarting, the instance is not connected yet, a timeout).
 * - v1 clients send synchronously and resend the same message only when no response arrived at all
 *   (SPEC.md "Response envelope", rule 1); any answer ends the request.
 * Every request body is unique, so the ledger can be matched to the requests by body.
 */

export type Api = 'v1' | 'v2';

/** One logical request as its client saw it (over however many attempts it took). */
export interface RequestRecord {
  api: Api;
  body: string;
  idempotencyKey: string | null;
  attempts: number;
  /** attempts that ended without any response (connection refused or reset) */
  lostAnswers: number;
  /** the final HTTP status (null when the run ended before any answer) */
  status: number | null;
  code: string | null;
  /** v2: 202 or 200 with a jobId; v1: 200 sent */
  accepted: boolean;
  jobId: string | null;
  messageId: string | null;
}

export interface LoadOptions {
  url: string;
  apiKey: string;
  v2Clients: number;
  v1Clients: number;
  runId: string;
  /** pause between two requests of one client */
  thinkMs: number;
  random: () => number;
}

export interface Load {
  records: RequestRecord[];
  /** HTTP attempts made so far */
  attempts(): number;
  /** stop starting new requests; resolves when every client has an answer for its current one */
  stop(deadlineMs: number): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Long enough that only a dead gateway ends an attempt without an answer (the v1 wait is 20 s). */
const ATTEMPT_TIMEOUT_MS = 45_000;

interface Answer {
  status: number;
  success: boolean;
  code: string | null;
  data: Record<string, unknown>;
}

async function post(url: string, apiKey: string, body: unknown, headers: Record<string, string>): Promise<Answer | null> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
    });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
    const obj = parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
    const data = obj.data && typeof obj.data === 'object' ? (obj.data as Record<string, unknown>) : {};
    return { status: res.status, success: obj.success === true, code: typeof obj.code === 'string' ? obj.code : null, data };
  } catch {
    // no response at all: refused, reset, or the body was cut off by the kill
    return null;
  }
}

export function startLoad(opts: LoadOptions): Load {
  const records: RequestRecord[] = [];
  let attempts = 0;
  let stopping = false;
  let hardDeadline = Number.POSITIVE_INFINITY;

  // registered numbers (the sandbox has no account for numbers ending in 0000), one per client
  const recipient = (client: number) => `4917612${String(client).padStart(3, '0')}4567`;

  async function runOne(api: Api, client: number, n: number): Promise<void> {
    const body = `chaos ${opts.runId} ${api} c${client} #${n}`;
    const key = api === 'v2' ? `chaos-${opts.runId}-c${client}-${n}` : null;
    const rec: RequestRecord = {
      api, body, idempotencyKey: key, attempts: 0, lostAnswers: 0, status: null, code: null, accepted: false, jobId: null, messageId: null,
    };
    records.push(rec);
    const route = api === 'v2' ? '/api/v2/send-message' : '/api/send-message';
    const payload = { phone: recipient(client), message: body, ...(key ? { idempotencyKey: key } : {}) };
    for (;;) {
      if (Date.now() > hardDeadline) return;
      rec.attempts++;
      attempts++;
      const a = await post(opts.url + route, opts.apiKey, payload, {});
      if (a === null) {
        rec.lostAnswers++;
        await sleep(100 + opts.random() * 150);
        continue;
      }
      rec.status = a.status;
      rec.code = a.code;
      // v2 with a key: a 5xx may have been accepted or not; the same key makes the retry safe
      if (api === 'v2' && a.status >= 500) {
        await sleep(100 + opts.random() * 150);
        continue;
      }
      if (api === 'v2' && a.success && (a.status === 202 || a.status === 200)) {
        rec.accepted = true;
        rec.jobId = typeof a.data.jobId === 'string' ? a.data.jobId : null;
      }
      if (api === 'v1' && a.success && a.status === 200) {
        rec.accepted = true;
        rec.messageId = typeof a.data.messageId === 'string' ? a.data.messageId : null;
      }
      return;
    }
  }

  async function client(api: Api, id: number): Promise<void> {
    for (let n = 1; !stopping; n++) {
      await runOne(api, id, n);
      await sleep(opts.thinkMs * (0.5 + opts.random()));
    }
  }

  const running: Promise<void>[] = [];
  for (let i = 0; i < opts.v2Clients; i++) running.push(client('v2', i));
  for (let i = 0; i < opts.v1Clients; i++) running.push(client('v1', opts.v2Clients + i));

  return {
    records,
    attempts: () => attempts,
    async stop(deadlineMs) {
      stopping = true;
      hardDeadline = Date.now() + deadlineMs;
      await Promise.all(running);
    },
  };
}

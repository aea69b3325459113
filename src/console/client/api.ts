/**
 * Calls from the console to the gateway: same origin, the session cookie sent by the browser, `X-Console: 1`
 * on every call (the admin guard requires it for changes; see src/console/auth.ts). Answers are the gateway's
 * envelope; a refusal becomes an ApiError carrying the server's own message.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** the field a validation failure names (data.field) */
    readonly field: string | null = null,
  ) {
    super(message);
  }
}

interface Envelope {
  success?: boolean;
  data?: unknown;
  error?: string;
  code?: string;
}

/** Told when a call other than the sign-in is refused 401: the session ended (main.ts shows the sign-in form). */
let onSessionEnded: (reason: string) => void = () => undefined;
export function whenSessionEnded(f: (reason: string) => void): void {
  onSessionEnded = f;
}

export async function call<T>(method: string, url: string, body?: unknown): Promise<T> {
  const res = await fetch(url, {
    method,
    credentials: 'same-origin',
    headers: { 'X-Console': '1', ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  let env: Envelope = {};
  try {
    env = (await res.json()) as Envelope;
  } catch {
    env = {};
  }
  if (!res.ok || env.success !== true) {
    // found from the outside: after a fail-over in a cluster the page stayed "live" while every action was refused
    // 401 (the session is the node's), with no way back to the sign-in form but Sign out
    if (res.status === 401 && url !== '/console/session') onSessionEnded(env.error ?? 'The console session has ended: sign in again.');
    const field = env.data && typeof env.data === 'object' ? (env.data as { field?: unknown }).field : undefined;
    throw new ApiError(res.status, env.code ?? 'HTTP_' + String(res.status), env.error ?? `${method} ${url} answered ${res.status}`, typeof field === 'string' ? field : null);
  }
  return env.data as T;
}

/** The text to show for a failure: the server's own message for a refusal. */
export const message = (err: unknown): string => (err instanceof ApiError || err instanceof Error ? err.message : String(err));

/** A refusal as a form shows it: the server's message, with the field it names when the message does not start with it. */
export function refusal(err: unknown): string {
  return err instanceof ApiError && err.field && !err.message.startsWith(err.field) ? `${err.field}: ${err.message}` : message(err);
}

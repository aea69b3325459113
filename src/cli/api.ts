/**
 * How `mgw` talks to a running gateway: its address and the operator token from the environment, one call to
 * the operator API (/admin/v1) answering the envelope, and the helpers every verb answers with: a refusal
 * prints the envelope and exits 1, a success prints a table or text (or the envelope with `--json`).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { UsageError, type Parsed } from './args.js';

/**
 * The gateway's address: MGW_URL, else http://127.0.0.1:$PORT. A usage error names the variable without
 * echoing it: an address with a user or password is refused (the token goes as a bearer token, and the
 * password was printed back in the error). Found from the outside, as was `PORT=abc` answering only "Invalid URL".
 */
export function gatewayUrl(): URL {
  const given = process.env.MGW_URL || undefined;
  const from = given !== undefined ? 'MGW_URL' : 'PORT';
  let url: URL;
  try {
    url = new URL(given ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`);
  } catch {
    throw new UsageError(from === 'MGW_URL' ? 'mgw: MGW_URL is not a URL (e.g. http://127.0.0.1:3000)' : 'mgw: PORT is not a port number (or set MGW_URL)');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`mgw: ${from} must be an http:// or https:// address`);
  if (url.username !== '' || url.password !== '') {
    throw new UsageError('mgw: MGW_URL must not carry a user or password (the admin token is sent as a bearer token)');
  }
  return url;
}

async function adminToken(): Promise<string> {
  if (process.env.ADMIN_TOKEN) return process.env.ADMIN_TOKEN;
  const file = path.resolve(process.env.DATA_DIR || 'data', 'admin-token');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    throw new Error(`no ADMIN_TOKEN set and ${file} not readable`);
  }
}

/** fetch, with a connection failure named by the URL that could not be reached (and its cause). */
export async function request(url: URL, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
    const code = typeof cause === 'object' && cause !== null && 'code' in cause && typeof cause.code === 'string' ? cause.code : null;
    const why = code ?? (cause instanceof Error ? cause.message : String(cause));
    throw new Error(`cannot reach the gateway at ${url.origin} (${why}); is it running? set MGW_URL to its address`);
  }
}

export interface Envelope {
  ok: boolean;
  body: unknown;
}

export async function call(method: string, route: string, body?: unknown): Promise<Envelope> {
  const url = new URL(route, gatewayUrl());
  const res = await request(url, {
    method,
    headers: { authorization: `Bearer ${await adminToken()}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json: unknown = await res.json().catch(() => ({ success: false, error: `HTTP ${res.status}` }));
  return { ok: res.ok, body: json };
}

export const print = (v: unknown) => console.log(JSON.stringify(v, null, 2));
export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A refusal: the envelope on stdout, exit 1. Otherwise `show` the data (or the envelope with --json). */
export function answer(e: Envelope, p: Parsed, show?: (data: unknown) => string): void {
  if (!e.ok) {
    process.exitCode = 1;
    print(e.body);
    return;
  }
  if (p.flags.json === true || !show) return print(e.body);
  process.stdout.write(show(isRecord(e.body) ? e.body.data : undefined));
}

/** The `items` of a list answer, each a record. */
export const items = (data: unknown): Record<string, unknown>[] =>
  (isRecord(data) && Array.isArray(data.items) ? data.items : []).filter(isRecord);
export const str = (v: unknown): string | null => (v === null || v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v));

export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${what} is not valid JSON`);
  }
}

/** The operator route of one instance (and below it). */
export const inst = (id: string | undefined, rest = ''): string => `/admin/v1/instances/${encodeURIComponent(id ?? '')}${rest}`;
export const arg = (p: Parsed, name: string): string => p.args[name] ?? '';

/** Ask before a delete; without a terminal only `--yes` (or `-y`) goes ahead. */
export async function confirm(p: Parsed, verb: string, what: string): Promise<void> {
  if (p.flags.yes === true || p.flags.y === true) return;
  if (!process.stdin.isTTY) throw new UsageError(`mgw ${verb}: refusing to ${what} without confirmation: stdin is not a terminal; pass --yes`);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const reply = (await rl.question(`${what}? type 'yes' to go ahead: `)).trim().toLowerCase();
    if (reply !== 'yes' && reply !== 'y') throw new UsageError(`mgw ${verb}: not confirmed, nothing deleted`);
  } finally {
    rl.close();
  }
}

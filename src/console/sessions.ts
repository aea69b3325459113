/**
 * The operator console's sign-in sessions: an opaque random id in an HttpOnly, SameSite=Strict cookie, mapped
 * here to "signed in with the admin token" until it expires (12 h) or the operator signs out. The map is keyed
 * by the id's SHA-256 (a lookup never compares the id itself), lives in memory only (a restart signs everyone
 * out) and is bounded: the oldest session goes when the bound is reached. The live event streams of each
 * session are tracked so that signing out, or stopping the gateway, ends them.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import type { Clock } from '../clock.js';

export const CONSOLE_COOKIE = 'mgw_console';
export const CONSOLE_SESSION_TTL_MS = 12 * 60 * 60 * 1000;
const MAX_SESSIONS = 1_000;
/** base64url of 32 random bytes */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

const keyOf = (id: string): string => createHash('sha256').update(id).digest('base64url');

export class ConsoleSessions {
  /** key (hash of the id) → expiry */
  private readonly sessions = new Map<string, number>();
  /** key → the stop functions of the session's open event streams (called with true when signed out) */
  private readonly streams = new Map<string, Set<(signedOut: boolean) => void>>();

  constructor(
    private readonly clock: Pick<Clock, 'now'>,
    private readonly ttlMs = CONSOLE_SESSION_TTL_MS,
  ) {}

  /** A new session; the id goes into the cookie and nowhere else. */
  create(): string {
    this.prune();
    if (this.sessions.size >= MAX_SESSIONS) {
      const oldest = this.sessions.keys().next().value;
      if (oldest !== undefined) this.drop(oldest);
    }
    const id = randomBytes(32).toString('base64url');
    this.sessions.set(keyOf(id), this.clock.now() + this.ttlMs);
    return id;
  }

  /** The session id the request's cookie names, when it has the right shape (valid or not). */
  idOf(ctx: Context): string | null {
    const id = ctx.cookies.get(CONSOLE_COOKIE);
    return id !== undefined && SESSION_ID.test(id) ? id : null;
  }

  valid(id: string | null): id is string {
    if (id === null) return false;
    const key = keyOf(id);
    const expires = this.sessions.get(key);
    if (expires === undefined) return false;
    if (expires <= this.clock.now()) {
      this.drop(key);
      return false;
    }
    return true;
  }

  /** Sign out: the session and its open streams end. */
  delete(id: string): void {
    this.drop(keyOf(id));
  }

  /** Register an open stream of the session (null: of a bearer client); returns the function that unregisters it. */
  track(id: string | null, stop: (signedOut: boolean) => void): () => void {
    const key = id === null ? '' : keyOf(id);
    let set = this.streams.get(key);
    if (!set) this.streams.set(key, (set = new Set()));
    set.add(stop);
    return () => {
      set.delete(stop);
      if (set.size === 0 && this.streams.get(key) === set) this.streams.delete(key);
    };
  }

  /** The gateway stops: every open stream ends (sessions stay until the process ends). */
  close(): void {
    for (const set of [...this.streams.values()]) for (const stop of [...set]) stop(false);
    this.streams.clear();
  }

  get size(): number {
    return this.sessions.size;
  }

  private drop(key: string): void {
    this.sessions.delete(key);
    const set = this.streams.get(key);
    this.streams.delete(key);
    if (set) for (const stop of [...set]) stop(true);
  }

  private prune(): void {
    const now = this.clock.now();
    for (const [key, expires] of this.sessions) if (expires <= now) this.drop(key);
  }
}

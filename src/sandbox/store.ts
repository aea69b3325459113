/**
 * Where the sandbox network keeps its state: in memory, and on disk when given a path, so links, chats and
 * the ledger survive a restart of whichever process hosts the network.
 *
 * Files beside `<statePath>`: the state file itself holds the small records (accounts, links, groups, chat
 * state, account faults) and is rewritten whole, at most once every META_FLUSH_MS (with ten thousand linked
 * sessions it is a megabyte or two: rewriting it for every message or link would cost more than the rest of
 * the network). What must not wait for that is journaled, appended synchronously, so it is on disk before the
 * caller hears back: the links (`.sessions.jsonl`: a session's record per change, the last one wins), the
 * messages (`.messages.jsonl`: a full snapshot of a message per change) and the ledger (`.ledger.jsonl`: one
 * entry per line); messages and the ledger grow without bound. Loading folds the journals back (the sessions
 * into the state file). Media bytes: one file per sha256 in `.media/`.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dict, emptyState, type LedgerEntry, type NetMessage, type NetworkState, type SessionRecord } from './types.js';

/** The state file is rewritten at most this often (a kill loses at most this much of accounts, groups, chat state). */
export const META_FLUSH_MS = 1_000;

export class SandboxStore {
  private readonly media = new Map<string, Buffer>();
  private readonly files: { meta: string; sessions: string; messages: string; ledger: string; media: string } | null;
  private metaPending: NetworkState | null = null;
  private flushTimer: NodeJS.Timeout | null = null;

  constructor(statePath: string | null) {
    this.files = statePath
      ? { meta: statePath, sessions: `${statePath}.sessions.jsonl`, messages: `${statePath}.messages.jsonl`, ledger: `${statePath}.ledger.jsonl`, media: `${statePath}.media` }
      : null;
    if (this.files) mkdirSync(path.dirname(this.files.meta), { recursive: true });
  }

  load(): NetworkState {
    const state = emptyState();
    if (!this.files) return state;
    if (existsSync(this.files.meta)) {
      const file = this.files.meta;
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        // a directory, a file this user may not read: named with the path (EISDIR's own message has none)
        throw new Error(`sandbox state file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`, { cause: err });
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        // never the file's text (JSON.parse's message quotes it)
        throw new Error(`sandbox state file ${file} is not JSON: not a state file the sandbox wrote`);
      }
      if (!isState(parsed)) throw new Error(`sandbox state file ${this.files.meta} has an unknown format`);
      // every record keyed by outside input stays prototype-free (types.ts dict)
      state.accounts = dict(parsed.accounts);
      state.sessions = dict(parsed.sessions);
      state.groups = dict(parsed.groups);
      state.chatStates = dict(parsed.chatStates);
      state.accountFaults = dict(parsed.accountFaults);
    }
    for (const { instanceId, record } of readJournal<{ instanceId: string; record: SessionRecord | null }>(this.files.sessions)) {
      // null: the instance was deleted (SandboxNetwork.forget)
      if (record === null) delete state.sessions[instanceId];
      else state.sessions[instanceId] = record;
    }
    if (existsSync(this.files.sessions)) {
      // folded into the state file, then the journal starts again (a kill in between replays the same records)
      this.metaPending = state;
      this.flush();
      rmSync(this.files.sessions, { force: true });
    }
    for (const m of readJournal<NetMessage>(this.files.messages)) state.messages[m.key] = { ...m, votes: dict(m.votes), reactions: dict(m.reactions) };
    const ledger = readJournal<LedgerEntry>(this.files.ledger);
    for (const e of ledger) (state.ledger[e.instanceId] ??= []).push(e);
    this.rewriteJournals(state, ledger);
    return state;
  }

  /** Rewrite the small records soon (within META_FLUSH_MS, however many changes). */
  saveMeta(state: NetworkState): void {
    if (!this.files) return;
    this.metaPending = state;
    this.flushTimer ??= setTimeout(() => this.flush(), META_FLUSH_MS).unref();
  }

  /** A session's link changed: journaled before returning (a link survives a kill right after it). */
  appendSession(instanceId: string, record: SessionRecord | null): void {
    if (this.files) appendFileSync(this.files.sessions, `${JSON.stringify({ instanceId, record })}\n`, OWNER_ONLY);
  }

  appendMessage(m: NetMessage): void {
    if (this.files) appendFileSync(this.files.messages, `${JSON.stringify(m)}\n`, OWNER_ONLY);
  }

  appendLedger(e: LedgerEntry): void {
    if (this.files) appendFileSync(this.files.ledger, `${JSON.stringify(e)}\n`, OWNER_ONLY);
  }

  flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    const state = this.metaPending;
    if (!this.files || !state) return;
    this.metaPending = null;
    const { messages: _m, ledger: _l, ...meta } = state;
    writeAtomically(this.files.meta, JSON.stringify(meta));
  }

  putMedia(sha256: string, bytes: Buffer): void {
    this.media.set(sha256, bytes);
    if (!this.files) return;
    const file = path.join(this.files.media, sha256);
    if (existsSync(file)) return;
    mkdirSync(this.files.media, { recursive: true, mode: 0o700 });
    writeFileSync(file, bytes, OWNER_ONLY);
  }

  getMedia(sha256: string): Buffer | null {
    const cached = this.media.get(sha256);
    if (cached) return cached;
    if (!this.files || !/^[0-9a-f]{64}$/.test(sha256)) return null;
    const file = path.join(this.files.media, sha256);
    if (!existsSync(file)) return null;
    const bytes = readFileSync(file);
    this.media.set(sha256, bytes);
    return bytes;
  }

  /**
   * Rewrite both journals after loading: the message journal shrinks to one snapshot per message, and a torn
   * last line is dropped, so the next append starts on a line of its own.
   */
  private rewriteJournals(state: NetworkState, ledger: LedgerEntry[]): void {
    if (!this.files) return;
    const lines = (records: unknown[]) => records.map((r) => `${JSON.stringify(r)}\n`).join('');
    if (existsSync(this.files.messages)) writeAtomically(this.files.messages, lines(Object.values(state.messages)));
    if (existsSync(this.files.ledger)) writeAtomically(this.files.ledger, lines(ledger));
  }
}

/**
 * The sandbox's files (message bodies, media, links) are the owner's alone, whatever DATA_DIR's own mode (found
 * from the outside: 0644 in a DATA_DIR the operator had made with looser permissions; the gateway makes it 0700).
 */
const OWNER_ONLY = { mode: 0o600 } as const;

function writeAtomically(file: string, text: string): void {
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, text, OWNER_ONLY);
  renameSync(tmp, file);
}

/** Lines of a journal; a torn last line (the process died mid-append) is ignored. */
function readJournal<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  const out: T[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    try {
      // our own journal: each complete line is a record we wrote
      out.push(JSON.parse(line) as T);
    } catch {
      // only the last line can be torn; anything after it is not there
    }
  }
  return out;
}

/** The file is ours; checking the version and the top-level records is enough to refuse a foreign file. */
function isState(v: unknown): v is Partial<NetworkState> {
  if (!v || typeof v !== 'object') return false;
  const o = v as Record<string, unknown>;
  return o.version === 1 && ['accounts', 'sessions'].every((k) => o[k] && typeof o[k] === 'object');
}

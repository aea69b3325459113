/**
 * Where the sandbox network keeps its state: in memory, and on disk when given a path, so links, chats and
 * the ledger survive a restart of whichever process hosts the network.
 *
 * Files beside `<statePath>`: the state file itself holds the small records (accounts, links, groups, chat
 * state, account faults) and is rewritten whole, at most once per event-loop turn; messages and the ledger
 * grow without bound, so they are append-only journals (`.messages.jsonl`: a full snapshot of a message per
 * change, the last one wins; `.ledger.jsonl`: one entry per line), appended synchronously so that what the
 * network received is on disk before the sender hears back. Media bytes: one file per sha256 in `.media/`.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dict, emptyState, type LedgerEntry, type NetMessage, type NetworkState } from './types.js';

export class SandboxStore {
  private readonly media = new Map<string, Buffer>();
  private readonly files: { meta: string; messages: string; ledger: string; media: string } | null;
  private metaPending: NetworkState | null = null;
  private flushScheduled = false;

  constructor(statePath: string | null) {
    this.files = statePath
      ? { meta: statePath, messages: `${statePath}.messages.jsonl`, ledger: `${statePath}.ledger.jsonl`, media: `${statePath}.media` }
      : null;
    if (this.files) mkdirSync(path.dirname(this.files.meta), { recursive: true });
  }

  load(): NetworkState {
    const state = emptyState();
    if (!this.files) return state;
    if (existsSync(this.files.meta)) {
      const parsed: unknown = JSON.parse(readFileSync(this.files.meta, 'utf8'));
      if (!isState(parsed)) throw new Error(`sandbox state file ${this.files.meta} has an unknown format`);
      // every record keyed by outside input stays prototype-free (types.ts dict)
      state.accounts = dict(parsed.accounts);
      state.sessions = dict(parsed.sessions);
      state.groups = dict(parsed.groups);
      state.chatStates = dict(parsed.chatStates);
      state.accountFaults = dict(parsed.accountFaults);
    }
    for (const m of readJournal<NetMessage>(this.files.messages)) state.messages[m.key] = { ...m, votes: dict(m.votes), reactions: dict(m.reactions) };
    const ledger = readJournal<LedgerEntry>(this.files.ledger);
    for (const e of ledger) (state.ledger[e.instanceId] ??= []).push(e);
    this.rewriteJournals(state, ledger);
    return state;
  }

  /** Rewrite the small records soon (once per turn, however many changes); `now` writes before returning. */
  saveMeta(state: NetworkState, now = false): void {
    if (!this.files) return;
    this.metaPending = state;
    if (now) return this.flush();
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush()).unref();
  }

  appendMessage(m: NetMessage): void {
    if (this.files) appendFileSync(this.files.messages, `${JSON.stringify(m)}\n`);
  }

  appendLedger(e: LedgerEntry): void {
    if (this.files) appendFileSync(this.files.ledger, `${JSON.stringify(e)}\n`);
  }

  flush(): void {
    this.flushScheduled = false;
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
    mkdirSync(this.files.media, { recursive: true });
    writeFileSync(file, bytes);
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

function writeAtomically(file: string, text: string): void {
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, text);
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

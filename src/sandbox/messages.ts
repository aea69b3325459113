/**
 * Messages on the sandbox network: posting (with the events each side sees), acks that progress
 * server → device → read on the clock, reactions, edits, revokes, poll votes, reads and per-account chat state.
 * Every change is journaled before its events go out, so an observer never sees an event the state lacks.
 */
import { DriverError, type MessageAck, type WireChat, type WireMessage } from '../drivers/contract.js';
import type { Draft } from './content.js';
import { newPhoneKey, newWebKey, parseChatId, parseMessageId, userId } from './ids.js';
import type { MessageNetwork } from './books.js';
import * as actions from './message-actions.js';
import { dict, type ChatRef, type ChatStateRecord, type NetMessage } from './types.js';
import { chatIdFor, wireChat, wireMessage } from './wire.js';

export interface PostInput {
  sender: string;
  chat: ChatRef;
  draft: Draft;
  quotedKey?: string | null;
  mentions?: string[];
  isForwarded?: boolean;
  /** `web` keys for messages from linked instances, `phone` keys for the simulated people */
  origin: 'web' | 'phone';
  /** deliver as not-yet-decryptable (`message_ciphertext` instead of `message`) */
  ciphertext?: boolean;
  /** store only: no events, no unread count, no acks (system notices such as a number change) */
  silent?: boolean;
}

const chatKey = (chat: ChatRef, sender: string) =>
  chat.kind === 'group' ? `g:${chat.gid}` : `d:${[sender, chat.to].sort().join('|')}`;

export class MessageBook {
  /** chat key → message keys in posting order */
  private readonly byChat = new Map<string, string[]>();

  constructor(private readonly net: MessageNetwork) {}

  /** Rebuild the chat index and resume ack timers after loading a state file. */
  reindex(): void {
    this.byChat.clear();
    for (const m of Object.values(this.net.state.messages)) {
      this.index(m);
      for (const p of m.audience) this.net.know(p);
      this.scheduleAcks(m);
    }
  }

  private index(m: NetMessage): void {
    const k = chatKey(m.chat, m.sender);
    const list = this.byChat.get(k) ?? [];
    list.push(m.key);
    this.byChat.set(k, list);
  }

  get(key: string): NetMessage | null {
    return this.net.state.messages[key] ?? null;
  }

  chatState(phone: string, chatId: string): ChatStateRecord {
    const k = `${phone}|${chatId}`;
    return (this.net.state.chatStates[k] ??= { unreadCount: 0, archived: false, pinned: false, muteExpiration: null });
  }

  post(input: PostInput): NetMessage {
    const { sender, chat, draft } = input;
    const audience =
      chat.kind === 'direct'
        ? [...new Set([sender, chat.to])]
        : (this.net.groups.require(chat.gid).participants.map((p) => p.phone));
    const m: NetMessage = {
      key: input.origin === 'web' ? newWebKey() : newPhoneKey(),
      sender,
      chat,
      audience,
      type: input.ciphertext ? 'ciphertext' : draft.type,
      body: draft.body,
      timestampMs: this.net.now(),
      media: draft.media?.ref ?? null,
      location: draft.location,
      vCards: draft.vCards,
      poll: draft.poll,
      votes: dict(),
      reactions: dict(),
      quotedKey: input.quotedKey ?? null,
      mentions: input.mentions ?? [],
      isForwarded: input.isForwarded ?? false,
      ack: 1,
      edits: [],
      revoked: false,
      deletedFor: [],
    };
    if (draft.media?.bytes) this.net.store.putMedia(draft.media.ref.sha256, draft.media.bytes);
    this.net.state.messages[m.key] = m;
    this.index(m);
    for (const p of audience) {
      this.net.know(p);
      if (p !== sender && !input.silent) this.chatState(p, chatIdFor(m, p)).unreadCount++;
    }
    this.net.saveMessage(m);
    this.net.persist();
    if (input.silent) return m;

    this.net.emitTo(sender, () => ({ name: 'message_create', args: [wireMessage(m, sender)] }));
    if (m.media) this.net.emitTo(sender, () => ({ name: 'media_uploaded', args: [wireMessage(m, sender)] }));
    for (const p of audience) {
      if (p === sender) continue;
      if (input.ciphertext) {
        this.net.emitTo(p, () => ({ name: 'message_ciphertext', args: [wireMessage(m, p)] }));
        continue;
      }
      this.net.emitTo(p, () => ({ name: 'message_create', args: [wireMessage(m, p)] }));
      this.net.emitTo(p, () => ({ name: 'message', args: [wireMessage(m, p)] }));
      const chat = this.chat(p, chatIdFor(m, p));
      if (chat) this.net.emitTo(p, () => ({ name: 'unread_count', args: [{ ...chat }] }));
    }
    this.scheduleAcks(m);
    return m;
  }

  /**
   * Device ack after `deviceMs`. Read ack after `readMs` only when no recipient is a linked instance: an
   * instance reads by calling sendSeen, like a person opening the chat.
   */
  private scheduleAcks(m: NetMessage): void {
    if (m.revoked || m.ack >= 3) return;
    const others = m.audience.filter((p) => p !== m.sender);
    if (others.length === 0) return;
    const age = this.net.now() - m.timestampMs;
    if (m.ack < 2) this.net.schedule(this.net.ackDelays.deviceMs - age, () => this.setAck(m.key, 2));
    if (!others.some((p) => this.net.isLinked(p))) {
      this.net.schedule(this.net.ackDelays.readMs - age, () => this.setAck(m.key, 3));
    }
  }

  setAck(key: string, ack: MessageAck): void {
    const m = this.get(key);
    if (!m || m.ack >= ack) return;
    m.ack = ack;
    this.net.saveMessage(m);
    this.net.emitTo(m.sender, () => ({ name: 'message_ack', args: [wireMessage(m, m.sender), ack] }));
  }

  // ---- lookups from one account's side

  visible(m: NetMessage, viewer: string): boolean {
    return m.audience.includes(viewer) && !m.deletedFor.includes(viewer);
  }

  /** The message behind a serialized id, if `viewer` can see it. */
  find(viewer: string, serializedId: string): NetMessage | null {
    const parsed = parseMessageId(serializedId);
    const m = parsed ? this.get(parsed.key) : null;
    return m && this.visible(m, viewer) ? m : null;
  }

  require(viewer: string, serializedId: string): NetMessage {
    const m = this.find(viewer, serializedId);
    if (!m) throw new DriverError('message not found', 'NOT_FOUND', true);
    return m;
  }

  /** Messages of one chat as `viewer` sees it, oldest first. */
  inChat(viewer: string, chatId: string): NetMessage[] {
    const parsed = parseChatId(chatId);
    let key: string | null = null;
    if (parsed?.kind === 'group') key = `g:${parsed.gid}`;
    else {
      const other = this.net.resolveUser(chatId);
      if (other) key = `d:${[viewer, other].sort().join('|')}`;
    }
    const keys = key ? (this.byChat.get(key) ?? []) : [];
    return keys.map((k) => this.get(k)).filter((m): m is NetMessage => m !== null && this.visible(m, viewer));
  }

  fetch(viewer: string, chatId: string, limit: number, fromMe?: boolean): WireMessage[] {
    const all = this.inChat(viewer, chatId).filter((m) => fromMe === undefined || (m.sender === viewer) === fromMe);
    return all.slice(Math.max(0, all.length - Math.max(0, limit))).map((m) => wireMessage(m, viewer));
  }

  chats(viewer: string): WireChat[] {
    const last = new Map<string, number>();
    for (const m of Object.values(this.net.state.messages)) {
      if (!this.visible(m, viewer)) continue;
      const id = chatIdFor(m, viewer);
      last.set(id, Math.max(last.get(id) ?? 0, m.timestampMs));
    }
    for (const g of this.net.groups.of(viewer)) if (!last.has(g.gid)) last.set(g.gid, g.createdAtMs);
    const out: WireChat[] = [];
    for (const id of last.keys()) {
      const c = this.chat(viewer, id, last.get(id));
      if (c) out.push(c);
    }
    return out.sort((a, b) => b.timestamp - a.timestamp);
  }

  chat(viewer: string, chatId: string, lastMs?: number): WireChat | null {
    const parsed = parseChatId(chatId);
    if (parsed?.kind === 'group') {
      const g = this.net.state.groups[parsed.gid];
      if (!g || !(g.participants.some((p) => p.phone === viewer) || g.former.includes(viewer))) return null;
      const member = g.participants.some((p) => p.phone === viewer);
      const ts = lastMs ?? Math.max(g.createdAtMs, ...this.inChat(viewer, chatId).map((m) => m.timestampMs));
      return wireChat(g.gid, g.subject, true, !member, ts, this.net.state.chatStates[`${viewer}|${g.gid}`]);
    }
    const other = this.net.resolveUser(chatId);
    if (!other) return null;
    const id = userId(other);
    const msgs = lastMs === undefined ? this.inChat(viewer, id) : [];
    if (lastMs === undefined && msgs.length === 0) return null;
    const ts = lastMs ?? Math.max(...msgs.map((m) => m.timestampMs));
    return wireChat(id, this.net.displayName(other), false, false, ts, this.net.state.chatStates[`${viewer}|${id}`]);
  }

  // ---- acting on messages (reactions, edits, revokes and votes: message-actions.ts)

  /** Open the chat: unread to zero, and the other side's messages become read (ack 3). */
  markSeen(viewer: string, chatId: string): void {
    const msgs = this.inChat(viewer, chatId);
    const id = msgs[0] ? chatIdFor(msgs[0], viewer) : chatId;
    this.chatState(viewer, id).unreadCount = 0;
    this.net.persist();
    for (const m of msgs) if (m.sender !== viewer && !m.revoked) this.setAck(m.key, 3);
  }

  react(reactor: string, m: NetMessage, emoji: string): void {
    actions.react(this.net, reactor, m, emoji);
  }

  /** false: the message cannot be edited (see message-actions.ts). */
  edit(editor: string, m: NetMessage, body: string): boolean {
    return actions.edit(this.net, editor, m, body);
  }

  revokeForEveryone(actor: string, m: NetMessage): void {
    actions.revokeForEveryone(this.net, actor, m);
  }

  deleteForMe(viewer: string, m: NetMessage): void {
    actions.deleteForMe(this.net, viewer, m);
  }

  vote(voter: string, m: NetMessage, selected: string[]): void {
    actions.vote(this.net, voter, m, selected);
  }
}

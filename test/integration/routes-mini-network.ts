/**
 * The in-memory messaging network of the route tests: one linked account with chats, messages, contacts and
 * groups, implementing the Driver methods the network routes use, honestly: unknown ids are DriverError
 * NOT_FOUND (NOT_A_GROUP for groups), edits of others' messages are refused (null), participants are really
 * added, promoted and removed, attachments are downloadable, and every call is counted so tests can see what
 * reached the network.
 */
import { DriverError } from '../../src/drivers/contract.js';
import type {
  ClientInfo,
  CreateGroupResult,
  Driver,
  DriverEventName,
  FetchMessagesOptions,
  MessageMedia,
  SendOptions,
  SendResult,
  WAState,
  WireChat,
  WireContact,
  WireGroup,
  WireMessage,
} from '../../src/drivers/contract.js';
import type { Clock } from '../../src/clock.js';

export const ME = '4915199999999@c.us';

type Calls = Record<string, number>;
const unsupported = (what: string) => new DriverError(`${what} is not part of the route test network`, 'CALL_FAILED', true);

/** An in-memory linked account with chats, messages, contacts and groups. */
export class MiniNetwork implements Driver {
  readonly kind = 'sandbox' as const;
  readonly info: ClientInfo = { wid: ME, pushname: 'me', platform: 'test' };
  readonly chats = new Map<string, WireChat>();
  readonly messages = new Map<string, WireMessage>();
  readonly contacts = new Map<string, WireContact>();
  readonly groups = new Map<string, WireGroup>();
  readonly registered = new Set<string>();
  readonly pictures = new Map<string, string>();
  readonly reactions = new Map<string, string>();
  readonly invites = new Map<string, string>();
  /** chat → current state shown ('typing' | 'recording'), cleared by clearState */
  readonly chatState = new Map<string, string>();
  /** message id → its attachment */
  readonly media = new Map<string, MessageMedia>();
  readonly calls: Calls = {};
  /** methods that fail with a network error (DriverError CALL_FAILED) */
  readonly failing = new Set<string>();
  private seq = 0;

  constructor(private readonly clock: Clock) {}

  count(method: string): number {
    return this.calls[method] ?? 0;
  }

  private enter(method: string): void {
    this.calls[method] = (this.calls[method] ?? 0) + 1;
    if (this.failing.has(method)) throw new DriverError(`${method} failed on the network`, 'CALL_FAILED', false);
  }

  // ---- fixtures

  addChat(c: Partial<WireChat> & { id: string }): WireChat {
    const chat: WireChat = {
      name: c.id.split('@')[0] ?? c.id,
      isGroup: c.id.endsWith('@g.us'),
      isReadOnly: false,
      unreadCount: 0,
      timestamp: Math.floor(this.clock.now() / 1000),
      archived: false,
      pinned: false,
      isMuted: false,
      muteExpiration: null,
      ...c,
    };
    this.chats.set(chat.id, chat);
    return chat;
  }

  addMessage(chatId: string, m: { fromMe: boolean; body: string; timestamp?: number; media?: MessageMedia }): WireMessage {
    const hex = (++this.seq).toString(16).toUpperCase().padStart(8, '0');
    const id = { fromMe: m.fromMe, remote: chatId, id: hex, _serialized: `${m.fromMe}_${chatId}_${hex}` };
    const msg: WireMessage = {
      id,
      from: m.fromMe ? ME : chatId,
      to: m.fromMe ? chatId : ME,
      author: null,
      body: m.body,
      type: 'chat',
      timestamp: m.timestamp ?? Math.floor(this.clock.now() / 1000),
      fromMe: m.fromMe,
      hasMedia: m.media !== undefined,
      hasQuotedMsg: false,
      ack: m.fromMe ? 2 : 0,
      isForwarded: false,
      deviceType: 'web',
      location: null,
      vCards: [],
    };
    if (m.media) {
      const size = Buffer.from(m.media.data, 'base64').length;
      msg.mediaInfo = { mimetype: m.media.mimetype, filename: m.media.filename ?? null, size };
      this.media.set(id._serialized, m.media);
    }
    this.messages.set(id._serialized, msg);
    return msg;
  }

  addContact(id: string, name: string | null): WireContact {
    const c: WireContact = {
      id,
      number: id.split('@')[0] ?? '',
      name,
      pushname: name?.toLowerCase() ?? null,
      shortName: null,
      isBusiness: false,
      isEnterprise: false,
      isMyContact: name !== null,
      isBlocked: false,
      isGroup: false,
      isUser: true,
      isWAContact: true,
    };
    this.contacts.set(id, c);
    this.registered.add(c.number);
    return c;
  }

  addGroup(id: string, participants: string[]): WireGroup {
    const chat = this.addChat({ id, name: `group ${id}`, isGroup: true });
    const g: WireGroup = {
      ...chat,
      owner: ME,
      description: null,
      participants: [
        { id: ME, isAdmin: true, isSuperAdmin: true },
        ...participants.map((p) => ({ id: p, isAdmin: false, isSuperAdmin: false })),
      ],
    };
    this.groups.set(id, g);
    this.invites.set(id, `INV${id.slice(0, 6)}`);
    return g;
  }

  // ---- lifecycle (not used by the routes)

  async initialize(): Promise<void> {}
  async destroy(): Promise<void> {}
  async logout(): Promise<void> {}
  async getState(): Promise<WAState | null> {
    return 'CONNECTED';
  }
  async requestPairingCode(): Promise<string> {
    throw unsupported('requestPairingCode');
  }
  browserHealth() {
    return { alive: true, failStreak: 0, lastOkAt: this.clock.now() };
  }
  async sendMessage(): Promise<SendResult> {
    throw unsupported('sendMessage');
  }
  async forwardMessage(): Promise<void> {
    throw unsupported('forwardMessage');
  }
  async downloadMedia(msgId: string): Promise<MessageMedia | null> {
    this.enter('downloadMedia');
    if (!this.messages.has(msgId)) throw new DriverError('no such message', 'NOT_FOUND', true);
    const media = this.media.get(msgId);
    return media ? { ...media } : null;
  }
  async createGroup(): Promise<CreateGroupResult> {
    throw unsupported('createGroup');
  }

  // ---- interactions

  async react(msgId: string, emoji: string): Promise<void> {
    this.enter('react');
    if (!this.messages.has(msgId)) throw new DriverError('no such message', 'NOT_FOUND', true);
    if (emoji === '') this.reactions.delete(msgId);
    else this.reactions.set(msgId, emoji);
  }

  async editMessage(msgId: string, body: string, _options: SendOptions): Promise<WireMessage | null> {
    this.enter('editMessage');
    const m = this.messages.get(msgId);
    if (!m) throw new DriverError('no such message', 'NOT_FOUND', true);
    if (!m.fromMe || m.type !== 'chat') return null;
    m.body = body;
    return m;
  }

  async deleteMessage(msgId: string, everyone: boolean): Promise<void> {
    this.enter('deleteMessage');
    const m = this.messages.get(msgId);
    if (!m) throw new DriverError('no such message', 'NOT_FOUND', true);
    if (everyone) {
      m.type = 'revoked';
      m.body = '';
    } else this.messages.delete(msgId);
  }

  async sendSeen(chatId: string): Promise<boolean> {
    this.enter('sendSeen');
    const c = this.chat(chatId);
    c.unreadCount = 0;
    return true;
  }

  async sendStateTyping(chatId: string): Promise<void> {
    this.enter('sendStateTyping');
    this.chat(chatId);
    this.chatState.set(chatId, 'typing');
  }

  async sendStateRecording(chatId: string): Promise<void> {
    this.enter('sendStateRecording');
    this.chat(chatId);
    this.chatState.set(chatId, 'recording');
  }

  async clearState(chatId: string): Promise<void> {
    this.enter('clearState');
    this.chat(chatId);
    this.chatState.delete(chatId);
  }

  // ---- reads

  async getChats(): Promise<WireChat[]> {
    this.enter('getChats');
    return [...this.chats.values()].map((c) => ({ ...c }));
  }

  async getChatById(chatId: string): Promise<WireChat | null> {
    this.enter('getChatById');
    const c = this.chats.get(chatId);
    return c ? { ...c } : null;
  }

  async fetchMessages(chatId: string, options: FetchMessagesOptions): Promise<WireMessage[]> {
    this.enter('fetchMessages');
    this.chat(chatId);
    const all = [...this.messages.values()]
      .filter((m) => m.id.remote === chatId && (options.fromMe === undefined || m.fromMe === options.fromMe))
      .sort((a, b) => a.timestamp - b.timestamp);
    return all.slice(-options.limit);
  }

  async getMessageById(msgId: string): Promise<WireMessage | null> {
    this.enter('getMessageById');
    return this.messages.get(msgId) ?? null;
  }

  async getContactById(contactId: string): Promise<WireContact | null> {
    this.enter('getContactById');
    return this.contacts.get(contactId) ?? null;
  }

  async getProfilePicUrl(contactId: string): Promise<string | null> {
    this.enter('getProfilePicUrl');
    return this.pictures.get(contactId) ?? null;
  }

  async getNumberId(phone: string): Promise<string | null> {
    this.enter('getNumberId');
    return this.registered.has(phone) ? `${phone}@c.us` : null;
  }

  // ---- groups

  async getGroup(groupId: string): Promise<WireGroup | null> {
    this.enter('getGroup');
    if (this.chats.has(groupId) && !this.groups.has(groupId)) throw new DriverError('not a group', 'NOT_A_GROUP', true);
    const g = this.groups.get(groupId);
    return g ? { ...g, participants: g.participants.map((p) => ({ ...p })) } : null;
  }

  async addParticipants(groupId: string, ids: string[]): Promise<Record<string, { code: number; message: string }>> {
    this.enter('addParticipants');
    const g = this.group(groupId);
    const out: Record<string, { code: number; message: string }> = {};
    for (const id of ids) {
      if (g.participants.some((p) => p.id === id)) out[id] = { code: 409, message: 'already a participant' };
      else if (!this.registered.has(id.split('@')[0] ?? '')) out[id] = { code: 404, message: 'not on the network' };
      else {
        g.participants.push({ id, isAdmin: false, isSuperAdmin: false });
        out[id] = { code: 200, message: 'added' };
      }
    }
    return out;
  }

  async removeParticipants(groupId: string, ids: string[]): Promise<void> {
    this.enter('removeParticipants');
    const g = this.group(groupId);
    g.participants = g.participants.filter((p) => !ids.includes(p.id));
  }

  async promoteParticipants(groupId: string, ids: string[]): Promise<void> {
    this.enter('promoteParticipants');
    for (const p of this.group(groupId).participants) if (ids.includes(p.id)) p.isAdmin = true;
  }

  async demoteParticipants(groupId: string, ids: string[]): Promise<void> {
    this.enter('demoteParticipants');
    for (const p of this.group(groupId).participants) if (ids.includes(p.id)) p.isAdmin = false;
  }

  async getInviteCode(groupId: string): Promise<string> {
    this.enter('getInviteCode');
    this.group(groupId);
    return this.invites.get(groupId) ?? '';
  }

  async revokeInvite(groupId: string): Promise<string> {
    this.enter('revokeInvite');
    this.group(groupId);
    const code = `NEW${(++this.seq).toString(36)}`;
    this.invites.set(groupId, code);
    return code;
  }

  async leaveGroup(groupId: string): Promise<void> {
    this.enter('leaveGroup');
    const g = this.group(groupId);
    g.participants = g.participants.filter((p) => p.id !== ME);
  }

  async setSubject(groupId: string, subject: string): Promise<void> {
    this.enter('setSubject');
    this.group(groupId).name = subject;
  }

  async setDescription(groupId: string, description: string): Promise<void> {
    this.enter('setDescription');
    this.group(groupId).description = description;
  }

  on<E extends DriverEventName>(_event: E): this {
    return this;
  }
  off<E extends DriverEventName>(_event: E): this {
    return this;
  }

  private chat(chatId: string): WireChat {
    const c = this.chats.get(chatId);
    if (!c) throw new DriverError('no such chat', 'NOT_FOUND', true);
    return c;
  }

  private group(groupId: string): WireGroup {
    const g = this.groups.get(groupId);
    if (!g) throw new DriverError('no such group', 'NOT_A_GROUP', true);
    return g;
  }
}

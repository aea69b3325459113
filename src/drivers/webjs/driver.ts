/**
 * The webjs driver: the contract (contract.ts) over a whatsapp-web.js Client driving the system Chromium.
 * The session (session.ts) owns the Client, the browser and the call gate; the operations live in
 * sending.ts, operations.ts and groups.ts; this class is the contract's face.
 */
import type {
  BrowserHealth,
  ClientInfo,
  CreateGroupResult,
  Driver,
  DriverEventName,
  DriverListener,
  FetchMessagesOptions,
  MessageMedia,
  SendContent,
  SendOptions,
  SendResult,
  WAState,
  WireChat,
  WireContact,
  WireGroup,
  WireMessage,
} from '../contract.js';
import * as groups from './groups.js';
import * as ops from './operations.js';
import type { SessionPaths, WebjsDriverOptions } from './options.js';
import * as sending from './sending.js';
import { WebjsSession } from './session.js';

export class WebjsDriver implements Driver {
  readonly kind = 'webjs' as const;
  private readonly session: WebjsSession;

  constructor(opts: WebjsDriverOptions) {
    this.session = new WebjsSession(opts);
  }

  /** Where this session keeps its profile (the link) and its browser's marker. */
  get paths(): SessionPaths {
    return this.session.paths;
  }

  // ---- lifecycle and events

  initialize(): Promise<void> {
    return this.session.initialize();
  }

  destroy(): Promise<void> {
    return this.session.destroy();
  }

  logout(): Promise<void> {
    return this.session.logout();
  }

  getState(): Promise<WAState | null> {
    return this.session.getState();
  }

  get info(): ClientInfo | null {
    return this.session.info;
  }

  requestPairingCode(phoneNumber: string): Promise<string> {
    return this.session.requestPairingCode(phoneNumber);
  }

  browserHealth(): BrowserHealth {
    return this.session.browserHealth();
  }

  on<E extends DriverEventName>(event: E, listener: DriverListener<E>): this {
    this.session.on(event, listener);
    return this;
  }

  off<E extends DriverEventName>(event: E, listener: DriverListener<E>): this {
    this.session.off(event, listener);
    return this;
  }

  // ---- sending

  sendMessage(chatId: string, content: SendContent, options: SendOptions): Promise<SendResult> {
    return sending.sendMessage(this.session, chatId, content, options);
  }

  forwardMessage(msgId: string, toChatId: string): Promise<void> {
    return sending.forwardMessage(this.session, msgId, toChatId);
  }

  // ---- interactions

  react(msgId: string, emoji: string): Promise<void> {
    return ops.react(this.session, msgId, emoji);
  }

  editMessage(msgId: string, body: string, options: SendOptions): Promise<WireMessage | null> {
    return ops.editMessage(this.session, msgId, body, options);
  }

  deleteMessage(msgId: string, everyone: boolean): Promise<void> {
    return ops.deleteMessage(this.session, msgId, everyone);
  }

  sendSeen(chatId: string): Promise<boolean> {
    return ops.sendSeen(this.session, chatId);
  }

  sendStateTyping(chatId: string): Promise<void> {
    return ops.chatState(this.session, chatId, 'typing');
  }

  sendStateRecording(chatId: string): Promise<void> {
    return ops.chatState(this.session, chatId, 'recording');
  }

  clearState(chatId: string): Promise<void> {
    return ops.chatState(this.session, chatId, 'clear');
  }

  // ---- reads

  getChats(): Promise<WireChat[]> {
    return ops.getChats(this.session);
  }

  getChatById(chatId: string): Promise<WireChat | null> {
    return ops.getChatById(this.session, chatId);
  }

  fetchMessages(chatId: string, options: FetchMessagesOptions): Promise<WireMessage[]> {
    return ops.fetchMessages(this.session, chatId, options);
  }

  getMessageById(msgId: string): Promise<WireMessage | null> {
    return ops.getMessageById(this.session, msgId);
  }

  getContactById(contactId: string): Promise<WireContact | null> {
    return ops.getContactById(this.session, contactId);
  }

  getProfilePicUrl(contactId: string): Promise<string | null> {
    return ops.getProfilePicUrl(this.session, contactId);
  }

  getNumberId(phone: string): Promise<string | null> {
    return ops.getNumberId(this.session, phone);
  }

  downloadMedia(msgId: string): Promise<MessageMedia | null> {
    return ops.downloadMedia(this.session, msgId);
  }

  // ---- groups

  createGroup(title: string, participants: string[], options: Record<string, unknown>): Promise<CreateGroupResult> {
    return groups.createGroup(this.session, title, participants, options);
  }

  getGroup(groupId: string): Promise<WireGroup | null> {
    return groups.getGroup(this.session, groupId);
  }

  addParticipants(groupId: string, ids: string[]): Promise<Record<string, { code: number; message: string }>> {
    return groups.addParticipants(this.session, groupId, ids);
  }

  removeParticipants(groupId: string, ids: string[]): Promise<void> {
    return groups.changeParticipants(this.session, groupId, ids, 'remove');
  }

  promoteParticipants(groupId: string, ids: string[]): Promise<void> {
    return groups.changeParticipants(this.session, groupId, ids, 'promote');
  }

  demoteParticipants(groupId: string, ids: string[]): Promise<void> {
    return groups.changeParticipants(this.session, groupId, ids, 'demote');
  }

  getInviteCode(groupId: string): Promise<string> {
    return groups.getInviteCode(this.session, groupId);
  }

  revokeInvite(groupId: string): Promise<string> {
    return groups.revokeInvite(this.session, groupId);
  }

  leaveGroup(groupId: string): Promise<void> {
    return groups.leaveGroup(this.session, groupId);
  }

  setSubject(groupId: string, subject: string): Promise<void> {
    return groups.setGroupInfo(this.session, groupId, { subject });
  }

  setDescription(groupId: string, description: string): Promise<void> {
    return groups.setGroupInfo(this.session, groupId, { description });
  }
}


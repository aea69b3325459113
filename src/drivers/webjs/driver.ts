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
import { EventEmitter } from 'node:events';
import { DriverError } from '../contract.js';
import { checkPhone } from './content.js';
import { invalidInput } from './outcome.js';
import * as groups from './groups.js';
import * as ops from './operations.js';
import type { SessionPaths, WebjsDriverOptions } from './options.js';
import * as sending from './sending.js';
import { WebjsSession } from './session.js';

export class WebjsDriver implements Driver {
  readonly kind = 'webjs' as const;
  /** The current session: replaced once per pairing-code request (pairing mode needs a new Client). */
  private session: WebjsSession;
  private readonly emitter = new EventEmitter();
  /** One relay per event name listened to: from the current session to this driver's listeners. */
  private readonly relays = new Map<DriverEventName, (...args: unknown[]) => void>();

  constructor(private readonly opts: WebjsDriverOptions) {
    this.emitter.setMaxListeners(0);
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

  /**
   * whatsapp-web.js 1.34 delivers a pairing code reliably only to a Client constructed with
   * `pairWithPhoneNumber` before `initialize()` (in QR mode it keeps refreshing the QR and the request hangs):
   * the session is restarted in pairing mode (same profile, a new browser), its events reach the same
   * listeners, and the first code it emits is the answer (also emitted as `code`, and renewed by the library).
   */
  async requestPairingCode(phoneNumber: string): Promise<string> {
    const number = checkPhone(phoneNumber);
    const previous = this.session;
    if (previous.linked) throw invalidInput('a pairing code can only be requested while the session waits to be linked');
    if (!previous.running) throw new DriverError('the session is not started', 'NOT_CONNECTED', true);
    const next = new WebjsSession({ ...this.opts, pairWithPhoneNumber: { phoneNumber: number, showNotification: true } });
    let first: string | null = null;
    const firstCode = (code: string) => {
      first ??= code;
    };
    next.on('code', firstCode);
    // the old session goes quietly: its end is not this driver's failure
    for (const [name, relay] of this.relays) {
      previous.off(name, relay);
      next.on(name, relay);
    }
    this.session = next;
    try {
      await previous.destroy();
      await next.initialize();
      // the library asks for the code while it starts; if it has not arrived yet, ask the pairing-mode Client
      return first ?? (await next.requestPairingCode(number));
    } finally {
      next.off('code', firstCode);
    }
  }

  browserHealth(): BrowserHealth {
    return this.session.browserHealth();
  }

  on<E extends DriverEventName>(event: E, listener: DriverListener<E>): this {
    if (!this.relays.has(event)) {
      const relay = (...args: unknown[]) => void this.emitter.emit(event, ...args);
      this.relays.set(event, relay);
      this.session.on(event, relay as DriverListener<E>);
    }
    this.emitter.on(event, listener);
    return this;
  }

  off<E extends DriverEventName>(event: E, listener: DriverListener<E>): this {
    this.emitter.off(event, listener);
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


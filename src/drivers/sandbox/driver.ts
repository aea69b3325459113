/**
 * The sandbox driver: the contract's Driver over a SandboxNetworkApi (in-process or remote). It keeps what
 * the runtime reads synchronously (info, browser health), refuses a send to the instance's own number before
 * it reaches the network, and guarantees that no call outlives the driver: destroy, logout, a fatal session
 * event or a lost network connection reject every pending call with SESSION_CLOSED (outcome unknown).
 *
 * Each driver object is one client of the network (a random `clientId`, sent with every call and on its event
 * subscription). The session belongs to the client that initialized it last: when another driver initializes
 * the same instance (another gateway took it over), this one receives `disconnected('CONFLICT')`, gets no more
 * events, and its calls are refused NOT_CONNECTED, provably not sent; its destroy then only detaches it.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { systemClock, type Clock } from '../../clock.js';
import { lidFor, parseChatId } from '../../sandbox/ids.js';
import {
  DriverError,
  type BrowserHealth,
  type ClientInfo,
  type CreateGroupResult,
  type Driver,
  type DriverEventName,
  type DriverListener,
  type FetchMessagesOptions,
  type MessageMedia,
  type SendContent,
  type SendOptions,
  type SendResult,
  type WAState,
  type WireChat,
  type WireContact,
  type WireGroup,
  type WireMessage,
} from '../contract.js';
import type { InitializeOptions, SandboxArgs, SandboxEvent, SandboxMethod, SandboxNetworkApi, SandboxResult } from './api.js';
import { PendingCalls } from './calls.js';

export interface SandboxDriverOptions {
  instanceId: string;
  api: SandboxNetworkApi;
  /** link this number on first start without a scan (the demo instance) */
  autoLink?: InitializeOptions['autoLink'];
  clock?: Clock;
}

const closed = (why: string) => new DriverError(why, 'SESSION_CLOSED', false);

export class SandboxDriver implements Driver {
  readonly kind = 'sandbox' as const;
  /** this driver's identity on the network (one per driver object, never reused) */
  readonly clientId = randomUUID();
  info: ClientInfo | null = null;
  private readonly emitter = new EventEmitter();
  private readonly calls: PendingCalls;
  private readonly api: SandboxNetworkApi;
  private readonly clock: Clock;
  private unsubscribe: (() => void) | null = null;
  private health: BrowserHealth = { alive: false, failStreak: 0, lastOkAt: 0 };

  constructor(private readonly opts: SandboxDriverOptions) {
    this.api = opts.api;
    this.clock = opts.clock ?? systemClock;
    this.emitter.setMaxListeners(0);
    this.calls = new PendingCalls(this.api, opts.instanceId, this.clientId, () => {
      this.health = { ...this.health, lastOkAt: this.clock.now() };
    });
  }

  // ---- lifecycle

  async initialize(): Promise<void> {
    if (this.unsubscribe) this.teardown(closed('the driver was re-initialized'));
    // subscribe first: the events of the start (qr, authenticated, ready) must not be missed
    this.unsubscribe = await this.api.subscribe(this.opts.instanceId, (e) => this.onEvent(e), {
      clientId: this.clientId,
      onLost: (reason) => this.onLost(reason),
    });
    try {
      await this.call('initialize', [this.opts.autoLink ? { autoLink: this.opts.autoLink } : {}]);
    } catch (err) {
      this.teardown(closed('initialize failed'));
      throw err;
    }
  }

  async destroy(): Promise<void> {
    if (!this.unsubscribe) return;
    this.calls.releaseAll(closed('the driver was destroyed'));
    try {
      await this.call('destroy', []);
    } catch {
      // the network may be gone already; the session is over either way
    }
    this.teardown(closed('the driver was destroyed'));
  }

  async logout(): Promise<void> {
    this.calls.releaseAll(closed('the driver logged out'));
    try {
      await this.call('logout', []);
    } finally {
      this.teardown(closed('the driver logged out'));
    }
  }

  async getState(): Promise<WAState | null> {
    if (!this.unsubscribe) return null;
    try {
      return await this.call('getState', []);
    } catch (err) {
      if (err instanceof DriverError) return null;
      throw err;
    }
  }

  requestPairingCode(phoneNumber: string): Promise<string> {
    return this.call('requestPairingCode', [phoneNumber]);
  }

  browserHealth(): BrowserHealth {
    return { ...this.health };
  }

  // ---- sending

  async sendMessage(chatId: string, content: SendContent, options: SendOptions): Promise<SendResult> {
    this.refuseOwnNumber(chatId);
    return this.call('sendMessage', [chatId, content, options]);
  }

  async forwardMessage(msgId: string, toChatId: string): Promise<void> {
    this.refuseOwnNumber(toChatId);
    await this.call('forwardMessage', [msgId, toChatId]);
  }

  // ---- interactions

  react(msgId: string, emoji: string): Promise<void> {
    return this.call('react', [msgId, emoji]);
  }
  editMessage(msgId: string, body: string, options: SendOptions): Promise<WireMessage | null> {
    return this.call('editMessage', [msgId, body, options]);
  }
  deleteMessage(msgId: string, everyone: boolean): Promise<void> {
    return this.call('deleteMessage', [msgId, everyone]);
  }
  sendSeen(chatId: string): Promise<boolean> {
    return this.call('sendSeen', [chatId]);
  }
  sendStateTyping(chatId: string): Promise<void> {
    return this.call('sendStateTyping', [chatId]);
  }
  sendStateRecording(chatId: string): Promise<void> {
    return this.call('sendStateRecording', [chatId]);
  }
  clearState(chatId: string): Promise<void> {
    return this.call('clearState', [chatId]);
  }

  // ---- reads

  getChats(): Promise<WireChat[]> {
    return this.call('getChats', []);
  }
  getChatById(chatId: string): Promise<WireChat | null> {
    return this.call('getChatById', [chatId]);
  }
  fetchMessages(chatId: string, options: FetchMessagesOptions): Promise<WireMessage[]> {
    return this.call('fetchMessages', [chatId, options]);
  }
  getMessageById(msgId: string): Promise<WireMessage | null> {
    return this.call('getMessageById', [msgId]);
  }
  getContactById(contactId: string): Promise<WireContact | null> {
    return this.call('getContactById', [contactId]);
  }
  getProfilePicUrl(contactId: string): Promise<string | null> {
    return this.call('getProfilePicUrl', [contactId]);
  }
  getNumberId(phone: string): Promise<string | null> {
    return this.call('getNumberId', [phone]);
  }
  downloadMedia(msgId: string): Promise<MessageMedia | null> {
    return this.call('downloadMedia', [msgId]);
  }

  // ---- groups

  createGroup(title: string, participants: string[], options: Record<string, unknown>): Promise<CreateGroupResult> {
    return this.call('createGroup', [title, participants, options]);
  }
  getGroup(groupId: string): Promise<WireGroup | null> {
    return this.call('getGroup', [groupId]);
  }
  addParticipants(groupId: string, ids: string[]): Promise<Record<string, { code: number; message: string }>> {
    return this.call('addParticipants', [groupId, ids]);
  }
  removeParticipants(groupId: string, ids: string[]): Promise<void> {
    return this.call('removeParticipants', [groupId, ids]);
  }
  promoteParticipants(groupId: string, ids: string[]): Promise<void> {
    return this.call('promoteParticipants', [groupId, ids]);
  }
  demoteParticipants(groupId: string, ids: string[]): Promise<void> {
    return this.call('demoteParticipants', [groupId, ids]);
  }
  getInviteCode(groupId: string): Promise<string> {
    return this.call('getInviteCode', [groupId]);
  }
  revokeInvite(groupId: string): Promise<string> {
    return this.call('revokeInvite', [groupId]);
  }
  leaveGroup(groupId: string): Promise<void> {
    return this.call('leaveGroup', [groupId]);
  }
  setSubject(groupId: string, subject: string): Promise<void> {
    return this.call('setSubject', [groupId, subject]);
  }
  setDescription(groupId: string, description: string): Promise<void> {
    return this.call('setDescription', [groupId, description]);
  }

  // ---- events

  on<E extends DriverEventName>(event: E, listener: DriverListener<E>): this {
    this.emitter.on(event, listener as (...args: unknown[]) => void);
    return this;
  }

  off<E extends DriverEventName>(event: E, listener: DriverListener<E>): this {
    this.emitter.off(event, listener as (...args: unknown[]) => void);
    return this;
  }

  // ---- internals

  /** The real network crashes the session on a message to the own number; never let one through. */
  private refuseOwnNumber(chatId: string): void {
    const own = this.info ? parseChatId(this.info.wid) : null;
    const target = parseChatId(chatId);
    if (own?.kind !== 'user' || !target) return;
    if ((target.kind === 'user' && target.phone === own.phone) || (target.kind === 'lid' && target.lid === lidFor(own.phone))) {
      throw new DriverError('refusing to send to the instance’s own number', 'INVALID_INPUT', true);
    }
  }

  private call<M extends SandboxMethod>(method: M, args: SandboxArgs<M>): Promise<SandboxResult<M>> {
    if (!this.unsubscribe) {
      return Promise.reject(new DriverError('the driver is not initialized', 'NOT_CONNECTED', true));
    }
    return this.calls.call(method, args);
  }

  private onEvent(e: SandboxEvent): void {
    switch (e.name) {
      case 'info':
        this.info = e.args[0];
        return;
      case 'browser_health':
        this.health = { ...e.args[0] };
        break;
      case 'fatal':
        this.calls.releaseAll(closed('the session died'));
        break;
      case 'disconnected':
        if (e.args[0] === 'LOGOUT') this.info = null;
        break;
      default:
        break;
    }
    this.emitter.emit(e.name, ...e.args);
  }

  /** The remote network went away under us: to the runtime that is a dead session. */
  private onLost(reason: string): void {
    this.teardown(closed('lost the connection to the sandbox network'));
    this.health = { ...this.health, alive: false, failStreak: this.health.failStreak + 1 };
    this.emitter.emit('browser_health', this.browserHealth());
    this.emitter.emit('fatal', reason);
  }

  private teardown(err: DriverError): void {
    this.calls.releaseAll(err);
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = null;
    this.info = null;
    this.health = { ...this.health, alive: false };
    unsubscribe?.();
  }
}

/**
 * A stand-in for the far side the webjs driver talks to: a whatsapp-web.js Client whose network we cannot
 * reach from here. It implements the library's Client surface (src/drivers/webjs/library.ts, which the compiler
 * proves is a subset of node_modules/whatsapp-web.js/index.d.ts) with the real method names, and it produces
 * its data the way the real Client does: the library's own structure classes (Message, Chat, GroupChat,
 * Contact, Reaction, PollVote, GroupNotification, Call) built from WhatsApp Web-like raw models, so the
 * driver's mapping meets the library's real field quirks (`t` → timestamp, caption as body for media,
 * Reaction.msgId as a message key, PollVote.voter as a wid object, …).
 *
 * Methods on returned objects that would reach into the page (Message.react, Chat.fetchMessages,
 * GroupChat.addParticipants, …) are replaced by recording stubs whose results the test sets.
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import type WAWebJS from 'whatsapp-web.js';
import { isChatData, isMessageData } from '../../src/drivers/webjs/mapping.js';
import {
  isLibraryContact,
  type LibBrowser,
  type LibChat,
  type LibClient,
  type LibClientInfo,
  type LibContact,
  type LibContent,
  type LibMedia,
  type LibMessage,
  type LibPage,
} from '../../src/drivers/webjs/library.js';

const require = createRequire(import.meta.url);
type Structure = new (client: unknown, data: object) => object;

function structure(module: unknown, name: string): Structure {
  const ctor: unknown = typeof module === 'object' && module !== null ? Reflect.get(module, name) : undefined;
  if (typeof ctor !== 'function') throw new Error(`whatsapp-web.js has no ${name}`);
  return function (client: unknown, data: object): object {
    return Reflect.construct(ctor, [client, data]);
  } as unknown as Structure;
}

const lib: unknown = require('whatsapp-web.js');
const structures: unknown = require('whatsapp-web.js/src/structures');
export const Message = structure(lib, 'Message');
export const PrivateChat = structure(lib, 'PrivateChat');
export const GroupChat = structure(lib, 'GroupChat');
export const PrivateContact = structure(lib, 'PrivateContact');
export const Reaction = structure(structures, 'Reaction');
export const PollVote = structure(structures, 'PollVote');
export const GroupNotification = structure(structures, 'GroupNotification');
export const Call = structure(structures, 'Call');

// ---- raw models, shaped like WhatsApp Web's serialized models (what window.WWebJS.get…Model returns)

export const wid = (serializedId: string) => {
  const [user = '', server = ''] = serializedId.split('@');
  return { server, user, _serialized: serializedId };
};

export const msgKey = (fromMe: boolean, remote: string, id: string) => ({ fromMe, remote, id, _serialized: `${fromMe}_${remote}_${id}` });

export function rawMessage(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: msgKey(false, '491511234567@c.us', '3EB0AAAA0001'),
    body: 'hello',
    type: 'chat',
    t: 1767607200,
    from: '491511234567@c.us',
    to: '491609876543@c.us',
    ack: 1,
    isForwarded: false,
    ...over,
  };
}

export function rawChat(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: wid('491511234567@c.us'),
    formattedTitle: 'Alice',
    isGroup: false,
    isReadOnly: false,
    unreadCount: 2,
    t: 1767607000,
    archive: false,
    pin: 0,
    isMuted: false,
    muteExpiration: 0,
    ...over,
  };
}

export function rawContact(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: wid('491511234567@c.us'),
    userid: '491511234567',
    name: 'Alice A.',
    pushname: 'Alice',
    shortName: 'Alice',
    isBusiness: false,
    isEnterprise: false,
    isMe: false,
    isUser: true,
    isGroup: false,
    isWAContact: true,
    isMyContact: true,
    isBlocked: false,
    ...over,
  };
}

// ---- puppeteer stand-ins

export class StandInBrowser extends EventEmitter implements LibBrowser {
  process(): { pid?: number } | null {
    return null;
  }
}

export class StandInPage extends EventEmitter implements LibPage {
  /** When set, evaluations never answer (a hung renderer). */
  hung = false;
  evaluations = 0;

  constructor() {
    super();
    // puppeteer's own emitter gives `error` no special meaning; node's would throw with no listener.
    this.on('error', () => undefined);
  }

  evaluate(_pageFunction: string): Promise<unknown> {
    this.evaluations += 1;
    return this.hung ? new Promise<never>(() => undefined) : Promise.resolve(1);
  }
}

// ---- the client

export interface Call {
  method: string;
  args: unknown[];
}

type Behaviour<T> = (...args: never[]) => Promise<T>;

export const never = <T>(): Promise<T> => new Promise<T>(() => undefined);

export class StandInClient extends EventEmitter implements LibClient {
  readonly calls: Call[] = [];
  info?: LibClientInfo;
  pupBrowser: StandInBrowser | null = null;
  pupPage: StandInPage | null = null;

  /** Per-method behaviour the test may replace. */
  initializeWith: () => Promise<void> = async () => undefined;
  sendWith: (chatId: string, content: LibContent, options: WAWebJS.MessageSendOptions) => Promise<LibMessage | undefined> = async (
    chatId,
  ) => this.message(rawMessage({ id: msgKey(true, chatId, '3EB0SENT0001'), from: '491609876543@c.us', to: chatId, ack: 1 }));
  numberIdWith: (number: string) => Promise<WAWebJS.ContactId | null> = async (number) =>
    this.registered.has(number) ? wid(`${number}@c.us`) : null;
  createGroupWith: Behaviour<WAWebJS.CreateGroupResult | string> = async () => ({
    title: 'Team',
    gid: wid('120363000000000001@g.us'),
    participants: {
      '491511234567@c.us': { statusCode: 200, message: 'ok', isGroupCreator: false, isInviteV4Sent: false },
      '491700000000@c.us': { statusCode: 403, message: 'invite only', isGroupCreator: false, isInviteV4Sent: true },
    },
  });

  readonly registered = new Set<string>(['491511234567']);
  readonly messages = new Map<string, LibMessage>();
  readonly chats = new Map<string, LibChat>();
  readonly contacts = new Map<string, LibContact>();
  profilePic: string | undefined = undefined;
  state: string | null = 'CONNECTED';

  constructor(readonly options: WAWebJS.ClientOptions) {
    super();
  }

  private record(method: string, args: unknown[]): void {
    this.calls.push({ method, args });
  }

  callsOf(method: string): unknown[][] {
    return this.calls.filter((c) => c.method === method).map((c) => c.args);
  }

  // -- builders of library structures, with recording stubs for page-bound methods

  message(raw: Record<string, unknown>): LibMessage {
    const data: unknown = new Message(this, raw);
    if (!isMessageData(data)) throw new Error('not a message');
    const id = data.id._serialized;
    const stubs = {
      forward: async (chat: string) => this.record('message.forward', [id, chat]),
      react: async (reaction: string) => this.record('message.react', [id, reaction]),
      edit: async (content: string, options?: WAWebJS.MessageEditOptions): Promise<LibMessage | null> => {
        this.record('message.edit', [id, content, options]);
        return data.fromMe ? this.message({ ...raw, body: content }) : null;
      },
      delete: async (everyone?: boolean) => this.record('message.delete', [id, everyone]),
      downloadMedia: async (): Promise<LibMedia | undefined> => {
        this.record('message.downloadMedia', [id]);
        return data.hasMedia ? { mimetype: 'image/png', data: 'iVBORw0KGgo=', filename: 'a.png', filesize: 8 } : undefined;
      },
    };
    return Object.assign(data, stubs);
  }

  chat(raw: Record<string, unknown>, messages: LibMessage[] = []): LibChat {
    const isGroup = raw.isGroup === true;
    const data: unknown = isGroup ? new GroupChat(this, raw) : new PrivateChat(this, raw);
    if (!isChatData(data)) throw new Error('not a chat');
    const id = data.id._serialized;
    const rec = (method: string) => async (...args: unknown[]) => {
      this.record(`chat.${method}`, [id, ...args]);
      return true;
    };
    const chatStubs = {
      fetchMessages: async (search: WAWebJS.MessageSearchOptions) => {
        this.record('chat.fetchMessages', [id, search]);
        return messages;
      },
      sendStateTyping: rec('sendStateTyping'),
      sendStateRecording: rec('sendStateRecording'),
      clearState: rec('clearState'),
    };
    if (!isGroup) return Object.assign(data, chatStubs);
    const groupStubs = {
      addParticipants: async (ids: string[]) => {
        this.record('group.addParticipants', [id, ids]);
        return this.addParticipantsResult;
      },
      removeParticipants: rec('removeParticipants'),
      promoteParticipants: rec('promoteParticipants'),
      demoteParticipants: rec('demoteParticipants'),
      getInviteCode: async () => {
        this.record('group.getInviteCode', [id]);
        return 'InViTeCoDe1';
      },
      revokeInvite: async () => {
        this.record('group.revokeInvite', [id]);
        return 'NeWcOdE2';
      },
      leave: async () => this.record('group.leave', [id]),
      setSubject: async (subject: string) => {
        this.record('group.setSubject', [id, subject]);
        return this.groupInfoAccepted;
      },
      setDescription: async (description: string) => {
        this.record('group.setDescription', [id, description]);
        return this.groupInfoAccepted;
      },
    };
    return Object.assign(data, chatStubs, groupStubs);
  }

  contact(raw: Record<string, unknown>): LibContact {
    const data: unknown = new PrivateContact(this, raw);
    if (!isLibraryContact(data)) throw new Error('not a contact');
    return data;
  }

  addParticipantsResult: unknown = {
    '491511234567@c.us': { code: 200, message: 'The participant was added successfully', isInviteV4Sent: false },
    '491700000000@c.us': { code: 403, message: 'The participant can be added by sending private invitation only', isInviteV4Sent: true },
  };
  groupInfoAccepted = true;

  // -- the Client surface

  async initialize(): Promise<void> {
    this.record('initialize', []);
    this.pupBrowser = new StandInBrowser();
    this.pupPage = new StandInPage();
    return this.initializeWith();
  }

  async destroy(): Promise<void> {
    this.record('destroy', []);
  }

  async logout(): Promise<void> {
    this.record('logout', []);
  }

  async getState(): Promise<string | null> {
    this.record('getState', []);
    return this.state;
  }

  async requestPairingCode(phoneNumber: string, showNotification?: boolean, intervalMs?: number): Promise<string> {
    this.record('requestPairingCode', [phoneNumber, showNotification, intervalMs]);
    const code = 'K7Q2ZP4M';
    this.emit('code', code);
    return code;
  }

  sendMessage(chatId: string, content: LibContent, options: WAWebJS.MessageSendOptions = {}): Promise<LibMessage | undefined> {
    this.record('sendMessage', [chatId, content, options]);
    return this.sendWith(chatId, content, options);
  }

  async sendSeen(chatId: string): Promise<boolean> {
    this.record('sendSeen', [chatId]);
    return true;
  }

  async getChats(): Promise<LibChat[]> {
    this.record('getChats', []);
    return [...this.chats.values()];
  }

  async getChatById(chatId: string): Promise<LibChat | undefined> {
    this.record('getChatById', [chatId]);
    return this.chats.get(chatId);
  }

  async getMessageById(messageId: string): Promise<LibMessage | null> {
    this.record('getMessageById', [messageId]);
    return this.messages.get(messageId) ?? null;
  }

  async getContactById(contactId: string): Promise<LibContact> {
    this.record('getContactById', [contactId]);
    return this.contacts.get(contactId) ?? this.contact(rawContact({ id: wid(contactId), userid: contactId.split('@')[0], name: undefined }));
  }

  async getProfilePicUrl(contactId: string): Promise<string | undefined> {
    this.record('getProfilePicUrl', [contactId]);
    return this.profilePic;
  }

  getNumberId(number: string): Promise<WAWebJS.ContactId | null> {
    this.record('getNumberId', [number]);
    return this.numberIdWith(number);
  }

  createGroup(title: string, participants?: string[], options?: WAWebJS.CreateGroupOptions): Promise<WAWebJS.CreateGroupResult | string> {
    this.record('createGroup', [title, participants, options]);
    return this.createGroupWith();
  }
}

/**
 * The part of whatsapp-web.js this driver depends on, as TypeScript types.
 *
 * Every type here is a subset of the library's own (node_modules/whatsapp-web.js/index.d.ts): the same
 * member names and argument shapes, narrowed to what the driver reads or calls. The `Assert…` aliases at the
 * bottom make the compiler prove that the real `Client`, `Message`, `Chat`, `GroupChat` and `Contact` fit
 * these types, so a stand-in written against them (the unit tests' fake network) mirrors the real library and
 * the build breaks if an upgrade of the library renames what we use.
 *
 * Where the declarations and the runtime disagree (PollVote.voter is a wid object at runtime, Message.
 * pollOptions holds `{name, localId}` objects, loading_screen's percent is a number), mapping.ts reads the
 * runtime shape defensively; event payloads are `unknown` here and narrowed there.
 */
import { createRequire } from 'node:module';
import type WAWebJS from 'whatsapp-web.js';

/** Message fields the driver copies into a WireMessage. */
type MessageDataKeys =
  | 'id'
  | 'from'
  | 'to'
  | 'author'
  | 'body'
  | 'type'
  | 'timestamp'
  | 'fromMe'
  | 'hasMedia'
  | 'hasQuotedMsg'
  | 'ack'
  | 'isForwarded'
  | 'deviceType'
  | 'location'
  | 'vCards'
  | 'pollName'
  | 'rawData';

export interface LibMessageData extends Pick<WAWebJS.Message, MessageDataKeys> {
  /** Declared `string[]`; at runtime `{name, localId}[]` for poll_creation, undefined otherwise. */
  pollOptions?: unknown;
}

export interface LibMedia {
  mimetype: string;
  data: string;
  filename?: string | null;
  filesize?: number | null;
}

export interface LibMessage extends LibMessageData {
  forward(chat: string): Promise<void>;
  react(reaction: string): Promise<void>;
  edit(content: string, options?: WAWebJS.MessageEditOptions): Promise<LibMessage | null>;
  delete(everyone?: boolean): Promise<void>;
  downloadMedia(): Promise<LibMedia | undefined>;
}

type ChatDataKeys =
  | 'id'
  | 'name'
  | 'isGroup'
  | 'isReadOnly'
  | 'unreadCount'
  | 'timestamp'
  | 'archived'
  | 'pinned'
  | 'isMuted'
  | 'muteExpiration';

export type LibChatData = Pick<WAWebJS.Chat, ChatDataKeys>;

export interface LibChat extends LibChatData {
  fetchMessages(searchOptions: WAWebJS.MessageSearchOptions): Promise<LibMessage[]>;
  sendStateTyping(): Promise<unknown>;
  sendStateRecording(): Promise<unknown>;
  clearState(): Promise<unknown>;
}

export interface LibGroupChat extends LibChat {
  owner: WAWebJS.ContactId | undefined;
  description: string | undefined;
  participants: WAWebJS.GroupParticipant[];
  /** Declared as a nested record or an error string; at runtime `{[id]: {code, message, isInviteV4Sent}}`. */
  addParticipants(participantIds: string[]): Promise<unknown>;
  removeParticipants(participantIds: string[]): Promise<unknown>;
  promoteParticipants(participantIds: string[]): Promise<unknown>;
  demoteParticipants(participantIds: string[]): Promise<unknown>;
  getInviteCode(): Promise<string>;
  /** Declared `Promise<void>`; at runtime resolves to the new code. */
  revokeInvite(): Promise<unknown>;
  leave(): Promise<void>;
  setSubject(subject: string): Promise<boolean>;
  setDescription(description: string): Promise<boolean>;
}

type ContactDataKeys =
  | 'id'
  | 'number'
  | 'name'
  | 'pushname'
  | 'shortName'
  | 'isBusiness'
  | 'isEnterprise'
  | 'isMyContact'
  | 'isBlocked'
  | 'isGroup'
  | 'isUser'
  | 'isWAContact';

export type LibContact = Pick<WAWebJS.Contact, ContactDataKeys>;

/**
 * What sendMessage accepts: the library's content classes. The library branches on `instanceof`, so a
 * contact card must be the library's own Contact instance (as getContactById returns it): see isLibraryContact.
 */
export type LibContent = string | WAWebJS.MessageMedia | WAWebJS.Location | WAWebJS.Poll | WAWebJS.Contact | WAWebJS.Contact[];

/** The puppeteer Browser surface the driver watches. */
export interface LibBrowser {
  on(event: 'disconnected', handler: () => void): unknown;
  off(event: 'disconnected', handler: () => void): unknown;
  process(): { pid?: number | undefined } | null;
}

/** The puppeteer Page surface the driver watches and probes. */
export interface LibPage {
  /** `close` passes nothing, `error` (the page crashed) passes an Error. */
  on(event: 'close' | 'error', handler: (arg: unknown) => void): unknown;
  off(event: 'close' | 'error', handler: (arg: unknown) => void): unknown;
  evaluate(pageFunction: string): Promise<unknown>;
}

export interface LibClientInfo {
  wid: WAWebJS.ContactId;
  pushname: string;
  platform: string;
}

/** The whatsapp-web.js Client surface the driver uses. */
export interface LibClient {
  info?: LibClientInfo | undefined;
  pupBrowser?: LibBrowser | null | undefined;
  pupPage?: LibPage | null | undefined;

  initialize(): Promise<void>;
  destroy(): Promise<void>;
  logout(): Promise<void>;
  getState(): Promise<string | null>;
  requestPairingCode(phoneNumber: string, showNotification?: boolean, intervalMs?: number): Promise<string>;

  sendMessage(chatId: string, content: LibContent, options?: WAWebJS.MessageSendOptions): Promise<LibMessage | undefined>;
  sendSeen(chatId: string): Promise<boolean>;

  getChats(): Promise<LibChat[]>;
  getChatById(chatId: string): Promise<LibChat | undefined>;
  getMessageById(messageId: string): Promise<LibMessage | null>;
  getContactById(contactId: string): Promise<LibContact>;
  getProfilePicUrl(contactId: string): Promise<string | undefined>;
  getNumberId(number: string): Promise<WAWebJS.ContactId | null>;
  createGroup(title: string, participants?: string[], options?: WAWebJS.CreateGroupOptions): Promise<WAWebJS.CreateGroupResult | string>;

  on(event: string, listener: (...args: unknown[]) => void): unknown;
  removeAllListeners(): unknown;
}

export type LibClientFactory = (options: WAWebJS.ClientOptions) => LibClient;
export type LibClientOptions = WAWebJS.ClientOptions;

const requireHere = createRequire(import.meta.url);
let loaded: typeof WAWebJS | undefined;

/**
 * The real library, required on its first use. Required with this module, it (puppeteer and the rest of its tree)
 * was a quarter of importing the gateway (about 0.6 s of CPU under tsx: bench/module-load.ts) in every start, test
 * process and `mgw start`, on a node without a single webjs instance too. Through require because whatsapp-web.js
 * is CommonJS with `export =`.
 */
export function webjsLibrary(): typeof WAWebJS {
  return (loaded ??= requireHere('whatsapp-web.js') as typeof WAWebJS);
}

/** True for the library's Contact instances, the only contact content its sendMessage recognises. */
export function isLibraryContact(value: unknown): value is WAWebJS.Contact {
  const contactClass: unknown = Reflect.get(webjsLibrary(), 'Contact');
  return typeof contactClass === 'function' && value instanceof contactClass;
}

/** The production factory: a real whatsapp-web.js Client. */
export const realClientFactory: LibClientFactory = (options) => new (webjsLibrary().Client)(options);

// Compile-time proof that the real library fits the surface above (see the file comment).
type Assert<T extends U, U> = T;
export type AssertClient = Assert<WAWebJS.Client, LibClient>;
export type AssertMessage = Assert<WAWebJS.Message, LibMessage>;
export type AssertGroupChat = Assert<WAWebJS.GroupChat, LibGroupChat>;
export type AssertChat = Assert<WAWebJS.Chat, LibChat>;
export type AssertContact = Assert<WAWebJS.Contact, LibContact>;

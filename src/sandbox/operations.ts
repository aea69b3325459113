/**
 * Every driver-facing operation of a sandbox session, as one table keyed by RPC method name. The in-process
 * API and the sandbox server both dispatch through it, so the two transports cannot drift apart. Each call names
 * its client (session.ts): the lifecycle operations decide for themselves what a stale client may do, every
 * other operation from a client that no longer owns the session is refused before it touches the network.
 */
import { DriverError, type MessageMedia, type WireGroup } from '../drivers/contract.js';
import type { SandboxArgs, SandboxMethod, SandboxResult } from '../drivers/sandbox/api.js';
import { normalizePhone, parseChatId, userId } from './ids.js';
import { forwardMessage, sendMessage } from './sending.js';
import type { SandboxSession as Session } from './session.js';
import type { SandboxNetwork } from './network.js';
import type { GroupRecord } from './types.js';
import { wireGroup, wireGroupContact, wireMessage, wireUserContact } from './wire.js';

/** a session with the whole network behind it (the driver operations reach every book) */
type SandboxSession = Session<SandboxNetwork>;

type Handler<M extends SandboxMethod> = (s: SandboxSession, ...args: SandboxArgs<M>) => Promise<SandboxResult<M>>;
type Handlers = { [M in SandboxMethod]: Handler<M> };

function chatIdOrThrow(chatId: string): string {
  if (!parseChatId(chatId)) throw new DriverError('the chat id is malformed', 'INVALID_INPUT', true);
  return chatId;
}

function groupOf(s: SandboxSession, groupId: string): GroupRecord {
  if (parseChatId(groupId)?.kind !== 'group') throw new DriverError('not a group id', 'NOT_A_GROUP', true);
  return s.net.groups.require(groupId);
}

function ledgerAction(s: SandboxSession, me: string, entry: { action: 'react' | 'edit' | 'delete'; chatId: string; target: string; body: string | null; everyone?: boolean }): void {
  s.net.record(s.instanceId, {
    from: me,
    action: entry.action,
    messageId: null,
    chatId: entry.chatId,
    type: null,
    body: entry.body,
    media: null,
    location: null,
    vCards: [],
    poll: null,
    targetMessageId: entry.target,
    options: {},
    fault: null,
    ...(entry.everyone === undefined ? {} : { everyone: entry.everyone }),
  });
}

type Lifecycle = 'initialize' | 'destroy' | 'logout';
type LifecycleHandlers = {
  [M in Lifecycle]: (s: SandboxSession, client: string | undefined, ...args: SandboxArgs<M>) => Promise<SandboxResult<M>>;
};

/** The operations that start, stop or unlink the session: they see the calling client. */
const lifecycle: LifecycleHandlers = {
  initialize: (s, client, opts) => s.initialize(opts, client),
  destroy: (s, client) => s.destroy(client),
  logout: (s, client) => s.logout(client),
};

function isLifecycle(method: SandboxMethod): method is Lifecycle {
  return Object.hasOwn(lifecycle, method);
}

export const handlers: Omit<Handlers, Lifecycle> = {
  getState: (s) => s.getState(),
  getInfo: (s) => s.getInfo(),
  requestPairingCode: (s, phone) => s.requestPairingCode(phone),

  sendMessage,
  forwardMessage,

  react: (s, msgId, emoji) =>
    s.guarded('react', (me) => {
      const m = s.net.messages.require(me, msgId);
      s.net.messages.react(me, m, emoji);
      ledgerAction(s, me, { action: 'react', chatId: wireMessage(m, me).id.remote, target: msgId, body: emoji });
    }),
  editMessage: (s, msgId, body) =>
    s.guarded('editMessage', (me) => {
      const m = s.net.messages.require(me, msgId);
      if (!body) throw new DriverError('the new text is empty', 'INVALID_INPUT', true);
      if (!s.net.messages.edit(me, m, body)) return null;
      ledgerAction(s, me, { action: 'edit', chatId: wireMessage(m, me).id.remote, target: msgId, body });
      return wireMessage(m, me);
    }),
  deleteMessage: (s, msgId, everyone) =>
    s.guarded('deleteMessage', (me) => {
      const m = s.net.messages.require(me, msgId);
      const chatId = wireMessage(m, me).id.remote;
      if (everyone) s.net.messages.revokeForEveryone(me, m);
      else s.net.messages.deleteForMe(me, m);
      ledgerAction(s, me, { action: 'delete', chatId, target: msgId, body: null, everyone });
    }),
  // as whatsapp-web.js's sendSeen: false for a chat the account does not have (found from the outside: a group
  // the instance is not in, and a number it never wrote with, answered seen:true)
  sendSeen: (s, chatId) =>
    s.guarded('sendSeen', (me) => {
      const id = chatIdOrThrow(chatId);
      if (!s.net.messages.chat(me, id)) return false;
      s.net.messages.markSeen(me, id);
      return true;
    }),
  sendStateTyping: (s, chatId) => s.guarded('sendStateTyping', () => void s.presence.set(chatIdOrThrow(chatId), 'typing')),
  sendStateRecording: (s, chatId) =>
    s.guarded('sendStateRecording', () => void s.presence.set(chatIdOrThrow(chatId), 'recording')),
  clearState: (s, chatId) => s.guarded('clearState', () => void s.presence.delete(chatIdOrThrow(chatId))),

  getChats: (s) => s.guarded('getChats', (me) => s.net.messages.chats(me)),
  getChatById: (s, chatId) => s.guarded('getChatById', (me) => s.net.messages.chat(me, chatIdOrThrow(chatId))),
  fetchMessages: (s, chatId, o) =>
    s.guarded('fetchMessages', (me) => s.net.messages.fetch(me, chatIdOrThrow(chatId), o.limit, o.fromMe)),
  getMessageById: (s, msgId) =>
    s.guarded('getMessageById', (me) => {
      const m = s.net.messages.find(me, msgId);
      return m ? wireMessage(m, me) : null;
    }),
  getContactById: (s, contactId) =>
    s.guarded('getContactById', (me) => {
      const parsed = parseChatId(contactId);
      if (parsed?.kind === 'group') {
        const g = s.net.groups.get(parsed.gid);
        return g ? wireGroupContact(g) : null;
      }
      const phone = s.net.resolveUser(contactId);
      if (!phone) return null;
      const a = s.net.account(phone);
      const isMyContact = s.net.messages.inChat(me, userId(phone)).length > 0;
      return wireUserContact(phone, s.net.pushname(phone), a.registered, a.isBusiness === true, isMyContact);
    }),
  getProfilePicUrl: (s, contactId) =>
    s.guarded('getProfilePicUrl', () => {
      const phone = s.net.resolveUser(contactId);
      return phone && s.net.isRegistered(phone) ? `https://pps.sandbox.invalid/v/${phone}.jpg` : null;
    }),
  getNumberId: (s, phone) =>
    s.guarded('getNumberId', () => {
      const p = normalizePhone(phone);
      return p && s.net.isRegistered(p) ? userId(p) : null;
    }),
  downloadMedia: (s, msgId) =>
    s.guarded('downloadMedia', (me): MessageMedia | null => {
      const m = s.net.messages.require(me, msgId);
      if (!m.media || m.revoked) return null;
      const bytes = s.net.store.getMedia(m.media.sha256);
      if (!bytes) return null;
      return { mimetype: m.media.mimetype, data: bytes.toString('base64'), filename: m.media.filename, filesize: m.media.size };
    }),

  createGroup: (s, title, participants) =>
    s.guarded('createGroup', (me) => {
      const result = s.net.groups.create(me, title, participants);
      s.net.record(s.instanceId, {
        from: me,
        action: 'group_create',
        messageId: null,
        chatId: result.gid,
        type: null,
        body: title,
        media: null,
        location: null,
        vCards: [],
        poll: null,
        targetMessageId: null,
        options: {},
        fault: null,
      });
      return result;
    }),
  getGroup: (s, groupId) =>
    s.guarded('getGroup', (me): WireGroup | null => {
      const g = groupOf(s, groupId);
      if (!s.net.groups.isMember(g, me) && !g.former.includes(me)) return null;
      const last = Math.max(g.createdAtMs, ...s.net.messages.inChat(me, g.gid).map((m) => m.timestampMs));
      return wireGroup(g, me, last, s.net.state.chatStates[`${me}|${g.gid}`]);
    }),
  addParticipants: (s, groupId, ids) => s.guarded('addParticipants', (me) => s.net.groups.add(me, groupOf(s, groupId), ids)),
  removeParticipants: (s, groupId, ids) =>
    s.guarded('removeParticipants', (me) => s.net.groups.remove(me, groupOf(s, groupId), ids)),
  promoteParticipants: (s, groupId, ids) =>
    s.guarded('promoteParticipants', (me) => s.net.groups.setAdmin(me, groupOf(s, groupId), ids, true)),
  demoteParticipants: (s, groupId, ids) =>
    s.guarded('demoteParticipants', (me) => s.net.groups.setAdmin(me, groupOf(s, groupId), ids, false)),
  getInviteCode: (s, groupId) => s.guarded('getInviteCode', (me) => s.net.groups.inviteCode(me, groupOf(s, groupId))),
  revokeInvite: (s, groupId) => s.guarded('revokeInvite', (me) => s.net.groups.revokeInvite(me, groupOf(s, groupId))),
  leaveGroup: (s, groupId) => s.guarded('leaveGroup', (me) => s.net.groups.leave(me, groupOf(s, groupId))),
  setSubject: (s, groupId, subject) => s.guarded('setSubject', (me) => s.net.groups.setSubject(me, groupOf(s, groupId), subject)),
  setDescription: (s, groupId, d) =>
    s.guarded('setDescription', (me) => s.net.groups.setDescription(me, groupOf(s, groupId), d)),
};

export function isSandboxMethod(name: string): name is SandboxMethod {
  return Object.hasOwn(handlers, name) || Object.hasOwn(lifecycle, name);
}

/**
 * Run `method` on the session for `client` (undefined: the network's own call, never refused as stale).
 * A client that was replaced by another one is refused NOT_CONNECTED, provably not sent, except for the
 * lifecycle operations (initialize takes the session back, destroy only detaches it, logout is refused).
 */
export async function dispatch<M extends SandboxMethod>(
  s: SandboxSession,
  method: M,
  args: SandboxArgs<M>,
  client?: string,
): Promise<SandboxResult<M>> {
  if (isLifecycle(method)) {
    const run = lifecycle[method] as (s: SandboxSession, client: string | undefined, ...args: SandboxArgs<M>) => Promise<SandboxResult<M>>;
    return run(s, client, ...args);
  }
  s.clients.requireOwner(client);
  const handler = (handlers as Handlers)[method] as Handler<M>;
  return handler(s, ...args);
}

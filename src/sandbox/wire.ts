/**
 * How one account sees the network: a NetMessage, a chat, a contact or a group turned into the contract's
 * plain-data shapes from the viewer's side (fromMe, remote, serialized id, author), as whatsapp-web.js has them.
 * This is the network's side of the Driver contract (what a driver receives), not the API's wire shapes: those
 * are made from the contract's shapes in src/wire/.
 */
import type { ChatStateRecord, GroupRecord, NetMessage } from './types.js';
import type { WireChat, WireContact, WireGroup, WireMessage } from '../drivers/contract.js';
import { serializeId, userId } from './ids.js';

/** The chat id under which `viewer` sees message `m`. */
export function chatIdFor(m: NetMessage, viewer: string): string {
  if (m.chat.kind === 'group') return m.chat.gid;
  return userId(m.sender === viewer ? m.chat.to : m.sender);
}

/** whatsapp-web.js derives deviceType from the key: long keys come from Android, 3A… from iOS, else web. */
export const deviceTypeOf = (key: string) => (key.length > 25 ? 'android' : key.startsWith('3A') ? 'ios' : 'web');

export function wireMessage(m: NetMessage, viewer: string): WireMessage {
  const fromMe = m.sender === viewer;
  const group = m.chat.kind === 'group';
  const remote = chatIdFor(m, viewer);
  const participant = group && !fromMe ? userId(m.sender) : null;
  const msg: WireMessage = {
    id: { fromMe, remote, id: m.key, _serialized: serializeId(fromMe, remote, m.key, participant) },
    from: fromMe ? userId(viewer) : remote,
    to: fromMe ? remote : userId(viewer),
    author: group ? userId(m.sender) : null,
    body: m.revoked ? '' : m.body,
    type: m.revoked ? 'revoked' : m.type,
    timestamp: Math.floor(m.timestampMs / 1000),
    fromMe,
    hasMedia: m.media !== null && !m.revoked,
    hasQuotedMsg: m.quotedKey !== null,
    ack: m.ack,
    isForwarded: m.isForwarded,
    deviceType: deviceTypeOf(m.key),
    location: m.revoked ? null : m.location,
    vCards: m.revoked ? [] : [...m.vCards],
    mediaInfo: m.media && !m.revoked ? { mimetype: m.media.mimetype, filename: m.media.filename, size: m.media.size } : null,
  };
  if (m.poll && !m.revoked) {
    msg.pollName = m.poll.name;
    msg.pollOptions = m.poll.options.map((o) => ({ ...o }));
  }
  return msg;
}

const defaultChatState: ChatStateRecord = { unreadCount: 0, archived: false, pinned: false, muteExpiration: null };

export function wireChat(
  id: string,
  name: string,
  isGroup: boolean,
  isReadOnly: boolean,
  timestampMs: number,
  state: ChatStateRecord | undefined,
): WireChat {
  const s = state ?? defaultChatState;
  return {
    id,
    name,
    isGroup,
    isReadOnly,
    unreadCount: s.unreadCount,
    timestamp: Math.floor(timestampMs / 1000),
    archived: s.archived,
    pinned: s.pinned,
    isMuted: s.muteExpiration !== null,
    muteExpiration: s.muteExpiration,
  };
}

export function wireGroup(g: GroupRecord, viewer: string, timestampMs: number, state: ChatStateRecord | undefined): WireGroup {
  const member = g.participants.some((p) => p.phone === viewer);
  return {
    ...wireChat(g.gid, g.subject, true, !member, timestampMs, state),
    owner: userId(g.owner),
    description: g.description,
    participants: g.participants.map((p) => ({ id: userId(p.phone), isAdmin: p.admin, isSuperAdmin: p.superAdmin })),
  };
}

export function wireUserContact(
  phone: string,
  pushname: string | null,
  registered: boolean,
  isBusiness: boolean,
  isMyContact: boolean,
): WireContact {
  return {
    id: userId(phone),
    number: phone,
    name: isMyContact ? pushname : null,
    pushname,
    shortName: pushname ? (pushname.split(/\s+/)[0] ?? null) : null,
    isBusiness,
    isEnterprise: false,
    isMyContact,
    isBlocked: false,
    isGroup: false,
    isUser: true,
    isWAContact: registered,
  };
}

export function wireGroupContact(g: GroupRecord): WireContact {
  return {
    id: g.gid,
    number: g.gid.replace(/@g\.us$/, ''),
    name: g.subject,
    pushname: null,
    shortName: null,
    isBusiness: false,
    isEnterprise: false,
    isMyContact: false,
    isBlocked: false,
    isGroup: true,
    isUser: false,
    isWAContact: true,
  };
}

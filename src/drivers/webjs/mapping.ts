/**
 * whatsapp-web.js structures → the contract's plain data (contract.ts "Wire…" types).
 *
 * Kept as the library has them: ids (serialized, `@lid` untouched), message timestamps in unix seconds
 * (the HTTP layer converts to ms), ack values -1..4. Nothing here calls the network.
 */
import type {
  BatteryInfo,
  ClientInfo,
  GroupParticipant,
  Location,
  MessageAck,
  MessageMedia,
  MessageType,
  WAState,
  WireCall,
  WireChat,
  WireContact,
  WireGroup,
  WireGroupNotification,
  WireMessage,
  WirePollVote,
  WireReaction,
} from '../contract.js';
import { bool, field, isRecord, num, numOrNull, serialized, serializedOrNull, str, strOrNull, strings } from './fields.js';
import type { LibChatData, LibClientInfo, LibContact, LibGroupChat, LibMedia, LibMessageData } from './library.js';

const MESSAGE_TYPES: ReadonlySet<string> = new Set<MessageType>([
  'chat',
  'image',
  'video',
  'audio',
  'ptt',
  'document',
  'sticker',
  'location',
  'vcard',
  'multi_vcard',
  'poll_creation',
  'revoked',
  'e2e_notification',
  'gp2',
  'call_log',
  'ciphertext',
  'unknown',
]);

function isMessageType(value: string): value is MessageType {
  return MESSAGE_TYPES.has(value);
}

const WA_STATES: ReadonlySet<string> = new Set<WAState>([
  'CONFLICT',
  'CONNECTED',
  'DEPRECATED_VERSION',
  'OPENING',
  'PAIRING',
  'PROXYBLOCK',
  'SMB_TOS_BLOCK',
  'TIMEOUT',
  'TOS_BLOCK',
  'UNLAUNCHED',
  'UNPAIRED',
  'UNPAIRED_IDLE',
]);

function isWAState(value: string): value is WAState {
  return WA_STATES.has(value);
}

export function toWAState(value: unknown): WAState | null {
  return typeof value === 'string' && isWAState(value) ? value : null;
}

export function toAck(value: unknown): MessageAck | null {
  const n = num(value, Number.NaN);
  return n === -1 || n === 0 || n === 1 || n === 2 || n === 3 || n === 4 ? n : null;
}

/** True when `value` looks like a library Message (it has a serialized message id). */
export function isMessageData(value: unknown): value is LibMessageData {
  return typeof serializedOrNull(field(value, 'id')) === 'string';
}

/** True when `value` looks like a library Chat. */
export function isChatData(value: unknown): value is LibChatData {
  return typeof serializedOrNull(field(value, 'id')) === 'string';
}

function mapLocation(value: unknown): Location | null {
  if (!isRecord(value)) return null;
  const out: Location = { latitude: num(value.latitude), longitude: num(value.longitude) };
  for (const key of ['name', 'address', 'url', 'description'] as const) {
    const v = value[key];
    if (typeof v === 'string' && v !== '') out[key] = v;
  }
  return out;
}

function mapPollOptions(value: unknown): { name: string; localId: number }[] {
  if (!Array.isArray(value)) return [];
  return value.map((o: unknown, index) =>
    typeof o === 'string' ? { name: o, localId: index } : { name: str(field(o, 'name')), localId: num(field(o, 'localId'), index) },
  );
}

export function mapMessage(m: LibMessageData): WireMessage {
  const type = str(m.type, 'unknown');
  const hasMedia = bool(m.hasMedia);
  const raw = m.rawData;
  const out: WireMessage = {
    id: {
      fromMe: bool(field(m.id, 'fromMe')),
      remote: serialized(field(m.id, 'remote')),
      id: str(field(m.id, 'id')),
      _serialized: serialized(m.id),
    },
    from: serialized(m.from),
    to: serialized(m.to),
    author: serializedOrNull(m.author),
    body: str(m.body),
    type: isMessageType(type) ? type : 'unknown',
    timestamp: num(m.timestamp),
    fromMe: bool(m.fromMe),
    hasMedia,
    hasQuotedMsg: bool(m.hasQuotedMsg),
    ack: toAck(m.ack) ?? 0,
    isForwarded: bool(m.isForwarded),
    deviceType: str(m.deviceType),
    location: mapLocation(m.location),
    vCards: strings(m.vCards),
    mediaInfo: hasMedia
      ? { mimetype: str(field(raw, 'mimetype')), filename: strOrNull(field(raw, 'filename')), size: num(field(raw, 'size')) }
      : null,
  };
  if (type === 'poll_creation') {
    out.pollName = str(m.pollName);
    out.pollOptions = mapPollOptions(m.pollOptions);
  }
  return out;
}

export function mapChat(c: LibChatData): WireChat {
  const id = serialized(c.id);
  return {
    id,
    name: str(c.name, str(field(c.id, 'user'), id)),
    isGroup: bool(c.isGroup),
    isReadOnly: bool(c.isReadOnly),
    unreadCount: num(c.unreadCount),
    timestamp: num(c.timestamp),
    archived: bool(c.archived),
    pinned: bool(c.pinned),
    isMuted: bool(c.isMuted),
    muteExpiration: numOrNull(c.muteExpiration),
  };
}

function mapParticipant(p: unknown): GroupParticipant {
  return { id: serialized(field(p, 'id')), isAdmin: bool(field(p, 'isAdmin')), isSuperAdmin: bool(field(p, 'isSuperAdmin')) };
}

export function mapGroup(g: LibGroupChat): WireGroup {
  const participants: unknown = g.participants;
  return {
    ...mapChat(g),
    owner: serializedOrNull(g.owner),
    description: strOrNull(g.description),
    participants: Array.isArray(participants) ? participants.map(mapParticipant) : [],
  };
}

export function mapContact(c: LibContact): WireContact {
  const id = serialized(c.id);
  return {
    id,
    number: str(c.number, str(field(c.id, 'user'))),
    name: strOrNull(c.name),
    pushname: strOrNull(c.pushname),
    shortName: strOrNull(c.shortName),
    isBusiness: bool(c.isBusiness),
    isEnterprise: bool(c.isEnterprise),
    isMyContact: bool(c.isMyContact),
    isBlocked: bool(c.isBlocked),
    isGroup: bool(c.isGroup),
    isUser: bool(c.isUser),
    isWAContact: bool(c.isWAContact),
  };
}

/** Reaction (src/structures/Reaction.js): `id` and `msgId` are message keys, `timestamp` seconds (maybe fractional). */
export function mapReaction(r: unknown): WireReaction | null {
  const msgKey = field(r, 'msgId');
  const msgId = serialized(msgKey);
  if (msgId === '') return null;
  return {
    id: serialized(field(r, 'id')),
    msgId,
    chatId: serialized(field(msgKey, 'remote')),
    senderId: serialized(field(r, 'senderId')),
    reaction: str(field(r, 'reaction')),
    timestamp: Math.floor(num(field(r, 'timestamp'))),
    orphan: num(field(r, 'orphan')),
  };
}

/** PollVote (src/structures/PollVote.js): `voter` is a wid object at runtime, `interractedAtTs` is ms. */
export function mapPollVote(v: unknown): WirePollVote | null {
  const parent = field(v, 'parentMessage');
  const parentMessageId = serializedOrNull(field(parent, 'id')) ?? serialized(field(v, 'parentMsgKey'));
  if (parentMessageId === '') return null;
  const selected = field(v, 'selectedOptions');
  return {
    voter: serialized(field(v, 'voter')),
    selectedOptions: Array.isArray(selected)
      ? selected.map((o: unknown) => ({ name: str(field(o, 'name')), localId: num(field(o, 'localId')) }))
      : [],
    interractedAtTs: num(field(v, 'interractedAtTs')),
    parentMessageId,
  };
}

/** GroupNotification (src/structures/GroupNotification.js). */
export function mapGroupNotification(n: unknown): WireGroupNotification | null {
  const chatId = str(field(n, 'chatId'));
  if (chatId === '') return null;
  const recipients = field(n, 'recipientIds');
  return {
    id: serialized(field(n, 'id')),
    chatId,
    author: serialized(field(n, 'author')),
    recipientIds: Array.isArray(recipients) ? recipients.map(serialized).filter((s) => s !== '') : [],
    body: str(field(n, 'body')),
    type: str(field(n, 'type')),
    timestamp: num(field(n, 'timestamp')),
  };
}

/** Call (src/structures/Call.js): `from` is the peer, `timestamp` the offer time in seconds. */
export function mapCall(c: unknown): WireCall | null {
  const id = str(field(c, 'id'));
  if (id === '') return null;
  return {
    id,
    from: serialized(field(c, 'from')),
    timestamp: num(field(c, 'timestamp')),
    isVideo: bool(field(c, 'isVideo')),
    isGroup: bool(field(c, 'isGroup')),
    fromMe: bool(field(c, 'fromMe')),
  };
}

export function mapBattery(b: unknown): BatteryInfo {
  return { battery: num(field(b, 'battery')), plugged: bool(field(b, 'plugged')) };
}

export function mapClientInfo(info: LibClientInfo | undefined): ClientInfo | null {
  const wid = serialized(info?.wid);
  if (!info || wid === '') return null;
  return { wid, pushname: str(info.pushname), platform: str(info.platform) };
}

export function mapMedia(m: LibMedia): MessageMedia {
  return { mimetype: m.mimetype, data: m.data, filename: m.filename ?? null, filesize: m.filesize ?? null };
}

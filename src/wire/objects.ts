/**
 * Wire shapes of the API (src/wire/): driver data (Wire*) → the Message, Chat and Contact objects of SPEC.md,
 * field by field, for the routes and the webhooks. Copying named fields (never spreading) keeps whatever else a
 * driver carries (media details, poll internals) out of responses, and pins the one unit change: message
 * timestamps are unix SECONDS on the driver side and unix MILLISECONDS in the Message object, while the Chat
 * object keeps unix seconds (SPEC.md "Chat object" / "Message object").
 */
import type { Location, WireChat, WireContact, WireMessage } from '../drivers/contract.js';

/** SPEC.md "Chat object": the contract's WireChat carries exactly its fields (timestamp in unix seconds). */
export type Chat = WireChat;

/** SPEC.md "Message object". */
export interface Message {
  id: string;
  chatId: string;
  from: string;
  to: string;
  author: string | null;
  body: string;
  type: string;
  /** unix milliseconds */
  timestamp: number;
  fromMe: boolean;
  hasMedia: boolean;
  hasQuotedMsg: boolean;
  ack: number;
  isForwarded: boolean;
  deviceType: string;
  location: Location | null;
  vCards: string[];
}

/** The Contact object as DESIGN.md decides it: exactly the whatsapp-web.js Contact fields of the contract. */
export type Contact = WireContact;

export function toChat(c: WireChat): Chat {
  return {
    id: c.id,
    name: c.name ?? '',
    isGroup: Boolean(c.isGroup),
    isReadOnly: Boolean(c.isReadOnly),
    unreadCount: Math.trunc(c.unreadCount ?? 0),
    timestamp: Math.trunc(c.timestamp ?? 0),
    archived: Boolean(c.archived),
    pinned: Boolean(c.pinned),
    isMuted: Boolean(c.isMuted),
    muteExpiration: c.muteExpiration ?? null,
  };
}

/** seconds → milliseconds; a driver that already has fractional seconds keeps its precision. */
export function secondsToMs(seconds: number): number {
  return Math.round(seconds * 1000);
}

export function toMessage(m: WireMessage): Message {
  return {
    id: m.id._serialized,
    // the chat a message belongs to is the remote part of its id, whichever side sent it
    chatId: m.id.remote,
    from: m.from,
    to: m.to,
    author: m.author ?? null,
    body: m.body ?? '',
    type: m.type,
    timestamp: secondsToMs(m.timestamp),
    fromMe: Boolean(m.fromMe),
    hasMedia: Boolean(m.hasMedia),
    hasQuotedMsg: Boolean(m.hasQuotedMsg),
    ack: m.ack,
    isForwarded: Boolean(m.isForwarded),
    deviceType: m.deviceType ?? 'unknown',
    location: m.location ? toLocation(m.location) : null,
    vCards: [...(m.vCards ?? [])],
  };
}

function toLocation(l: Location): Location {
  const out: Location = { latitude: l.latitude, longitude: l.longitude };
  if (l.name !== undefined) out.name = l.name;
  if (l.address !== undefined) out.address = l.address;
  if (l.url !== undefined) out.url = l.url;
  if (l.description !== undefined) out.description = l.description;
  return out;
}

export function toContact(c: WireContact): Contact {
  return {
    id: c.id,
    number: c.number,
    name: c.name ?? null,
    pushname: c.pushname ?? null,
    shortName: c.shortName ?? null,
    isBusiness: Boolean(c.isBusiness),
    isEnterprise: Boolean(c.isEnterprise),
    isMyContact: Boolean(c.isMyContact),
    isBlocked: Boolean(c.isBlocked),
    isGroup: Boolean(c.isGroup),
    isUser: Boolean(c.isUser),
    isWAContact: Boolean(c.isWAContact),
  };
}

/**
 * What the other people on the network do to an instance, for the control API: write to it (text, media,
 * location, contact cards, polls, undecryptable messages), vote, react, edit and revoke their messages,
 * acknowledge what the instance sent, call, change their number, and what the instance's own phone does
 * (battery, archiving a chat). Refusals are DomainErrors (src/errors.ts) because only the control API calls these.
 */
import { DriverError, type Location, type MessageMedia, type SendOptions, type WireMessage } from '../drivers/contract.js';
import { DomainError } from '../errors.js';
import { draftFromContent, type Draft } from './content.js';
import { newCallId, normalizePhone, parseChatId, userId } from './ids.js';
import type { SandboxNetwork } from './network.js';
import { vCardOf } from './sending.js';
import type { ChatRef, NetMessage } from './types.js';
import { wireMessage } from './wire.js';

export interface InboundMessage {
  from: string;
  /** write in this group (both must be members) instead of the direct chat */
  groupId?: string;
  type: 'text' | 'media' | 'location' | 'vcard' | 'poll' | 'ciphertext';
  body?: string;
  media?: MessageMedia;
  caption?: string;
  /** media as a voice note, sticker or document */
  asVoice?: boolean;
  asSticker?: boolean;
  asDocument?: boolean;
  location?: Location;
  /** contact cards of these phones, or one raw vCard */
  contacts?: string[];
  vcard?: string;
  poll?: { name: string; options: string[]; allowMultipleAnswers?: boolean };
  quotedMessageId?: string;
}

/** Translate a network refusal into the control API's vocabulary. */
export function controlError(err: unknown): unknown {
  if (!(err instanceof DriverError)) return err;
  if (err.code === 'NOT_FOUND') return new DomainError('NOT_FOUND', err.message);
  if (err.code === 'NOT_A_GROUP') return new DomainError('NOT_A_GROUP', err.message);
  return new DomainError('VALIDATION_FAILED', err.message, { field: 'body' });
}

export function phoneOf(input: string, field: string): string {
  const phone = normalizePhone(input);
  if (!phone) throw new DomainError('VALIDATION_FAILED', `${field} is not a phone number`, { field });
  return phone;
}

/** The phone an instance is linked to; acting on an unlinked instance makes no sense. */
export function linkedPhone(net: SandboxNetwork, instanceId: string): string {
  const phone = net.session(instanceId).phone;
  if (!phone) throw new DomainError('CONFLICT', 'the instance is not linked to a phone number');
  return phone;
}

function person(net: SandboxNetwork, input: string, field: string, instancePhone: string): string {
  const phone = phoneOf(input, field);
  if (phone === instancePhone) throw new DomainError('VALIDATION_FAILED', `${field} is the instance's own number`, { field });
  if (!net.isRegistered(phone)) throw new DomainError('VALIDATION_FAILED', `${field} has no account on the network`, { field });
  return phone;
}

/** A message of the instance's chats, by the id the instance knows it under. */
export function messageOf(net: SandboxNetwork, instanceId: string, messageId: string): NetMessage {
  const m = net.messages.find(linkedPhone(net, instanceId), messageId);
  if (!m) throw new DomainError('MESSAGE_NOT_FOUND', 'no such message in the instance’s chats');
  return m;
}

function inboundDraft(net: SandboxNetwork, msg: InboundMessage): Draft {
  if (msg.type === 'vcard' && msg.vcard !== undefined) {
    return { type: 'vcard', body: msg.vcard, media: null, location: null, vCards: [msg.vcard], poll: null };
  }
  const options: SendOptions = { sendAudioAsVoice: msg.asVoice, sendMediaAsSticker: msg.asSticker, sendMediaAsDocument: msg.asDocument };
  const ctx = { vCardOf: (id: string) => vCardOf(net, id) };
  switch (msg.type) {
    case 'ciphertext':
      return { type: 'chat', body: msg.body ?? '', media: null, location: null, vCards: [], poll: null };
    case 'text':
      return draftFromContent({ kind: 'text', body: msg.body ?? '' }, options, ctx);
    case 'media':
      if (!msg.media) throw new DomainError('VALIDATION_FAILED', 'media is required', { field: 'media' });
      return draftFromContent({ kind: 'media', media: msg.media, caption: msg.caption ?? msg.body }, options, ctx);
    case 'location':
      if (!msg.location) throw new DomainError('VALIDATION_FAILED', 'location is required', { field: 'location' });
      return draftFromContent({ kind: 'location', location: msg.location }, options, ctx);
    case 'vcard':
      return draftFromContent({ kind: 'contacts', contactIds: (msg.contacts ?? []).map((p) => userId(phoneOf(p, 'contacts'))) }, options, ctx);
    case 'poll': {
      if (!msg.poll) throw new DomainError('VALIDATION_FAILED', 'poll is required', { field: 'poll' });
      const poll = { pollName: msg.poll.name, pollOptions: msg.poll.options, options: { allowMultipleAnswers: msg.poll.allowMultipleAnswers === true } };
      return draftFromContent({ kind: 'poll', poll }, options, ctx);
    }
  }
}

export function receiveMessage(net: SandboxNetwork, instanceId: string, msg: InboundMessage): { message: WireMessage } {
  const me = linkedPhone(net, instanceId);
  const from = person(net, msg.from, 'from', me);
  let chat: ChatRef = { kind: 'direct', to: me };
  if (msg.groupId !== undefined) {
    const g = net.groups.get(msg.groupId);
    if (!g) throw new DomainError('CHAT_NOT_FOUND', 'no such group');
    if (!net.groups.isMember(g, from) || !net.groups.isMember(g, me)) {
      throw new DomainError('VALIDATION_FAILED', 'sender and instance must both be members of the group', { field: 'groupId' });
    }
    chat = { kind: 'group', gid: g.gid };
  }
  try {
    const draft = inboundDraft(net, msg);
    const quoted = msg.quotedMessageId ? net.messages.find(me, msg.quotedMessageId) : null;
    const m = net.messages.post({ sender: from, chat, draft, origin: 'phone', quotedKey: quoted?.key ?? null, ciphertext: msg.type === 'ciphertext' });
    return { message: wireMessage(m, me) };
  } catch (err) {
    throw controlError(err);
  }
}

function actingPerson(net: SandboxNetwork, instanceId: string, input: string, m: NetMessage): string {
  const who = phoneOf(input, 'from');
  if (who === linkedPhone(net, instanceId)) throw new DomainError('VALIDATION_FAILED', 'from is the instance itself', { field: 'from' });
  if (!m.audience.includes(who)) throw new DomainError('VALIDATION_FAILED', 'from is not in this chat', { field: 'from' });
  return who;
}

export function vote(net: SandboxNetwork, instanceId: string, messageId: string, from: string, selected: string[]): void {
  const m = messageOf(net, instanceId, messageId);
  try {
    net.messages.vote(actingPerson(net, instanceId, from, m), m, selected);
  } catch (err) {
    throw controlError(err);
  }
}

export function react(net: SandboxNetwork, instanceId: string, messageId: string, from: string, emoji: string): void {
  const m = messageOf(net, instanceId, messageId);
  net.messages.react(actingPerson(net, instanceId, from, m), m, emoji);
}

/** The sender of a message (one of the people) edits it. */
export function edit(net: SandboxNetwork, instanceId: string, messageId: string, body: string): WireMessage {
  const m = messageOf(net, instanceId, messageId);
  if (m.sender === linkedPhone(net, instanceId)) throw new DomainError('VALIDATION_FAILED', 'the instance edits its own messages through the API', { field: 'messageId' });
  if (!net.messages.edit(m.sender, m, body)) throw new DomainError('CONFLICT', 'this message can no longer be edited');
  return wireMessage(m, linkedPhone(net, instanceId));
}

/** The sender of a message revokes it, for everyone or only on their own phone. */
export function revoke(net: SandboxNetwork, instanceId: string, messageId: string, everyone: boolean): void {
  const m = messageOf(net, instanceId, messageId);
  if (m.sender === linkedPhone(net, instanceId)) throw new DomainError('VALIDATION_FAILED', 'the instance deletes its own messages through the API', { field: 'messageId' });
  if (everyone) net.messages.revokeForEveryone(m.sender, m);
  else net.messages.deleteForMe(m.sender, m);
}

/** The recipient's phone confirms a message the instance sent: delivered (2) or read (3). */
export function acknowledge(net: SandboxNetwork, instanceId: string, messageId: string, ack: 2 | 3 | 4): void {
  const m = messageOf(net, instanceId, messageId);
  if (m.sender !== linkedPhone(net, instanceId)) throw new DomainError('VALIDATION_FAILED', 'only messages the instance sent are acknowledged', { field: 'messageId' });
  net.messages.setAck(m.key, ack);
}

export function call(net: SandboxNetwork, instanceId: string, from: string, isVideo: boolean): { callId: string } {
  const me = linkedPhone(net, instanceId);
  const caller = person(net, from, 'from', me);
  const callId = newCallId();
  const timestamp = Math.floor(net.now() / 1000);
  net.emitTo(me, () => ({ name: 'call', args: [{ id: callId, from: userId(caller), timestamp, isVideo, isGroup: false, fromMe: false }] }));
  return { callId };
}

/** A contact moved to a new number: the instance's chat with the old number gets the notice. */
export function changeNumber(net: SandboxNetwork, instanceId: string, oldInput: string, newInput: string): { message: WireMessage } {
  const me = linkedPhone(net, instanceId);
  const oldPhone = person(net, oldInput, 'oldPhone', me);
  const newPhone = phoneOf(newInput, 'newPhone');
  net.setAccount(newPhone, { registered: true, pushname: net.pushname(oldPhone) });
  const isContact = net.messages.inChat(me, userId(oldPhone)).length > 0;
  const draft: Draft = { type: 'e2e_notification', body: '', media: null, location: null, vCards: [], poll: null };
  const m = net.messages.post({ sender: oldPhone, chat: { kind: 'direct', to: me }, draft, origin: 'phone', silent: true });
  net.emitTo(me, () => ({ name: 'contact_changed', args: [wireMessage(m, me), userId(oldPhone), userId(newPhone), isContact] }));
  return { message: wireMessage(m, me) };
}

export function battery(net: SandboxNetwork, instanceId: string, level: number, plugged: boolean): void {
  const session = net.session(instanceId);
  if (session.isReady()) session.emit({ name: 'change_battery', args: [{ battery: level, plugged }] });
}

/** The instance's phone archives or unarchives a chat. */
export function archive(net: SandboxNetwork, instanceId: string, chatId: string, archived: boolean): void {
  const me = linkedPhone(net, instanceId);
  if (!parseChatId(chatId)) throw new DomainError('VALIDATION_FAILED', 'chatId is malformed', { field: 'chatId' });
  const chat = net.messages.chat(me, chatId);
  if (!chat) throw new DomainError('CHAT_NOT_FOUND', 'no such chat');
  const state = net.messages.chatState(me, chat.id);
  const prev = state.archived;
  state.archived = archived;
  net.persist();
  const now = net.messages.chat(me, chat.id);
  if (now) net.emitTo(me, () => ({ name: 'chat_archived', args: [{ ...now }, archived, prev] }));
}

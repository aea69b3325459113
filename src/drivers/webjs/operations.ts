/**
 * Interactions (react, edit, delete, seen, typing) and reads, each one library call through the gate.
 * Message- and chat-level operations go through the objects the library returns (Message.react, Chat.
 * fetchMessages, …) so a missing message or chat is a clear NOT_FOUND instead of a silent no-op in the page.
 */
import type WAWebJS from 'whatsapp-web.js';
import type { FetchMessagesOptions, MessageMedia, SendOptions, WireChat, WireContact, WireMessage } from '../contract.js';
import { checkChatId, checkMessageId, checkPhone, isGroupId, isUserId } from './content.js';
import { serialized } from './fields.js';
import type { Gate } from './gate.js';
import type { LibChat, LibMessage } from './library.js';
import { isChatData, isMessageData, mapChat, mapContact, mapMedia, mapMessage } from './mapping.js';
import { invalidInput, notFound } from './outcome.js';

export async function findMessage(gate: Gate, msgId: string): Promise<LibMessage> {
  checkMessageId(msgId);
  const message = await gate.call('getMessageById', (c) => c.getMessageById(msgId));
  if (!message) throw notFound(`message ${msgId}`);
  return message;
}

export async function findChat(gate: Gate, chatId: string): Promise<LibChat> {
  checkChatId(chatId);
  const chat = await gate.call('getChatById', (c) => c.getChatById(chatId));
  if (!chat) throw notFound(`chat ${chatId}`);
  return chat;
}

// ---- interactions

export async function react(gate: Gate, msgId: string, emoji: string): Promise<void> {
  const message = await findMessage(gate, msgId);
  await gate.call('react', () => message.react(emoji));
}

export async function editMessage(gate: Gate, msgId: string, body: string, options: SendOptions): Promise<WireMessage | null> {
  const message = await findMessage(gate, msgId);
  const editOptions: WAWebJS.MessageEditOptions = {};
  if (options.linkPreview !== undefined) editOptions.linkPreview = options.linkPreview;
  if (options.mentions !== undefined) editOptions.mentions = [...options.mentions];
  // The library answers null when the message is not ours or can no longer be edited.
  const edited = await gate.call('edit', () => message.edit(body, editOptions));
  return edited && isMessageData(edited) ? mapMessage(edited) : null;
}

/**
 * whatsapp-web.js deletes a message for us alone when it cannot revoke it (a contact's message outside a
 * group), and says nothing: the answer would say `everyone: true` for a delete that was not, and the message
 * could not be revoked afterwards. Refused before anything is done, as the sandbox network refuses it. In a
 * group an admin may revoke anyone's message: the library decides there.
 */
export async function deleteMessage(gate: Gate, msgId: string, everyone: boolean): Promise<void> {
  const message = await findMessage(gate, msgId);
  if (everyone && !message.fromMe && !isGroupId(message.id.remote)) {
    throw invalidInput('only the sender (or a group admin) can delete a message for everyone');
  }
  await gate.call('delete', () => message.delete(everyone));
}

export async function sendSeen(gate: Gate, chatId: string): Promise<boolean> {
  checkChatId(chatId);
  return (await gate.call('sendSeen', (c) => c.sendSeen(chatId))) === true;
}

export async function chatState(gate: Gate, chatId: string, state: 'typing' | 'recording' | 'clear'): Promise<void> {
  const chat = await findChat(gate, chatId);
  if (state === 'typing') await gate.call('sendStateTyping', () => chat.sendStateTyping());
  else if (state === 'recording') await gate.call('sendStateRecording', () => chat.sendStateRecording());
  else await gate.call('clearState', () => chat.clearState());
}

// ---- reads

/** Person and group chats; channels and status broadcasts are out of the product's scope (SPEC.md). */
export async function getChats(gate: Gate): Promise<WireChat[]> {
  const chats = await gate.call('getChats', (c) => c.getChats());
  return chats
    .filter(isChatData)
    .map(mapChat)
    .filter((chat) => isUserId(chat.id) || isGroupId(chat.id));
}

export async function getChatById(gate: Gate, chatId: string): Promise<WireChat | null> {
  checkChatId(chatId);
  const chat = await gate.call('getChatById', (c) => c.getChatById(chatId));
  return chat && isChatData(chat) ? mapChat(chat) : null;
}

export async function fetchMessages(gate: Gate, chatId: string, options: FetchMessagesOptions): Promise<WireMessage[]> {
  const chat = await findChat(gate, chatId);
  const search: WAWebJS.MessageSearchOptions = { limit: options.limit };
  if (options.fromMe !== undefined) search.fromMe = options.fromMe;
  const messages = await gate.call('fetchMessages', () => chat.fetchMessages(search));
  return messages.filter(isMessageData).map(mapMessage);
}

export async function getMessageById(gate: Gate, msgId: string): Promise<WireMessage | null> {
  checkMessageId(msgId);
  const message = await gate.call('getMessageById', (c) => c.getMessageById(msgId));
  return message && isMessageData(message) ? mapMessage(message) : null;
}

export async function getContactById(gate: Gate, contactId: string): Promise<WireContact | null> {
  checkChatId(contactId);
  const contact = await gate.call('getContactById', (c) => c.getContactById(contactId));
  return contact && serialized(contact.id) !== '' ? mapContact(contact) : null;
}

export async function getProfilePicUrl(gate: Gate, contactId: string): Promise<string | null> {
  checkChatId(contactId);
  const url = await gate.call('getProfilePicUrl', (c) => c.getProfilePicUrl(contactId));
  return typeof url === 'string' && url !== '' ? url : null;
}

export async function getNumberId(gate: Gate, phone: string): Promise<string | null> {
  const number = checkPhone(phone);
  const wid = await gate.call('getNumberId', (c) => c.getNumberId(number));
  const id = serialized(wid);
  return id === '' ? null : id;
}

export async function downloadMedia(gate: Gate, msgId: string): Promise<MessageMedia | null> {
  const message = await findMessage(gate, msgId);
  if (!message.hasMedia) return null;
  const media = await gate.call('downloadMedia', () => message.downloadMedia());
  return media ? mapMedia(media) : null;
}

/**
 * Sends and forwards: at most one message on the network per call, never a retry.
 *
 * Order of a send, and what a failure at each step means:
 *   1. input checks (content.ts)                       → INVALID_INPUT, provably not sent
 *   2. for a phone id (`@c.us`): getNumberId           → null: NOT_REGISTERED; failure: provably not sent
 *      (the network's own answer for the number, asked before anything is sent; `@lid` and `@g.us` ids are
 *      addressed as given, the network has no lookup for them)
 *   3. contact cards: getContactById per card          → failure: provably not sent
 *   4. sendMessage with waitUntilMsgSent               → an id: sent (confirmed); no message back: sent
 *      (assumed); ack -1 (the library resolved although WhatsApp Web marked the send failed): unknown;
 *      timeout or error: unknown
 */
import type WAWebJS from 'whatsapp-web.js';
import { DriverError, type SendContent, type SendOptions, type SendResult } from '../contract.js';
import { captionOf, checkChatId, checkMessageId, checkSend, isPhoneId, libContent, libSendOptions } from './content.js';
import { num, serialized } from './fields.js';
import type { Gate } from './gate.js';
import { isLibraryContact, type LibContent, type LibMessage } from './library.js';
import { notFound } from './outcome.js';

/** The registered id of a phone chat id, or NOT_REGISTERED. */
async function registeredId(gate: Gate, chatId: string): Promise<string> {
  const number = chatId.slice(0, -'@c.us'.length);
  const wid = await gate.call('getNumberId', (c) => c.getNumberId(number), { preSend: true });
  const id = serialized(wid);
  if (id === '') throw new DriverError(`${number} is not registered on the network`, 'NOT_REGISTERED', true);
  return id;
}

async function recipient(gate: Gate, chatId: string): Promise<string> {
  return isPhoneId(chatId) ? registeredId(gate, chatId) : chatId;
}

async function contactCards(gate: Gate, ids: string[]): Promise<LibContent> {
  const cards: WAWebJS.Contact[] = [];
  for (const id of ids) {
    const contact: unknown = await gate.call('getContactById', (c) => c.getContactById(id), { preSend: true });
    if (!isLibraryContact(contact)) throw notFound(`contact ${id}`);
    cards.push(contact);
  }
  const [first] = cards;
  return cards.length === 1 && first ? first : cards;
}

/** What the network's answer to a send means (step 4 above). */
export function sendOutcome(sent: LibMessage | undefined | null): SendResult {
  if (!sent) return {};
  if (num(sent.ack, 0) === -1) {
    throw new DriverError('the network marked the message as failed (ACK_ERROR); it may or may not have gone out', 'CALL_FAILED', false);
  }
  const id = serialized(sent.id);
  if (id === '') return {};
  const timestamp = num(sent.timestamp, 0);
  return timestamp > 0 ? { id, timestamp } : { id };
}

export async function sendMessage(gate: Gate, chatId: string, content: SendContent, options: SendOptions): Promise<SendResult> {
  checkSend(chatId, content, options);
  const target = await recipient(gate, chatId);
  const body = content.kind === 'contacts' ? await contactCards(gate, content.contactIds) : libContent(content);
  const sendOptions = libSendOptions(options, captionOf(content));
  const sent = await gate.call('sendMessage', (c) => c.sendMessage(target, body, sendOptions));
  return sendOutcome(sent);
}

/** whatsapp-web.js resolves a forward without the new message: the caller records it as assumed. */
export async function forwardMessage(gate: Gate, msgId: string, toChatId: string): Promise<void> {
  checkMessageId(msgId);
  checkChatId(toChatId);
  const target = await recipient(gate, toChatId);
  const message = await gate.call('getMessageById', (c) => c.getMessageById(msgId), { preSend: true });
  if (!message) throw notFound(`message ${msgId}`);
  await gate.call('forward', () => message.forward(target));
}

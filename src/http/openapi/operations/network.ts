/** What an instance asks of the network through its session: groups, interactions and reads. */
import { AddSchema, ParticipantsBody, PatchSchema as GroupPatchSchema } from '../../routes/groups.js';
import { DeleteSchema, EditSchema, PresenceSchema, ReactionSchema } from '../../routes/interactions.js';
import { obj, ref } from '../components.js';
import * as hand from '../hand-bodies.js';
import { GROUP_ERRORS, INTERACTION_ERRORS, NETWORK_ERRORS, anyData, data, items, type Operation } from './common.js';

export const NETWORK_OPERATIONS: Record<string, Operation> = {
  // ---- groups
  'POST /api/v2/groups/:groupId/participants': { summary: 'Add participants', tag: 'Groups', body: AddSchema, ok: data(obj({ groupId: { type: 'string' }, added: { type: 'array' }, failed: { type: 'object' } })), errors: GROUP_ERRORS },
  'DELETE /api/v2/groups/:groupId/participants': { summary: 'Remove participants', tag: 'Groups', body: ParticipantsBody, ok: data(obj({ groupId: { type: 'string' }, removed: { type: 'array' } })), errors: GROUP_ERRORS },
  'POST /api/v2/groups/:groupId/admins': { summary: 'Promote participants to admins', tag: 'Groups', body: ParticipantsBody, ok: data(obj({ groupId: { type: 'string' }, promoted: { type: 'array' } })), errors: GROUP_ERRORS },
  'DELETE /api/v2/groups/:groupId/admins': { summary: 'Demote admins', tag: 'Groups', body: ParticipantsBody, ok: data(obj({ groupId: { type: 'string' }, demoted: { type: 'array' } })), errors: GROUP_ERRORS },
  'GET /api/v2/groups/:groupId/invite': { summary: 'The invite code and link', tag: 'Groups', ok: data(obj({ code: { type: 'string' }, url: { type: 'string' } })), errors: GROUP_ERRORS },
  'POST /api/v2/groups/:groupId/invite/revoke': { summary: 'Revoke the invite (a new code)', tag: 'Groups', ok: data(obj({ code: { type: 'string' } })), errors: GROUP_ERRORS },
  'POST /api/v2/groups/:groupId/leave': { summary: 'Leave the group', tag: 'Groups', ok: data(obj({ groupId: { type: 'string' }, left: { const: true } })), errors: GROUP_ERRORS },
  'PATCH /api/v2/groups/:groupId': { summary: 'Change subject and/or description', tag: 'Groups', body: GroupPatchSchema, ok: anyData(), errors: GROUP_ERRORS },

  // ---- interactions
  'POST /api/v2/messages/:msgId/reaction': { summary: 'React to a message', tag: 'Interactions', body: ReactionSchema, ok: data(obj({ msgId: { type: 'string' }, emoji: { type: 'string' } })), errors: [...INTERACTION_ERRORS, 'MESSAGE_NOT_FOUND'] },
  'DELETE /api/v2/messages/:msgId/reaction': { summary: 'Remove the reaction', tag: 'Interactions', ok: data(obj({ msgId: { type: 'string' }, emoji: { type: 'null' } })), errors: [...INTERACTION_ERRORS, 'MESSAGE_NOT_FOUND'] },
  'POST /api/v2/chats/:chatId/seen': { summary: 'Mark a chat as seen', tag: 'Interactions', ok: data(obj({ chatId: { type: 'string' }, seen: { type: 'boolean' } })), errors: [...INTERACTION_ERRORS, 'CHAT_NOT_FOUND'] },
  'POST /api/v2/chats/:chatId/typing': { summary: 'Show "typing…"', tag: 'Interactions', body: PresenceSchema, ok: anyData(), errors: [...INTERACTION_ERRORS, 'CHAT_NOT_FOUND'] },
  'POST /api/v2/chats/:chatId/recording': { summary: 'Show "recording…"', tag: 'Interactions', body: PresenceSchema, ok: anyData(), errors: [...INTERACTION_ERRORS, 'CHAT_NOT_FOUND'] },
  'DELETE /api/v2/chats/:chatId/state': { summary: 'Stop typing/recording', tag: 'Interactions', ok: anyData(), errors: [...INTERACTION_ERRORS, 'CHAT_NOT_FOUND'] },
  'PATCH /api/v2/messages/:msgId': { summary: 'Edit an own text message', tag: 'Interactions', body: EditSchema, ok: data(obj({ messageId: { type: 'string' } })), errors: [...INTERACTION_ERRORS, 'MESSAGE_NOT_FOUND', 'CONFLICT'] },
  'DELETE /api/v2/messages/:msgId': { summary: 'Delete a network message (for me or everyone)', tag: 'Interactions', body: DeleteSchema, ok: data(obj({ msgId: { type: 'string' }, everyone: { type: 'boolean' } })), errors: [...INTERACTION_ERRORS, 'MESSAGE_NOT_FOUND'] },

  // ---- reads
  'GET /api/v2/chats': { summary: 'Chats, pinned first', tag: 'Reads', query: hand.CHATS_QUERY, ok: data(items(ref('Chat'), { total: { type: 'integer' }, nextCursor: {} })), errors: NETWORK_ERRORS },
  'GET /api/v2/chats/:chatId': { summary: 'One chat', tag: 'Reads', ok: data(ref('Chat')), errors: [...NETWORK_ERRORS, 'CHAT_NOT_FOUND'] },
  'GET /api/v2/chats/:chatId/messages': { summary: "A chat's messages", tag: 'Reads', query: hand.MESSAGES_QUERY, ok: data(items(ref('Message'), { limit: { type: 'integer' }, capped: { type: 'boolean' } })), errors: [...NETWORK_ERRORS, 'CHAT_NOT_FOUND'] },
  'GET /api/v2/messages/:msgId': { summary: 'One network message', tag: 'Reads', ok: data(ref('Message')), errors: [...NETWORK_ERRORS, 'MESSAGE_NOT_FOUND'] },
  'GET /api/v2/contacts/:contactId': { summary: 'One contact', tag: 'Reads', ok: data(ref('Contact')), errors: [...NETWORK_ERRORS, 'CONTACT_NOT_FOUND'] },
  'GET /api/v2/contacts/:contactId/picture': { summary: "A contact's picture URL", tag: 'Reads', ok: data(obj({ contactId: { type: 'string' }, pictureUrl: { type: ['string', 'null'] } })), errors: [...NETWORK_ERRORS, 'CONTACT_NOT_FOUND'] },
  'GET /api/v2/contacts/:phone/exists': { summary: 'Is the number on the network', tag: 'Reads', ok: data(obj({ phone: { type: 'string' }, registered: { type: 'boolean' }, whatsappId: { type: ['string', 'null'] } })), errors: NETWORK_ERRORS },
};

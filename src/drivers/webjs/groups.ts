/**
 * Groups: creation through the client, everything else through the library's GroupChat.
 *
 * The library reports several refusals as values instead of errors (createGroup and addParticipants answer
 * an error string, setSubject/setDescription answer false); those become DriverErrors here.
 */
import type WAWebJS from 'whatsapp-web.js';
import { DriverError, type CreateGroupResult, type WireGroup } from '../contract.js';
import { checkChatId, isGroupId, isUserId } from './content.js';
import { field, isRecord, num, serialized, str } from './fields.js';
import type { Gate } from './gate.js';
import type { LibChat, LibGroupChat } from './library.js';
import { mapGroup } from './mapping.js';
import { invalidInput, notFound } from './outcome.js';

type ParticipantResults = Record<string, { code: number; message: string }>;

function isGroupChat(chat: LibChat): chat is LibGroupChat {
  return chat.isGroup === true && typeof field(chat, 'addParticipants') === 'function';
}

function notAGroup(id: string): DriverError {
  return new DriverError(`${id} is not a group`, 'NOT_A_GROUP', true);
}

function refused(what: string, detail: string): DriverError {
  return new DriverError(`${what} refused: ${detail}`, 'CALL_FAILED', true);
}

async function findGroup(gate: Gate, groupId: string): Promise<LibGroupChat> {
  checkChatId(groupId);
  if (!isGroupId(groupId)) throw notAGroup(groupId);
  const chat = await gate.call('getChatById', (c) => c.getChatById(groupId));
  if (!chat) throw notFound(`group ${groupId}`);
  if (!isGroupChat(chat)) throw notAGroup(groupId);
  return chat;
}

function checkParticipants(ids: string[]): void {
  if (ids.length === 0) throw invalidInput('no participants');
  for (const id of ids) if (!isUserId(id)) throw invalidInput(`invalid participant id: ${id}`);
}

/** The CreateGroupOptions keys the library knows, taken from a free-form object. */
export function createGroupOptions(options: Record<string, unknown>): WAWebJS.CreateGroupOptions {
  const out: WAWebJS.CreateGroupOptions = {};
  const { messageTimer, parentGroupId, autoSendInviteV4, comment, memberAddMode, membershipApprovalMode, isRestrict, isAnnounce } = options;
  if (typeof messageTimer === 'number' && Number.isInteger(messageTimer) && messageTimer >= 0) out.messageTimer = messageTimer;
  if (typeof parentGroupId === 'string' && isGroupId(parentGroupId)) out.parentGroupId = parentGroupId;
  if (typeof autoSendInviteV4 === 'boolean') out.autoSendInviteV4 = autoSendInviteV4;
  if (typeof comment === 'string') out.comment = comment;
  if (typeof memberAddMode === 'boolean') out.memberAddMode = memberAddMode;
  if (typeof membershipApprovalMode === 'boolean') out.membershipApprovalMode = membershipApprovalMode;
  if (typeof isRestrict === 'boolean') out.isRestrict = isRestrict;
  if (typeof isAnnounce === 'boolean') out.isAnnounce = isAnnounce;
  return out;
}

export async function createGroup(
  gate: Gate,
  title: string,
  participants: string[],
  options: Record<string, unknown>,
): Promise<CreateGroupResult> {
  if (title.trim() === '') throw invalidInput('group title is empty');
  for (const id of participants) if (!isUserId(id)) throw invalidInput(`invalid participant id: ${id}`);
  const result = await gate.call('createGroup', (c) => c.createGroup(title, [...participants], createGroupOptions(options)));
  // The library's error string comes from a failed creation request: the group may or may not exist.
  if (typeof result === 'string') throw new DriverError(`createGroup failed: ${result}`, 'CALL_FAILED', false);
  const missingParticipants: ParticipantResults = {};
  for (const [id, p] of Object.entries(result.participants ?? {})) {
    const code = num(field(p, 'statusCode'), 200);
    if (code !== 200) missingParticipants[id] = { code, message: str(field(p, 'message')) };
  }
  return { gid: serialized(result.gid), title: str(result.title, title), missingParticipants };
}

export async function getGroup(gate: Gate, groupId: string): Promise<WireGroup | null> {
  checkChatId(groupId);
  if (!isGroupId(groupId)) throw notAGroup(groupId);
  const chat = await gate.call('getChatById', (c) => c.getChatById(groupId));
  if (!chat) return null;
  if (!isGroupChat(chat)) throw notAGroup(groupId);
  return mapGroup(chat);
}

export async function addParticipants(gate: Gate, groupId: string, ids: string[]): Promise<ParticipantResults> {
  checkParticipants(ids);
  const group = await findGroup(gate, groupId);
  const result = await gate.call('addParticipants', () => group.addParticipants([...ids]));
  if (typeof result === 'string') throw refused('addParticipants', result);
  const out: ParticipantResults = {};
  if (isRecord(result)) {
    for (const [id, p] of Object.entries(result)) out[id] = { code: num(field(p, 'code')), message: str(field(p, 'message')) };
  }
  return out;
}

export async function changeParticipants(
  gate: Gate,
  groupId: string,
  ids: string[],
  change: 'remove' | 'promote' | 'demote',
): Promise<void> {
  checkParticipants(ids);
  const group = await findGroup(gate, groupId);
  const list = [...ids];
  if (change === 'remove') await gate.call('removeParticipants', () => group.removeParticipants(list));
  else if (change === 'promote') await gate.call('promoteParticipants', () => group.promoteParticipants(list));
  else await gate.call('demoteParticipants', () => group.demoteParticipants(list));
}

export async function getInviteCode(gate: Gate, groupId: string): Promise<string> {
  const group = await findGroup(gate, groupId);
  const code: unknown = await gate.call('getInviteCode', () => group.getInviteCode());
  if (typeof code !== 'string' || code === '') throw refused('getInviteCode', 'no invite code (not an admin?)');
  return code;
}

export async function revokeInvite(gate: Gate, groupId: string): Promise<string> {
  const group = await findGroup(gate, groupId);
  const code = await gate.call('revokeInvite', () => group.revokeInvite());
  if (typeof code === 'string' && code !== '') return code;
  const fresh: unknown = await gate.call('getInviteCode', () => group.getInviteCode());
  if (typeof fresh !== 'string' || fresh === '') throw refused('revokeInvite', 'no invite code (not an admin?)');
  return fresh;
}

export async function leaveGroup(gate: Gate, groupId: string): Promise<void> {
  const group = await findGroup(gate, groupId);
  await gate.call('leave', () => group.leave());
}

export async function setGroupInfo(gate: Gate, groupId: string, change: { subject: string } | { description: string }): Promise<void> {
  const group = await findGroup(gate, groupId);
  if ('subject' in change) {
    if (change.subject.trim() === '') throw invalidInput('group subject is empty');
    const ok = await gate.call('setSubject', () => group.setSubject(change.subject));
    if (ok !== true) throw refused('setSubject', 'the network did not accept the subject (not an admin?)');
  } else {
    const ok = await gate.call('setDescription', () => group.setDescription(change.description));
    if (ok !== true) throw refused('setDescription', 'the network did not accept the description (not an admin?)');
  }
}

/** The sandbox control API (the simulated network's own routes). */
import * as sb from '../../routes/sandbox-control-schemas.js';
import type { ErrorCode } from '../../../errors.js';
import { anyData, type Operation } from './common.js';

// what the routes of sandbox-control.ts throw (src/sandbox/people.ts, control.ts, network.ts): a path phone that is not
// one is 400; a person acting on an instance that is not linked is 409 CONFLICT; an unknown group is 404 CHAT_NOT_FOUND
const PHONE: ErrorCode[] = ['VALIDATION_FAILED'];
const LINKED: ErrorCode[] = ['VALIDATION_FAILED', 'CONFLICT'];
const GROUP: ErrorCode[] = ['VALIDATION_FAILED', 'CHAT_NOT_FOUND', 'NOT_FOUND', 'NOT_A_GROUP'];
const MESSAGE: ErrorCode[] = [...LINKED, 'MESSAGE_NOT_FOUND', 'NOT_FOUND', 'NOT_A_GROUP'];

export const SANDBOX_OPERATIONS: Record<string, Operation> = {
  'GET /sandbox/v1/instances/:instanceId': { summary: "The sandbox session's phase", tag: 'Sandbox', ok: anyData() },
  'GET /sandbox/v1/instances/:instanceId/qr': { summary: 'The current QR code', tag: 'Sandbox', ok: anyData(), errors: ['NOT_FOUND'] },
  'POST /sandbox/v1/instances/:instanceId/link': { summary: 'Scan the QR code (link a phone)', tag: 'Sandbox', body: sb.LinkBody, ok: anyData(), errors: LINKED },
  'POST /sandbox/v1/instances/:instanceId/pairing/confirm': { summary: 'Enter the pairing code', tag: 'Sandbox', body: sb.PairingBody, ok: anyData(), errors: LINKED },
  'POST /sandbox/v1/instances/:instanceId/unlink': { summary: 'Unlink the phone', tag: 'Sandbox', ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/messages': { summary: 'Write to the instance as a contact', tag: 'Sandbox', body: sb.InboundBody, ok: anyData(201), errors: [...LINKED, 'CHAT_NOT_FOUND', 'NOT_FOUND', 'NOT_A_GROUP'] },
  'POST /sandbox/v1/instances/:instanceId/messages/:messageId/vote': { summary: 'Vote in a poll', tag: 'Sandbox', body: sb.VoteBody, ok: anyData(), errors: MESSAGE },
  'POST /sandbox/v1/instances/:instanceId/messages/:messageId/reaction': { summary: 'React as a contact', tag: 'Sandbox', body: sb.ReactionBody, ok: anyData(), errors: MESSAGE },
  'POST /sandbox/v1/instances/:instanceId/messages/:messageId/edit': { summary: 'Edit as a contact', tag: 'Sandbox', body: sb.EditBody, ok: anyData(), errors: MESSAGE },
  'POST /sandbox/v1/instances/:instanceId/messages/:messageId/revoke': { summary: 'Revoke as a contact', tag: 'Sandbox', body: sb.RevokeBody, ok: anyData(), errors: MESSAGE },
  'POST /sandbox/v1/instances/:instanceId/messages/:messageId/ack': { summary: 'Acknowledge (delivered, read, played)', tag: 'Sandbox', body: sb.AckBody, ok: anyData(), errors: MESSAGE },
  'POST /sandbox/v1/instances/:instanceId/calls': { summary: 'Call the instance', tag: 'Sandbox', body: sb.CallBody, ok: anyData(201), errors: LINKED },
  'POST /sandbox/v1/instances/:instanceId/contact-changed': { summary: 'A contact changes number', tag: 'Sandbox', body: sb.ContactChangeBody, ok: anyData(), errors: LINKED },
  'POST /sandbox/v1/instances/:instanceId/battery': { summary: 'Battery event', tag: 'Sandbox', body: sb.BatteryBody, ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/chats/:chatId/archive': { summary: 'Archive or unarchive a chat', tag: 'Sandbox', body: sb.ArchiveBody, ok: anyData(), errors: [...LINKED, 'CHAT_NOT_FOUND'] },
  'POST /sandbox/v1/instances/:instanceId/groups': { summary: 'A contact creates a group', tag: 'Sandbox', body: sb.GroupBody, ok: anyData(201), errors: [...LINKED, 'NOT_FOUND', 'NOT_A_GROUP'] },
  'POST /sandbox/v1/groups/:groupId/participants': { summary: 'Change group members', tag: 'Sandbox', body: sb.GroupMembersBody, ok: anyData(), errors: GROUP },
  'POST /sandbox/v1/groups/:groupId/leave': { summary: 'A member leaves', tag: 'Sandbox', body: sb.LeaveBody, ok: anyData(), errors: GROUP },
  'PATCH /sandbox/v1/groups/:groupId': { summary: 'Change subject or description', tag: 'Sandbox', body: sb.GroupInfoBody, ok: anyData(), errors: GROUP },
  'GET /sandbox/v1/groups/:groupId': { summary: 'A group as the network knows it', tag: 'Sandbox', ok: anyData(), errors: ['CHAT_NOT_FOUND'] },
  'POST /sandbox/v1/instances/:instanceId/faults': { summary: 'Fault of the next call(s)', tag: 'Sandbox', body: sb.NextFaultBody, ok: anyData(201) },
  'GET /sandbox/v1/instances/:instanceId/faults': { summary: 'Pending faults', tag: 'Sandbox', ok: anyData() },
  'DELETE /sandbox/v1/instances/:instanceId/faults': { summary: 'Clear pending faults', tag: 'Sandbox', ok: anyData() },
  'POST /sandbox/v1/instances/:instanceId/fail': { summary: 'Crash the session, kill the browser or disconnect', tag: 'Sandbox', body: sb.FailBody, ok: anyData(), errors: LINKED },
  'PUT /sandbox/v1/accounts/:phone/fault': { summary: "Fault of an account's sends", tag: 'Sandbox', body: sb.FaultBody, ok: anyData(), errors: PHONE },
  'DELETE /sandbox/v1/accounts/:phone/fault': { summary: "Clear an account's fault", tag: 'Sandbox', ok: anyData(), errors: PHONE },
  'GET /sandbox/v1/accounts/:phone': { summary: 'An account of the network', tag: 'Sandbox', ok: anyData(), errors: PHONE },
  'PUT /sandbox/v1/accounts/:phone': { summary: 'Register or change an account', tag: 'Sandbox', body: sb.AccountBody, ok: anyData(), errors: PHONE },
  'GET /sandbox/v1/accounts/:phone/chats/:chatId/messages': { summary: "What an account's chat holds", tag: 'Sandbox', ok: anyData(), errors: PHONE },
  'GET /sandbox/v1/instances/:instanceId/ledger': { summary: 'What the network received from the instance', tag: 'Sandbox', ok: anyData(), errors: ['VALIDATION_FAILED'] },
};

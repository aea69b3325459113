/** The request bodies of the sandbox control API (sandbox-control.ts), validated with superstruct. */
import { LOCATION_FIELDS } from '../../wire/location.js';
import {
  array,
  boolean,
  enums,
  integer,
  literal,
  max,
  min,
  nullable,
  number,
  object,
  optional,
  size,
  string,
  union,
} from 'superstruct';
import type { FaultKind } from '../../sandbox/types.js';
import { chars } from '../validate.js';

const FAULT_KINDS: FaultKind[] = ['not_registered', 'no_id', 'hang', 'call_error', 'invalid_input', 'session_crash', 'browser_death', 'disconnect'];
const str = chars(1, 4096);

export const LinkBody = object({ qr: optional(str), phoneNumber: optional(str), pushname: optional(str) });
export const PairingBody = object({ code: str });
export const MediaBody = object({ mimetype: str, data: string(), filename: optional(nullable(string())) });
export const LocationBody = object(LOCATION_FIELDS);
export const InboundBody = object({
  from: str,
  groupId: optional(str),
  type: optional(enums(['text', 'media', 'location', 'vcard', 'poll', 'ciphertext'])),
  body: optional(string()),
  media: optional(MediaBody),
  caption: optional(string()),
  asVoice: optional(boolean()),
  asSticker: optional(boolean()),
  asDocument: optional(boolean()),
  location: optional(LocationBody),
  contacts: optional(array(str)),
  vcard: optional(str),
  poll: optional(object({ name: str, options: array(str), allowMultipleAnswers: optional(boolean()) })),
  quotedMessageId: optional(str),
});
export const VoteBody = object({ from: str, selectedOptions: array(string()) });
export const ReactionBody = object({ from: str, emoji: string() });
export const EditBody = object({ body: str });
export const RevokeBody = object({ everyone: optional(boolean()) });
export const AckBody = object({ ack: enums([2, 3, 4]) });
export const GroupBody = object({ from: str, title: str, participants: optional(array(str)), instanceAdmin: optional(boolean()) });
export const GroupMembersBody = object({
  by: str,
  add: optional(array(str)),
  remove: optional(array(str)),
  promote: optional(array(str)),
  demote: optional(array(str)),
});
export const GroupInfoBody = object({ by: str, subject: optional(str), description: optional(string()) });
export const LeaveBody = object({ phone: str });
export const CallBody = object({ from: str, isVideo: optional(boolean()) });
export const ContactChangeBody = object({ oldPhone: str, newPhone: str });
export const BatteryBody = object({ battery: size(integer(), 0, 100), plugged: boolean() });
export const ArchiveBody = object({ archived: boolean() });
export const FaultBody = object({ kind: enums(FAULT_KINDS), deliver: optional(boolean()), reason: optional(str) });
export const NextFaultBody = object({
  kind: enums(FAULT_KINDS),
  deliver: optional(boolean()),
  reason: optional(str),
  on: optional(enums(['send', 'any'])),
  count: optional(size(integer(), 1, 100)),
});
export const FailBody = object({ kind: enums(['session_crash', 'browser_death', 'disconnect']), reason: optional(str) });
export const AccountBody = object({ registered: optional(boolean()), pushname: optional(nullable(string())), isBusiness: optional(boolean()) });

/**
 * The argument shapes of every sandbox RPC method, checked when a call arrives over HTTP, so a malformed
 * call is refused as INVALID_INPUT instead of reaching the network half-understood.
 */
import { LOCATION_FIELDS } from '../wire/location.js';
import {
  array,
  boolean,
  define,
  literal,
  nullable,
  number,
  object,
  optional,
  record,
  string,
  tuple,
  union,
  unknown,
  type Struct,
} from 'superstruct';
import type { SandboxArgs, SandboxMethod } from '../drivers/sandbox/api.js';

const str = string();
/** superstruct's tuple() needs at least one element */
const none = define<[]>('no arguments', (v) => Array.isArray(v) && v.length === 0);
const ids = array(string());

const sendOptions = object({
  linkPreview: optional(boolean()),
  sendAudioAsVoice: optional(boolean()),
  sendVideoAsGif: optional(boolean()),
  sendMediaAsSticker: optional(boolean()),
  sendMediaAsDocument: optional(boolean()),
  sendMediaAsHd: optional(boolean()),
  isViewOnce: optional(boolean()),
  parseVCards: optional(boolean()),
  quotedMessageId: optional(string()),
  mentions: optional(array(string())),
  groupMentions: optional(array(object({ subject: string(), id: string() }))),
  stickerName: optional(string()),
  stickerAuthor: optional(string()),
  stickerCategories: optional(array(string())),
  waitUntilMsgSent: optional(boolean()),
});

const media = object({
  mimetype: string(),
  data: string(),
  filename: optional(nullable(string())),
  filesize: optional(nullable(number())),
});

const location = object(LOCATION_FIELDS);

const content = union([
  object({ kind: literal('text'), body: string() }),
  object({ kind: literal('media'), media, caption: optional(string()) }),
  object({ kind: literal('location'), location }),
  object({ kind: literal('contacts'), contactIds: array(string()) }),
  object({
    kind: literal('poll'),
    poll: object({
      pollName: string(),
      pollOptions: array(string()),
      options: object({ allowMultipleAnswers: boolean(), messageSecret: optional(array(number())) }),
    }),
  }),
]);

const autoLink = object({ phoneNumber: string(), pushname: optional(string()) });

export const argStructs: { [M in SandboxMethod]: Struct<SandboxArgs<M>, unknown> } = {
  initialize: tuple([object({ autoLink: optional(autoLink) })]),
  destroy: none,
  logout: none,
  getState: none,
  getInfo: none,
  requestPairingCode: tuple([str]),
  sendMessage: tuple([str, content, sendOptions]),
  forwardMessage: tuple([str, str]),
  react: tuple([str, str]),
  editMessage: tuple([str, str, sendOptions]),
  deleteMessage: tuple([str, boolean()]),
  sendSeen: tuple([str]),
  sendStateTyping: tuple([str]),
  sendStateRecording: tuple([str]),
  clearState: tuple([str]),
  getChats: none,
  getChatById: tuple([str]),
  fetchMessages: tuple([str, object({ limit: number(), fromMe: optional(boolean()) })]),
  getMessageById: tuple([str]),
  getContactById: tuple([str]),
  getProfilePicUrl: tuple([str]),
  getNumberId: tuple([str]),
  downloadMedia: tuple([str]),
  createGroup: tuple([str, ids, record(string(), unknown())]),
  getGroup: tuple([str]),
  addParticipants: tuple([str, ids]),
  removeParticipants: tuple([str, ids]),
  promoteParticipants: tuple([str, ids]),
  demoteParticipants: tuple([str, ids]),
  getInviteCode: tuple([str]),
  revokeInvite: tuple([str]),
  leaveGroup: tuple([str]),
  setSubject: tuple([str, str]),
  setDescription: tuple([str, str]),
};

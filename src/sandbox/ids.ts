/**
 * Ids as the real network has them: `<digits>@c.us`, `<digits>@lid`, `120363…@g.us`, message ids serialized
 * `true_<remote>_<KEY>` (plus `_<participant>` for someone else's message in a group). Keys sent from the web
 * client start with 3EB0 (whatsapp-web.js reports deviceType `web`); keys from phones are 32 hex (`android`).
 */
import { createHash, randomInt } from 'node:crypto';
import { pooledRandom } from '../ids.js';

export type ParsedChatId =
  | { kind: 'user'; phone: string }
  | { kind: 'lid'; lid: string }
  | { kind: 'group'; gid: string };

/** Digits only, 6 to 15 long; accepts `+`, spaces, dashes and a `@c.us` suffix. */
export function normalizePhone(input: string): string | null {
  const digits = input.replace(/@c\.us$/, '').replace(/[\s+\-()]/g, '');
  return /^\d{6,15}$/.test(digits) ? digits : null;
}

export const userId = (phone: string) => `${phone}@c.us`;

export function parseChatId(id: string): ParsedChatId | null {
  // the shapes the gateway lets through (src/phone.ts CHAT_ID): an id of such a shape that names nobody is
  // unknown to the network (a 404 of the route), not malformed (its 400)
  let m = /^(\d{5,20})@c\.us$/.exec(id);
  if (m?.[1]) return { kind: 'user', phone: m[1] };
  m = /^(\d{5,24})@lid$/.exec(id);
  if (m?.[1]) return { kind: 'lid', lid: m[1] };
  if (/^\d{5,20}(-\d{5,20})?@g\.us$/.test(id)) return { kind: 'group', gid: id };
  return null;
}

/** A deterministic 15-digit lid for a phone, so a lid stays the same across restarts. */
export function lidFor(phone: string): string {
  const hex = createHash('sha256').update(`lid:${phone}`).digest('hex');
  let out = '1';
  for (let i = 0; out.length < 15; i++) out += String(parseInt(hex[i] ?? '0', 16) % 10);
  return out;
}

const upperHex = (bytes: number) => pooledRandom(bytes, 'hex').toUpperCase();
export const newWebKey = () => `3EB0${upperHex(8)}`;
export const newPhoneKey = () => upperHex(16);
export const newCallId = () => upperHex(16);

export function serializeId(fromMe: boolean, remote: string, key: string, participant?: string | null): string {
  return `${fromMe}_${remote}_${key}${participant ? `_${participant}` : ''}`;
}

export interface ParsedMessageId {
  fromMe: boolean;
  remote: string;
  key: string;
  participant: string | null;
}

export function parseMessageId(id: string): ParsedMessageId | null {
  const m = /^(true|false)_([^_]+@(?:c\.us|g\.us|lid))_([A-Za-z0-9]+)(?:_(.+))?$/.exec(id);
  if (!m || !m[2] || !m[3]) return null;
  return { fromMe: m[1] === 'true', remote: m[2], key: m[3], participant: m[4] ?? null };
}

export function newGroupId(): string {
  let digits = '120363';
  while (digits.length < 18) digits += String(randomInt(10));
  return `${digits}@g.us`;
}

function randomFrom(alphabet: string, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

export const newInviteCode = () =>
  randomFrom('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789', 22);
/** 8 characters without the look-alikes 0/O and 1/I, as the real pairing codes are shown. */
export const newPairingCode = () => randomFrom('ABCDEFGHJKLMNPQRSTUVWXYZ23456789', 8);
/**
 * Starts like the real QR payload (`2@` and a random ref) but without its three keys: 144 bits of randomness
 * are as unguessable, and the QR of 26 characters is drawn in a quarter of the time. Every waiting session
 * makes a new one at each rotation, thousands at a time when an operator creates instances in bulk: from the
 * pooled generator (a token lives one rotation; the gateway's own keys take a call of their own).
 */
export const newQrToken = () => `2@${pooledRandom(18, 'base64url')}`;

/**
 * Recipient addressing (SPEC.md "Common send request fields", v1 phone rules). Ids are kept as the network
 * gives them (`@c.us`, `@lid`, `@g.us`), never rewritten.
 */

/** Written-out separators between digits: blanks (any Unicode space), dots, slashes, dashes. */
const SEPARATORS = /[\s./-]/g;

/**
 * The trunk digit written in parentheses after a country code (`+49 (0)151 …`, `+44-(0)20-…`, `(+49) (0)151 …`,
 * `0049 (0)151 …`, `49 (0)151 …`), read once the separators are gone: dialled only within the country, never
 * after its code. Kept, it made another number (`490151…`), accepted and sent to nobody; it is dropped as people
 * who write it mean. The country code is one to three digits, with `+`, `00` or both before it and brackets
 * around it; only a lone `(0)`: Italy dials its 0 from abroad too, so `+39 (06) …` keeps its digits.
 */
const TRUNK_AFTER_COUNTRY = /^(\(?\+?\(?(?:00)?[1-9]\d{0,2}\)?)\(0\)/;

/**
 * International number without `+` (a leading `+` is tolerated), or a German national number starting with 0;
 * spaces, dots, slashes, dashes and round brackets are written-out separators, a `00` prefix is dropped, and
 * so is a `(0)` after a country code (elsewhere but at the start, where it is the national trunk digit, it is
 * refused). Digits left starting with 0 (`000491…`) are no number: refused (null).
 */
export function normalizePhone(input: string): string | null {
  const trunkless = input.trim().replace(SEPARATORS, '').replace(TRUNK_AFTER_COUNTRY, '$1');
  // a (0) left anywhere but at the start (`0 (0)151`, `+49 151 (0)…`), or at the start before another 0
  // (`(0)0151`), is no spelling of a number: read as a separator, `0 (0)151` became the +1 number 151…
  if (/.\(0\)/.test(trunkless) || /^\(0\)0/.test(trunkless)) return null;
  const compact = trunkless.replace(/[()]/g, '');
  const m = /^\+?(\d{6,16})$/.exec(compact);
  if (!m?.[1]) return null;
  let digits = m[1];
  // German national format: 0151… → 49151… (but 00-prefixed international stays international)
  if (digits.startsWith('00')) digits = digits.slice(2);
  else if (digits.startsWith('0')) digits = `49${digits.slice(1)}`;
  // an international number never starts with 0 (`000491…` left `0491…` after its `00`)
  if (digits.startsWith('0')) return null;
  return digits.length >= 7 && digits.length <= 15 ? digits : null;
}

/**
 * A person's `@c.us` id is their international number, which never starts with 0 (`0491…@c.us` names nobody,
 * and `0` before the own number passed the own-number check); `@lid` and group ids are the network's digits.
 */
const PERSON = String.raw`[1-9]\d{4,19}@c\.us|\d{5,24}@lid`;
/** A group's id: the network's digits (`120363…@g.us`), or an older group's creator and instant (`49151…-1600000000@g.us`). */
const GROUP = String.raw`\d{5,20}(-\d{5,20})?@g\.us`;
export const CHAT_ID = new RegExp(`^(${PERSON}|${GROUP})$`);
export const GROUP_ID = new RegExp(`^${GROUP}$`);
export const CONTACT_ID = new RegExp(`^(${PERSON})$`);

export const isGroupId = (id: string) => id.endsWith('@g.us');

/** The chat id for a phone number. */
export const phoneToChatId = (phone: string) => `${phone}@c.us`;

/** The phone number of a `@c.us` id (null for `@lid` and groups: their phone is not known from the id). */
export function chatIdToPhone(chatId: string): string | null {
  const m = /^(\d+)@c\.us$/.exec(chatId);
  return m?.[1] ?? null;
}

/**
 * Whether the `@c.us` id `chatId` names the number `phone` (international digits), leading zeros of the id
 * aside: such an id was accepted before they were refused (a job waiting since), and the own number written so
 * passed the own-number check at its slot and at a requeue and went out to it (found from the outside).
 */
export function namesPhone(chatId: string, phone: string): boolean {
  return chatIdToPhone(chatId)?.replace(/^0+/, '') === phone;
}

/**
 * Recipient addressing (SPEC.md "Common send request fields", v1 phone rules). Ids are kept as the network
 * gives them (`@c.us`, `@lid`, `@g.us`), never rewritten.
 */

/**
 * The trunk digit written in parentheses after a country code (`+49 (0)176 …`, `0044 (0)20 …`, `49 (0)151 …`):
 * dialled only within the country, never after its code. Kept, it made another number (`490176…`), accepted
 * and sent to nobody; it is dropped as people who write it mean. A country code is one to three digits.
 */
const TRUNK_AFTER_COUNTRY = /^(\s*(?:\+|00)?\s*[1-9]\d{0,2})\s*\(\s*0\s*\)/;

/**
 * International number without `+` (a leading `+` is tolerated), or a German national number starting with 0;
 * spaces, dots, dashes and parentheses are written-out separators, and a `(0)` after a country code is dropped.
 */
export function normalizePhone(input: string): string | null {
  const compact = input.trim().replace(TRUNK_AFTER_COUNTRY, '$1').replace(/[\s()./-]/g, '');
  const m = /^\+?(\d{6,16})$/.exec(compact);
  if (!m?.[1]) return null;
  let digits = m[1];
  // German national format: 0151… → 49151… (but 00-prefixed international stays international)
  if (digits.startsWith('00')) digits = digits.slice(2);
  else if (digits.startsWith('0')) digits = `49${digits.slice(1)}`;
  return digits.length >= 7 && digits.length <= 15 ? digits : null;
}

export const CHAT_ID = /^(\d{5,20}@c\.us|\d{5,24}@lid|\d{5,20}(-\d{5,20})?@g\.us)$/;
export const CONTACT_ID = /^(\d{5,20}@c\.us|\d{5,24}@lid)$/;

export const isGroupId = (id: string) => id.endsWith('@g.us');

/** The chat id for a phone number. */
export const phoneToChatId = (phone: string) => `${phone}@c.us`;

/** The phone number of a `@c.us` id (null for `@lid` and groups: their phone is not known from the id). */
export function chatIdToPhone(chatId: string): string | null {
  const m = /^(\d+)@c\.us$/.exec(chatId);
  return m?.[1] ?? null;
}

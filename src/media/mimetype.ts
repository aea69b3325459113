/**
 * Media types compared as RFC 2045 reads them, not as text: the send routes' rules on a type (a sticker's,
 * a voice note's; src/http/routes/send-payloads.ts) ask what the type is, whatever its spelling.
 */

/** `type/subtype` of a media type, lower-case, without its parameters ("IMAGE/GIF; x=1" → "image/gif"). */
export function mimeEssence(value: string): string {
  return (value.split(';')[0] ?? '').trim().toLowerCase();
}

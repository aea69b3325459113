/**
 * Percent-decoding that answers null where decodeURIComponent throws: a `%` without two hex digits after it, or
 * escapes that spell no UTF-8. One piece for every place that asks whether a client's text decodes, or wants it
 * decoded when it does: a request's path and query (src/http/target.ts), a fetched URL's
 * credentials (src/media/ssrf.ts), a webhook URL's masked parts (src/webhooks/config.ts).
 */
export function percentDecoded(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

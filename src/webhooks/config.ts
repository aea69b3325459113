/**
 * Webhook configuration: one receiver per instance (table `webhooks`). The input schema, the repository,
 * and the small subscription cache that lets `enqueueEvent` skip a round trip for instances that receive
 * nothing.
 *
 * Cache rule (correctness over speed): the cache only ever answers "not subscribed, write nothing". A
 * "subscribed" answer still goes through a conditional INSERT that re-reads `webhooks` in the caller's
 * transaction, so a webhook removed or narrowed (on any node) takes effect at once. Entries expire after
 * CACHE_TTL_MS so that a webhook added on another node is picked up; on this node `putWebhook` /
 * `deleteWebhook` invalidate explicitly.
 */
import { array, boolean, define, object, optional, refine, size, type Infer } from 'superstruct';
import type { Queryable } from '../store/pool.js';
import { chars } from '../characters.js';
import { registerSecret } from '../log.js';
import { percentDecoded } from '../percent.js';
import { DEFAULT_SUBSCRIPTION, isEventName, type Subscription } from './events.js';

export const SECRET_MIN_LENGTH = 16;

const subscriptionName = define<Subscription>('event name', (v) =>
  (typeof v === 'string' && (v === '*' || isEventName(v))) || 'must be * or an event name of docs/webhooks.md (e.g. message, ready, message.sent)');

/** The longest webhook URL, as it is stored and requested (the URL parser's spelling, non-ASCII percent-encoded). */
export const WEBHOOK_URL_MAX_LENGTH = 2048;

// the input may be longer than it is sent (a default port, `./`, blanks the parser drops): measured below as sent
const httpUrl = refine(chars(1, 4 * WEBHOOK_URL_MAX_LENGTH), 'http(s) URL', (v) => {
  try {
    const u = new URL(v);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'must be an http:// or https:// URL';
    // measured as sent: the parser's spelling (non-ASCII percent-encoded), without the fragment, which is never
    // sent. Found from the outside: 2,015 characters of CJK were taken and stored as 18,015 (each one %XX%XX%XX),
    // a request line many servers refuse; and port 0, which no receiver listens on
    const sent = u.href.length - u.hash.length;
    if (sent > WEBHOOK_URL_MAX_LENGTH) return `must be at most ${WEBHOOK_URL_MAX_LENGTH} characters as sent (non-ASCII characters count as their percent-encoded bytes, the fragment not at all): ${sent}`;
    if (u.port === '0') return 'must not name port 0';
    return true;
  } catch {
    return 'must be an absolute http:// or https:// URL';
  }
});

/** Body of `PUT /admin/v1/instances/:id/webhook`. */
export const WebhookInput = object({
  url: httpUrl,
  secret: chars(SECRET_MIN_LENGTH, 512),
  events: optional(size(array(subscriptionName), 1, 100)),
  allowPrivate: optional(boolean()),
  enabled: optional(boolean()),
});
export type WebhookInput = Infer<typeof WebhookInput>;

/** A stored webhook, secret included: only the sender and signing code may see this. */
export interface WebhookConfig {
  instanceId: string;
  url: string;
  secret: string;
  events: string[];
  allowPrivate: boolean;
  enabled: boolean;
  updatedAt: Date;
}

/** What the operator API shows: never the secret, and the URL as maskWebhookUrl shows it. */
export interface WebhookView {
  url: string;
  events: string[];
  allowPrivate: boolean;
  enabled: boolean;
}

export function toView(c: WebhookConfig): WebhookView {
  return { url: maskWebhookUrl(c.url), events: c.events, allowPrivate: c.allowPrivate, enabled: c.enabled };
}

/** What stands for a masked part of a webhook URL. */
const URL_MASK = '***';

/** The shortest path segment pathToken takes for a token: longer than the words and ids of a path. */
const TOKEN_MIN_LENGTH = 16;
/** What a token in a path is written with: letters, digits and `-._~:=+` (base64, base64url, hex, UUIDs, JWTs). */
const TOKEN_CHARACTERS = /^[A-Za-z0-9._~:=+-]+$/;
const CHARACTER_CLASSES = [/[a-z]/, /[A-Z]/, /[0-9]/];

/**
 * Receivers whose token is at a known place of the path, masked there whatever it looks like: the host, and the
 * segments before the token (null for any; an empty one, of a doubled slash, does not count: the receivers read
 * none there; Discord's API version may come before `webhooks`). Zapier's
 * `https://hooks.zapier.com/hooks/catch/<account>/<token>/` has a token of 6 or 7 lower-case letters and digits,
 * sometimes letters only, which no rule tells from a word;
 * Slack's and Discord's would pass the rule of pathToken but for a token drawn of one kind of character by chance
 * (Slack's documented placeholder, `XXXXXXXXXXXXXXXXXXXXXXXX`, is one).
 */
const TOKEN_PLACES: readonly { host: string; before: readonly (string | RegExp | null)[] }[] = [
  { host: 'hooks.slack.com', before: ['services', null, null] },
  { host: 'discord.com', before: ['api', 'webhooks', null] },
  { host: 'discord.com', before: ['api', /^v\d+$/, 'webhooks', null] },
  { host: 'discordapp.com', before: ['api', 'webhooks', null] },
  { host: 'discordapp.com', before: ['api', /^v\d+$/, 'webhooks', null] },
  { host: 'hooks.zapier.com', before: ['hooks', 'catch', null] },
];

/**
 * Whether a path segment (the `index`th of the path, the empty one before its first `/` being 0) of a URL to
 * `host` is taken for a credential, shown as URL_MASK. Many receivers carry theirs in the path, not the query:
 * Slack (`/services/T…/B…/<24 letters and digits>`), Discord (`/api/webhooks/<id>/<68 characters>`), Teams'
 * connectors (`/IncomingWebhook/<32 hex digits>/<UUID>`), most "your unique URL" services (`/webhook/<UUID>`).
 *
 * The rule: a segment, percent-decoded, of at least TOKEN_MIN_LENGTH characters, every one of them a token's
 * (TOKEN_CHARACTERS), that draws on at least two of lower-case letters, upper-case letters and digits: what a
 * random token is written with. The words of a path are kept, however long (`/order-created-events`, lower-case
 * only), as are numeric ids (Discord's webhook id, an account number: digits only) and short segments
 * (`/api/v2`, Slack's team and app ids `T0123ABCD`): with the scheme, host and port, they are how an operator
 * recognises the receiver. A UUID is taken for a token on purpose: in a webhook path it is usually the credential
 * itself (the unique URL). What is masked too though not secret (a long CamelCase word, a date with its time, a
 * workflow id beside its `sig=`) costs only that the full URL must be typed again to change the webhook, as for
 * a query credential. The segment is masked whole (nothing of a token helps to recognise it). TOKEN_PLACES adds
 * the place of known receivers' tokens, whatever they look like.
 */
function pathToken(host: string, segments: readonly string[], index: number): boolean {
  const written = segments[index] ?? '';
  const segment = percentDecoded(written) ?? written;
  if (segment === '') return false;
  // the segments before it as the receiver reads them: an empty one (`//`) is no segment to it
  const before = segments.slice(0, index).filter((s) => s !== '');
  const at = (name: string | RegExp | null, i: number) => name === null || (typeof name === 'string' ? before[i] === name : name.test(before[i] ?? ''));
  if (TOKEN_PLACES.some((p) => p.host === host && before.length === p.before.length && p.before.every(at))) return true;
  return segment.length >= TOKEN_MIN_LENGTH && TOKEN_CHARACTERS.test(segment) && CHARACTER_CLASSES.filter((c) => c.test(segment)).length >= 2;
}

/**
 * The places of a webhook URL that may carry a credential, each as written (not decoded): the password, or the user
 * name when there is none (`https://sk_live_…@host/`, a token); a path segment taken for a token (pathToken); each
 * query parameter's value, or the whole parameter when it has no `=` (`?abc`: it may be the token itself); the
 * fragment. maskWebhookUrl shows each as URL_MASK, and holdsMask looks for URL_MASK in them: one list, so that what
 * is masked and what is refused cannot drift apart.
 */
interface CredentialPlaces {
  /** `name` the user name kept beside a password, null for a user name alone; `secret` what is masked */
  userinfo: { name: string | null; secret: string } | null;
  /** the path's segments (the first is the empty one before its first `/`), `token` where pathToken takes one */
  segments: { value: string; token: boolean }[];
  params: { name: string | null; value: string }[];
  fragment: string | null;
}

function credentialPlaces(u: URL): CredentialPlaces {
  const userinfo = u.password ? { name: u.username, secret: u.password } : u.username ? { name: null, secret: u.username } : null;
  const written = u.pathname.split('/');
  // `hooks.slack.com.` is hooks.slack.com to DNS
  const host = u.hostname.replace(/\.+$/, '');
  const segments = written.map((value, i) => ({ value, token: pathToken(host, written, i) }));
  const params = u.search
    ? u.search.slice(1).split('&').map((param) => {
        const eq = param.indexOf('=');
        return eq < 0 ? { name: null, value: param } : { name: param.slice(0, eq), value: param.slice(eq + 1) };
      })
    : [];
  return { userinfo, segments, params, fragment: u.hash ? u.hash.slice(1) : null };
}

/** The URL as the parser reads it, null when it reads none. */
function parsedUrl(url: string): URL | null {
  try {
    return new URL(url);
  } catch {
    return null;
  }
}

/**
 * A webhook URL as it is shown (the operator API, and through it the console and the CLI), never as it is stored
 * or delivered to: a receiver's URL often carries its credential, as a password (`https://user:pw@host/`), as a
 * user name alone (`https://sk_live_…@host/`, a token), as a segment of its path (Slack's, Discord's: pathToken)
 * or in the query string (`?token=…`). The scheme, host, port and the rest of the path are kept, which is how an
 * operator recognises the receiver; every place of `credentialPlaces` is shown as `***` (a query parameter's name
 * kept: `?token=***&v=***`; a path token as a segment of its own: `/services/T0123ABCD/B0123ABCD/***`). A URL
 * that cannot be parsed (none is stored: PUT keeps the parser's reading) is not shown at all.
 */
export function maskWebhookUrl(url: string): string {
  const u = parsedUrl(url);
  if (!u) return URL_MASK;
  const { userinfo, segments, params, fragment } = credentialPlaces(u);
  const user = userinfo === null ? '' : userinfo.name === null ? `${URL_MASK}@` : `${userinfo.name}:${URL_MASK}@`;
  const path = segments.map((s) => (s.token ? URL_MASK : s.value)).join('/');
  // an empty parameter (`?a=1&&b=2`) carries nothing and stays empty
  const query = u.search ? `?${params.map((p) => (p.name !== null ? `${p.name}=${URL_MASK}` : p.value === '' ? '' : URL_MASK)).join('&')}` : '';
  const hash = fragment !== null ? `#${URL_MASK}` : '';
  return `${u.protocol}//${user}${u.host}${path}${query}${hash}`;
}

/**
 * Whether a URL given to PUT holds a part that reads as the mask (`***`, in any spelling the URL parser reads as
 * that: `%2A%2A%2A` too) in one of the places maskWebhookUrl masks (`credentialPlaces`); in the path, any segment
 * (which segment was a token is a property of the URL that was masked, not of the one sent back). Such a URL is
 * one copied from a GET (a read, edit, write round trip); stored, every delivery would carry `***` where the
 * credential was. Found from the outside: a check against the masked form of the stored URL was passed by
 * another letter case, an explicit default port, an edited path or the mask percent-encoded.
 */
export function holdsMask(url: string): boolean {
  const u = parsedUrl(url);
  if (!u) return false;
  const { userinfo, segments, params, fragment } = credentialPlaces(u);
  const isMask = (part: string) => (percentDecoded(part) ?? part) === URL_MASK;
  if (userinfo !== null && isMask(userinfo.secret)) return true;
  if (fragment !== null && isMask(fragment)) return true;
  if (segments.some((s) => isMask(s.value))) return true;
  return params.some((p) => isMask(p.value.replaceAll('+', ' ')));
}

/**
 * The path tokens of a webhook URL (pathToken), as written and percent-decoded: for a text that may hold a piece of
 * the URL rather than all of it (an error's message, src/webhooks/deliver.ts attemptErrorText), to be replaced there.
 */
export function pathTokensOf(url: string): string[] {
  const u = parsedUrl(url);
  if (!u) return [];
  const written = credentialPlaces(u).segments.filter((s) => s.token).map((s) => s.value);
  return [...new Set(written.flatMap((w) => [w, percentDecoded(w) ?? w]))];
}

interface WebhookRow {
  instance_id: string;
  url: string;
  secret: string;
  events: string[];
  allow_private: boolean;
  enabled: boolean;
  updated_at: Date;
}

const fromRow = (r: WebhookRow): WebhookConfig => {
  registerSecret(r.secret);
  return {
    instanceId: r.instance_id,
    url: r.url,
    secret: r.secret,
    events: r.events,
    allowPrivate: r.allow_private,
    enabled: r.enabled,
    updatedAt: r.updated_at,
  };
};

export async function getWebhook(q: Queryable, instanceId: string): Promise<WebhookConfig | null> {
  const { rows } = await q.query<WebhookRow>(
    `SELECT instance_id, url, secret, events, allow_private, enabled, updated_at FROM webhooks WHERE instance_id = $1`,
    [instanceId],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

/** Create or replace the instance's webhook (validated input). Events default to DEFAULT_SUBSCRIPTION. */
export async function putWebhook(q: Queryable, instanceId: string, input: WebhookInput): Promise<WebhookConfig> {
  const { rows } = await q.query<WebhookRow>(
    `INSERT INTO webhooks (instance_id, url, secret, events, allow_private, enabled, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, now())
     ON CONFLICT (instance_id) DO UPDATE SET url = EXCLUDED.url, secret = EXCLUDED.secret, events = EXCLUDED.events,
       allow_private = EXCLUDED.allow_private, enabled = EXCLUDED.enabled, updated_at = now()
     RETURNING instance_id, url, secret, events, allow_private, enabled, updated_at`,
    [
      instanceId,
      input.url,
      input.secret,
      input.events ? [...new Set(input.events)] : [...DEFAULT_SUBSCRIPTION],
      input.allowPrivate ?? false,
      input.enabled ?? true,
    ],
  );
  invalidateWebhookConfig(instanceId);
  const row = rows[0];
  if (!row) throw new Error('webhook upsert returned no row');
  return fromRow(row);
}

/** Remove the webhook. Pending deliveries are then failed by the sender ("webhook removed"). */
export async function deleteWebhook(q: Queryable, instanceId: string): Promise<boolean> {
  const { rowCount } = await q.query('DELETE FROM webhooks WHERE instance_id = $1', [instanceId]);
  invalidateWebhookConfig(instanceId);
  return (rowCount ?? 0) > 0;
}

// ---- subscription cache ---------------------------------------------------------------------------------

export const CACHE_TTL_MS = 2_000;
const CACHE_MAX = 10_000;

interface CacheEntry {
  /** subscribed events of an enabled webhook; null: no webhook or disabled */
  events: readonly string[] | null;
  loadedAt: number;
}
const cache = new Map<string, CacheEntry>();
/** bumped by every invalidation: a read that began before one does not fill the cache (it may be stale) */
let generation = 0;

/** Forget what is cached for one instance (after any change to its webhook), or for all. */
export function invalidateWebhookConfig(instanceId?: string): void {
  generation += 1;
  if (instanceId === undefined) cache.clear();
  else cache.delete(instanceId);
}

/**
 * Subscribed events of the instance's enabled webhook, or null. Served from the cache when fresh;
 * `now` is real time (Date.now()), not the simulated clock: the TTL bounds staleness across nodes.
 */
export async function subscribedEvents(q: Queryable, instanceId: string, now = Date.now()): Promise<readonly string[] | null> {
  return (await subscribedEventsOf(q, [instanceId], now)).get(instanceId) ?? null;
}

/** Entries at least this old are read again with a miss (see subscribedEventsOf), up to REFRESH_MAX of them. */
const REFRESH_AGE_MS = CACHE_TTL_MS / 2;
const REFRESH_MAX = 1_000;

/**
 * The same for many instances: the cache first, one query for all the others. That query also reads again
 * the entries past half their lifetime: without it, the entries of many instances (the node-wide group commit
 * of acceptances spread over 500 of them) expire each at its own moment and cost one query each; read
 * together, they expire together and cost one query per lifetime. The cache is kept in the order entries
 * were read, oldest first.
 */
export async function subscribedEventsOf(q: Queryable, instanceIds: readonly string[], now = Date.now()): Promise<Map<string, readonly string[] | null>> {
  const out = new Map<string, readonly string[] | null>();
  const missing = new Set<string>();
  for (const id of instanceIds) {
    const hit = cache.get(id);
    if (hit && now - hit.loadedAt < CACHE_TTL_MS) out.set(id, hit.events);
    else missing.add(id);
  }
  if (missing.size === 0) return out;
  const read = new Set(missing);
  for (const [id, entry] of cache) {
    if (now - entry.loadedAt < REFRESH_AGE_MS || read.size >= missing.size + REFRESH_MAX) break;
    read.add(id);
  }
  const began = generation;
  const { rows } = await q.query<{ instance_id: string; events: string[]; enabled: boolean }>(
    'SELECT instance_id, events, enabled FROM webhooks WHERE instance_id = ANY ($1::uuid[])',
    [[...read]],
  );
  const found = new Map(rows.map((r) => [r.instance_id, r.enabled ? r.events : null]));
  for (const id of missing) out.set(id, found.get(id) ?? null);
  if (generation !== began) return out;
  for (const id of read) {
    cache.delete(id);
    const oldest = cache.size >= CACHE_MAX ? cache.keys().next().value : undefined;
    if (oldest !== undefined) cache.delete(oldest);
    cache.set(id, { events: found.get(id) ?? null, loadedAt: now });
  }
  return out;
}

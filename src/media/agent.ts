/**
 * Connect-time SSRF enforcement: a `lookup` for net/http/https that resolves through an injectable resolver
 * and refuses the connection when an answer is not public. The addresses handed to the socket are exactly the
 * ones checked, so DNS rebinding (public at acceptance, private at connect) cannot pass.
 *
 * IP literals never reach a lookup (net connects to them directly); callers judge those from the URL first
 * (`checkUrlSyntax` in ssrf.ts).
 */
import { promises as dns } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupAddress, LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { classifyAddress, type AddressClass } from './address.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
/** Name resolution, injectable so tests never touch real DNS. */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

/** How many system lookups run at once: each holds one of libuv's four threads, which the media store's file reads and writes need too. */
export const LOOKUP_CONCURRENCY = 3;
/** How long a name may take to resolve, its wait for a turn included. */
export const LOOKUP_DEADLINE_MS = 5_000;
/** The code of a lookup that did not finish within its deadline. */
export const LOOKUP_TIMEOUT_CODE = 'ETIMEOUT';

/**
 * `lookup` with at most `concurrency` calls running and each answered within `deadlineMs` (its wait for a turn
 * included): a name whose DNS never answers (the client's to choose in a `mediaUrl` or a webhook URL) is refused
 * after the deadline instead of holding its request as long as the system resolver retries, and names that hang
 * cannot take every thread of libuv's pool (`dns.lookup` runs getaddrinfo there), where the media store's file
 * reads and writes wait too. A call past its deadline keeps its turn until its lookup really ends: the thread
 * is busy until then.
 */
export function boundedResolver(lookup: Resolver, opts: { concurrency: number; deadlineMs: number }): Resolver {
  let running = 0;
  const waiting: (() => void)[] = [];
  const release = () => {
    running -= 1;
    const next = waiting.shift();
    if (next) next();
  };
  return (host) =>
    new Promise<ResolvedAddress[]>((resolve, reject) => {
      let settled = false;
      const start = () => {
        if (settled) return release();
        lookup(host).then(
          (answers) => {
            release();
            finish(() => resolve(answers));
          },
          (err: unknown) => {
            release();
            finish(() => reject(err));
          },
        );
      };
      const turn = () => {
        running += 1;
        start();
      };
      const finish = (f: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        f();
      };
      const timer = setTimeout(() => {
        const queued = waiting.indexOf(turn);
        if (queued >= 0) waiting.splice(queued, 1);
        finish(() => reject(Object.assign(new Error(`the name did not resolve within ${opts.deadlineMs} ms`), { code: LOOKUP_TIMEOUT_CODE })));
      }, opts.deadlineMs);
      if (running < opts.concurrency) turn();
      else waiting.push(turn);
    });
}

/** How long a name's answer is used again without asking: a minute, whatever the record's TTL said. */
export const LOOKUP_CACHE_MS = 60_000;
/** The most names whose answers are kept (the oldest goes first). */
export const LOOKUP_CACHE_NAMES = 1_000;

/**
 * `lookup` with the answers it gave kept for `ttlMs` (at most `names` of them, the oldest dropped first): a name
 * that resolved a moment ago (a webhook receiver, a CDN) is answered without waiting for a turn of
 * `boundedResolver`, which names whose DNS hangs (the client's to choose) can hold for a while. Only answers are
 * kept, never failures; the addresses are checked where they are used, as fresh ones are, so a cached public
 * answer is what the socket connects to (no rebinding through the cache).
 */
export function cachedResolver(lookup: Resolver, opts: { ttlMs: number; names: number; now?: () => number }): Resolver {
  const now = opts.now ?? Date.now;
  const kept = new Map<string, { answers: ResolvedAddress[]; until: number }>();
  return async (host) => {
    const key = host.toLowerCase();
    const hit = kept.get(key);
    if (hit && hit.until > now()) return hit.answers;
    kept.delete(key);
    const answers = await lookup(host);
    if (answers.length > 0) {
      if (kept.size >= opts.names) kept.delete(kept.keys().next().value as string);
      kept.set(key, { answers, until: now() + opts.ttlMs });
    }
    return answers;
  };
}

export const systemResolver: Resolver = cachedResolver(boundedResolver(
  async (host) => {
    const answers = await dns.lookup(host, { all: true, verbatim: true });
    return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
  },
  { concurrency: LOOKUP_CONCURRENCY, deadlineMs: LOOKUP_DEADLINE_MS },
), { ttlMs: LOOKUP_CACHE_MS, names: LOOKUP_CACHE_NAMES });

/**
 * What the process uses where a caller injects nothing: the system resolver and no exemptions. Only tests
 * change it (`setNetworkDefaults`), to stand loopback servers in for public hosts and to give names chosen
 * answers without DNS; every path that reaches out on someone's behalf (mediaUrl at acceptance and at
 * dispatch, webhook URLs at PUT and at delivery) reads it, so a whole gateway can be tested as it runs.
 */
interface NetworkDefaults {
  resolver: Resolver;
  allowAddress: ((address: string) => boolean) | null;
}
const defaults: NetworkDefaults = { resolver: systemResolver, allowAddress: null };

/** Replace the process-wide resolver and/or address exemption; returns a function that restores the previous ones. */
export function setNetworkDefaults(next: { resolver?: Resolver; allowAddress?: ((address: string) => boolean) | null }): () => void {
  const previous = { ...defaults };
  if (next.resolver) defaults.resolver = next.resolver;
  if (next.allowAddress !== undefined) defaults.allowAddress = next.allowAddress;
  return () => Object.assign(defaults, previous);
}

/** The resolver a caller injected, else the process default. */
export const resolverOf = (injected: Resolver | undefined): Resolver => injected ?? defaults.resolver;

export interface AddressPolicy {
  /** operator setting (e.g. WEBHOOK_ALLOW_PRIVATE): skip the address checks, keep the scheme check */
  allowPrivate?: boolean;
  /** exempt individual addresses (tests reaching a loopback server that stands in for a public one) */
  allowAddress?: (address: string) => boolean;
}

/** The verdict on one address under a policy: null when it may be reached, else its class. */
export function refusalOf(address: string, policy: AddressPolicy): AddressClass | null {
  if (policy.allowPrivate || (policy.allowAddress ?? defaults.allowAddress)?.(address)) return null;
  const c = classifyAddress(address);
  return c.public ? null : c;
}

export const describeClass = (c: AddressClass): string => (c.via ? `${c.kind} via ${c.via}` : c.kind);

export const SSRF_REFUSED_CODE = 'ERR_MGW_SSRF_REFUSED';

/** The error a checked lookup hands to net; recognised downstream by `code`. */
export class SsrfRefusedError extends Error {
  readonly code = SSRF_REFUSED_CODE;
  constructor(readonly addressClass: AddressClass) {
    super(`refused to connect to a non-public address (${describeClass(addressClass)})`);
    this.name = 'SsrfRefusedError';
  }
}

export interface CheckedLookupOptions extends AddressPolicy {
  resolver?: Resolver;
  /** told about every refusal, so a caller can name the kind of address in its own error */
  onRefused?: (c: AddressClass) => void;
}

function wantedFamily(family: LookupOptions['family']): 0 | 4 | 6 {
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
}

/**
 * Refuses the connection if ANY answer is non-public: a mixed answer is how rebinding hides a private address
 * behind a public one. Serves both call styles of net.connect (`all: true` with happy eyeballs, one address
 * without).
 */
export function createCheckedLookup(opts: CheckedLookupOptions = {}): LookupFunction {
  return (hostname, options, callback) => {
    const wanted = wantedFamily(options.family);
    resolverOf(opts.resolver)(hostname).then(
      (answers) => {
        for (const a of answers) {
          const refused = refusalOf(a.address, opts);
          if (refused) {
            opts.onRefused?.(refused);
            callback(new SsrfRefusedError(refused), []);
            return;
          }
        }
        const usable: LookupAddress[] = answers
          .filter((a) => wanted === 0 || a.family === wanted)
          .map((a) => ({ address: a.address, family: a.family }));
        const first = usable[0];
        if (!first) {
          callback(Object.assign(new Error('host has no usable address'), { code: 'ENOTFOUND' }), []);
        } else if (options.all) {
          callback(null, usable);
        } else {
          callback(null, first.address, first.family);
        }
      },
      (err: unknown) => {
        const e: NodeJS.ErrnoException = err instanceof Error ? err : new Error('lookup failed');
        e.code ??= 'ENOTFOUND';
        callback(e, []);
      },
    );
  };
}

export interface SafeAgentOptions extends CheckedLookupOptions {
  /** default true: webhook delivery reuses connections */
  keepAlive?: boolean;
}

export interface SafeAgent {
  http: http.Agent;
  https: https.Agent;
  /** the agent for a URL, e.g. node-fetch's `agent: (url) => safe.forUrl(url)` */
  forUrl(url: URL): http.Agent;
  destroy(): void;
}

/** http and https agents whose every new connection goes through the checked lookup. */
export function createSafeAgent(opts: SafeAgentOptions = {}): SafeAgent {
  const lookup = createCheckedLookup(opts);
  const keepAlive = opts.keepAlive ?? true;
  const httpAgent = new http.Agent({ keepAlive, lookup });
  const httpsAgent = new https.Agent({ keepAlive, lookup });
  return {
    http: httpAgent,
    https: httpsAgent,
    forUrl: (url) => (url.protocol === 'https:' ? httpsAgent : httpAgent),
    destroy() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}

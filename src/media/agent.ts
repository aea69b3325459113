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

export const systemResolver: Resolver = async (host) => {
  const answers = await dns.lookup(host, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

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

/**
 * IP address classification for SSRF defence: is this address one that a fetch on a caller's behalf may reach?
 *
 * Only canonical textual forms are accepted (dotted-decimal IPv4, RFC 4291 IPv6). Odd IPv4 spellings in URLs
 * (2130706433, 0x7f.0.0.1, 0177.0.0.1, 127.1) are normalised by WHATWG URL parsing before they get here; a
 * string this module cannot parse is classified `invalid` and therefore refused, never guessed at.
 *
 * Ranges follow the IANA IPv4/IPv6 special-purpose registries. IPv6 is public only inside global unicast
 * 2000::/3 and outside its special blocks. Addresses that embed an IPv4 address are judged by what they embed:
 * NAT64 (64:ff9b::/96) and 6to4 (2002::/16) pass only with a public IPv4 inside; IPv4-mapped and
 * IPv4-compatible forms are refused outright (they exist to reach IPv4 sockets through IPv6 APIs).
 */
import { isIPv4, isIPv6 } from 'node:net';

export type AddressKind =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'cgnat'
  | 'link-local'
  | 'metadata'
  | 'unique-local'
  | 'site-local'
  | 'multicast'
  | 'broadcast'
  | 'documentation'
  | 'benchmarking'
  | 'reserved'
  | 'ipv4-mapped'
  | 'ipv4-compatible'
  | 'teredo'
  | 'invalid';

export interface AddressClass {
  kind: AddressKind;
  public: boolean;
  family: 4 | 6 | null;
  /** set when the verdict comes from an IPv4 address embedded in an IPv6 one */
  via?: 'ipv4-mapped' | 'ipv4-compatible' | 'nat64' | '6to4';
}

type Range = readonly [bytes: readonly number[], prefixLength: number, kind: AddressKind];

// Most specific first: the first match wins.
const V4_RANGES: readonly Range[] = [
  [[169, 254, 169, 254], 32, 'metadata'], // AWS, GCP, Azure IMDS, OpenStack
  [[168, 63, 129, 16], 32, 'metadata'], // Azure wireserver
  [[100, 100, 100, 200], 32, 'metadata'], // Alibaba Cloud
  [[192, 0, 0, 192], 32, 'metadata'], // Oracle Cloud
  [[255, 255, 255, 255], 32, 'broadcast'],
  [[0, 0, 0, 0], 8, 'unspecified'],
  [[10, 0, 0, 0], 8, 'private'],
  [[100, 64, 0, 0], 10, 'cgnat'],
  [[127, 0, 0, 0], 8, 'loopback'],
  [[169, 254, 0, 0], 16, 'link-local'],
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 0, 0, 0], 24, 'reserved'], // IETF protocol assignments
  [[192, 0, 2, 0], 24, 'documentation'],
  [[192, 88, 99, 0], 24, 'reserved'], // deprecated 6to4 relay anycast
  [[192, 168, 0, 0], 16, 'private'],
  [[198, 18, 0, 0], 15, 'benchmarking'],
  [[198, 51, 100, 0], 24, 'documentation'],
  [[203, 0, 113, 0], 24, 'documentation'],
  [[224, 0, 0, 0], 4, 'multicast'],
  [[240, 0, 0, 0], 4, 'reserved'],
];

const V6_RANGES: readonly Range[] = [
  [[], 128, 'unspecified'], // ::
  [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 128, 'loopback'], // ::1
  [[0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54], 128, 'metadata'], // fd00:ec2::254 (AWS IMDS)
  [[0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48, 'reserved'], // 64:ff9b:1::/48 local-use NAT64
  [[0x01, 0x00, 0, 0, 0, 0, 0, 0], 64, 'reserved'], // 100::/64 discard-only
  [[0x20, 0x01, 0x00, 0x00], 32, 'teredo'], // 2001::/32
  [[0x20, 0x01, 0x0d, 0xb8], 32, 'documentation'], // 2001:db8::/32
  [[0x20, 0x01, 0x00], 23, 'reserved'], // 2001::/23 IETF protocol assignments (ORCHID, benchmarking, ...)
  [[0x3f, 0xff], 20, 'documentation'], // 3fff::/20
  [[0xfc], 7, 'unique-local'],
  [[0xfe, 0x80], 10, 'link-local'],
  [[0xfe, 0xc0], 10, 'site-local'],
  [[0xff], 8, 'multicast'],
];

const GLOBAL_UNICAST: Range = [[0x20], 3, 'public'];

function matches(addr: Uint8Array, [bytes, prefixLength]: Range): boolean {
  for (let bit = 0; bit < prefixLength; bit++) {
    const i = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    if (((addr[i] ?? 0) & mask) !== ((bytes[i] ?? 0) & mask)) return false;
  }
  return true;
}

function firstMatch(addr: Uint8Array, ranges: readonly Range[]): AddressKind | null {
  for (const r of ranges) if (matches(addr, r)) return r[2];
  return null;
}

/** Strict dotted-decimal IPv4 (no octal, hex or short forms) → 4 bytes, or null. */
export function parseIPv4(text: string): Uint8Array | null {
  if (!isIPv4(text)) return null;
  const parts = text.split('.');
  if (parts.length !== 4 || parts.some((p) => p.length > 1 && p.startsWith('0'))) return null;
  return Uint8Array.from(parts.map(Number));
}

/** RFC 4291 IPv6 text (optionally bracketed, optionally with a zone id) → 16 bytes, or null. */
export function parseIPv6(text: string): Uint8Array | null {
  let s = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const zone = s.indexOf('%');
  if (zone !== -1) s = s.slice(0, zone);
  if (!isIPv6(s)) return null;

  const groups: number[] = [];
  const pushGroups = (part: string): boolean => {
    if (part === '') return true;
    for (const g of part.split(':')) {
      if (g.includes('.')) {
        const v4 = parseIPv4(g);
        if (!v4) return false;
        groups.push(((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0));
      } else {
        groups.push(parseInt(g, 16));
      }
    }
    return true;
  };

  const gap = s.indexOf('::');
  let head: number[] = [];
  if (gap !== -1) {
    if (!pushGroups(s.slice(0, gap))) return null;
    head = groups.splice(0);
    if (!pushGroups(s.slice(gap + 2))) return null;
    const fill = 8 - head.length - groups.length;
    if (fill < 0) return null;
    groups.unshift(...head, ...new Array<number>(fill).fill(0));
  } else if (!pushGroups(s)) {
    return null;
  }
  if (groups.length !== 8) return null;

  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    out[2 * i] = g >> 8;
    out[2 * i + 1] = g & 0xff;
  });
  return out;
}

function classifyV4Bytes(b: Uint8Array): AddressClass {
  const kind = firstMatch(b, V4_RANGES) ?? 'public';
  return { kind, public: kind === 'public', family: 4 };
}

function embeddedV4(b: Uint8Array, offset: number): AddressClass {
  return classifyV4Bytes(b.subarray(offset, offset + 4));
}

const allZero = (b: Uint8Array, from: number, to: number) => b.subarray(from, to).every((x) => x === 0);

function classifyV6Bytes(b: Uint8Array): AddressClass {
  const special = firstMatch(b, V6_RANGES);
  if (special) return { kind: special, public: false, family: 6 };

  // ::ffff:a.b.c.d, mapped: refused whatever it embeds
  if (allZero(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) {
    const inner = embeddedV4(b, 12);
    return { kind: inner.public ? 'ipv4-mapped' : inner.kind, public: false, family: 6, via: 'ipv4-mapped' };
  }
  // ::a.b.c.d, deprecated IPv4-compatible: refused whatever it embeds
  if (allZero(b, 0, 12)) {
    const inner = embeddedV4(b, 12);
    return { kind: inner.public ? 'ipv4-compatible' : inner.kind, public: false, family: 6, via: 'ipv4-compatible' };
  }
  // 64:ff9b::/96 well-known NAT64 prefix: the gateway translates to the embedded IPv4
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && allZero(b, 4, 12)) {
    const inner = embeddedV4(b, 12);
    return { kind: inner.kind, public: inner.public, family: 6, via: 'nat64' };
  }
  // 2002:a.b.c.d::/48 6to4: the relay forwards to the embedded IPv4
  if (b[0] === 0x20 && b[1] === 0x02) {
    const inner = embeddedV4(b, 2);
    return { kind: inner.kind, public: inner.public, family: 6, via: '6to4' };
  }
  if (matches(b, GLOBAL_UNICAST)) return { kind: 'public', public: true, family: 6 };
  return { kind: 'reserved', public: false, family: 6 };
}

/** Classify an IP address given as text. Anything unparseable is `invalid` (not public). */
export function classifyAddress(address: string): AddressClass {
  const v4 = parseIPv4(address);
  if (v4) return classifyV4Bytes(v4);
  const v6 = parseIPv6(address);
  if (v6) return classifyV6Bytes(v6);
  return { kind: 'invalid', public: false, family: null };
}

export const isPublicAddress = (address: string): boolean => classifyAddress(address).public;

/** A URL host (`url.hostname`) without IPv6 brackets, or null when it is a name rather than an IP literal. */
export function ipLiteralOf(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIPv4(bare) || isIPv6(bare) ? bare : null;
}

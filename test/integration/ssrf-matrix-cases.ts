/**
 * The URLs of the SSRF matrix (ssrf-matrix.test.ts). `{port}` is the loopback canary's port: a URL that got
 * through would connect to it. Names are answered by the test's resolver (`nameAnswers`), never by DNS.
 */
import type { ResolvedAddress } from '../../src/media/ssrf.js';

export interface Case {
  label: string;
  url: string;
  /** what the name resolves to on the server side: must never appear in an answer */
  resolvesTo?: string[];
}

const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });

/** Names and what the test resolver answers for them (anything else does not resolve). */
export const nameAnswers: Record<string, ResolvedAddress[]> = {
  'media.test': [v4('127.0.0.2')], // the designated public stand-in
  'localtest.me': [v4('127.0.0.1')],
  'loopback.test': [v4('127.0.0.1')],
  'v6loop.test': [v6('::1')],
  'mapped.test': [v6('::ffff:127.0.0.1')],
  'unspecified.test': [v4('0.0.0.0')],
  'ten.test': [v4('10.1.2.3')],
  'rfc1918.test': [v4('192.168.7.7')],
  'cgnat.test': [v4('100.64.9.9')],
  'metadata.test': [v4('169.254.169.254')],
  'ula.test': [v6('fd12:3456::1')],
  'linklocal6.test': [v6('fe80::1')],
  'nat64.test': [v6('64:ff9b::7f00:1')],
  // a public-looking answer with a private one beside it: all answers must be public
  'mixed.test': [v4('127.0.0.2'), v4('127.0.0.1')],
};

const name = (host: string, label: string): Case => ({
  label,
  url: `http://${host}:{port}/a.png`,
  resolvesTo: (nameAnswers[host] ?? []).map((a) => a.address).filter((a) => a !== '127.0.0.2'),
});

export const loopbackSpellings: Case[] = [
  { label: 'loopback 127.0.0.1', url: 'http://127.0.0.1:{port}/a.png' },
  { label: 'short form 127.1', url: 'http://127.1:{port}/a.png' },
  { label: 'hex 0x7f.1', url: 'http://0x7f.1:{port}/a.png' },
  { label: 'hex 0x7f000001', url: 'http://0x7f000001:{port}/a.png' },
  { label: 'decimal 2130706433', url: 'http://2130706433:{port}/a.png' },
  { label: 'octal 017700000001', url: 'http://017700000001:{port}/a.png' },
  { label: 'octal dotted 0177.0.0.1', url: 'http://0177.0.0.1:{port}/a.png' },
  { label: 'other loopback 127.9.8.7', url: 'http://127.9.8.7:{port}/a.png' },
  { label: 'trailing dot 127.0.0.1.', url: 'http://127.0.0.1.:{port}/a.png' },
  { label: 'percent-encoded host', url: 'http://%31%32%37.0.0.1:{port}/a.png' },
  { label: 'fullwidth dots', url: 'http://127\u30020\u30020\u30021:{port}/a.png' },
  { label: 'unspecified 0.0.0.0', url: 'http://0.0.0.0:{port}/a.png' },
  { label: 'unspecified 0', url: 'http://0:{port}/a.png' },
  { label: 'IPv6 loopback [::1]', url: 'http://[::1]:{port}/a.png' },
  { label: 'IPv6 loopback long form', url: 'http://[0:0:0:0:0:0:0:1]:{port}/a.png' },
  { label: 'IPv6 unspecified [::]', url: 'http://[::]:{port}/a.png' },
  { label: 'IPv4-mapped dotted', url: 'http://[::ffff:127.0.0.1]:{port}/a.png' },
  { label: 'IPv4-mapped hex', url: 'http://[::ffff:7f00:1]:{port}/a.png' },
  { label: 'IPv4-compatible', url: 'http://[::127.0.0.1]:{port}/a.png' },
  { label: 'NAT64 of loopback', url: 'http://[64:ff9b::127.0.0.1]:{port}/a.png' },
  { label: '6to4 of loopback', url: 'http://[2002:7f00:1::]:{port}/a.png' },
  { label: 'localhost', url: 'http://localhost:{port}/a.png' },
  { label: 'localhost.', url: 'http://localhost.:{port}/a.png' },
  { label: 'LOCALHOST', url: 'http://LOCALHOST:{port}/a.png' },
  { label: 'sub.localhost', url: 'http://app.localhost:{port}/a.png' },
  { label: 'localhost..', url: 'http://localhost..:{port}/a.png' },
  { label: 'userinfo trick public@127.0.0.1', url: 'http://media.test@127.0.0.1:{port}/a.png' },
  { label: 'userinfo with password', url: 'http://user:pw@[::1]:{port}/a.png' },
  { label: 'backslash host', url: 'http:\\\\127.0.0.1:{port}/a.png' },
  name('localtest.me', 'localtest.me resolving to loopback'),
  name('loopback.test', 'a name resolving to 127.0.0.1'),
  name('v6loop.test', 'a name resolving to ::1'),
  name('mapped.test', 'a name resolving to ::ffff:127.0.0.1'),
  name('unspecified.test', 'a name resolving to 0.0.0.0'),
  name('nat64.test', 'a name resolving to NAT64 of loopback'),
  name('mixed.test', 'a name resolving to a public and a loopback address'),
];

export const privateTargets: Case[] = [
  { label: '10/8', url: 'http://10.0.0.1:{port}/a.png' },
  { label: '172.16/12 low', url: 'http://172.16.0.1:{port}/a.png' },
  { label: '172.16/12 high', url: 'http://172.31.255.254:{port}/a.png' },
  { label: '192.168/16', url: 'http://192.168.1.1:{port}/a.png' },
  { label: '100.64/10 CGNAT', url: 'http://100.64.0.1:{port}/a.png' },
  { label: 'link-local 169.254/16', url: 'http://169.254.1.1:{port}/a.png' },
  { label: 'metadata 169.254.169.254', url: 'http://169.254.169.254/latest/meta-data/' },
  { label: 'metadata decimal', url: 'http://2852039166/latest/meta-data/' },
  { label: 'metadata IPv4-mapped', url: 'http://[::ffff:169.254.169.254]/latest/meta-data/' },
  { label: 'metadata AWS IPv6', url: 'http://[fd00:ec2::254]/latest/meta-data/' },
  { label: 'link-local fe80::/10', url: 'http://[fe80::1]:{port}/a.png' },
  { label: 'unique-local fc00::/7', url: 'http://[fc00::1]:{port}/a.png' },
  { label: 'unique-local fd00::', url: 'http://[fd12:3456::1]:{port}/a.png' },
  { label: 'site-local fec0::/10', url: 'http://[fec0::1]:{port}/a.png' },
  { label: 'multicast 224/4', url: 'http://224.0.0.1:{port}/a.png' },
  { label: 'multicast ff02::1', url: 'http://[ff02::1]:{port}/a.png' },
  { label: 'broadcast', url: 'http://255.255.255.255:{port}/a.png' },
  { label: 'reserved 240/4', url: 'http://240.0.0.1:{port}/a.png' },
  { label: 'IPv4-mapped private', url: 'http://[::ffff:10.0.0.1]:{port}/a.png' },
  { label: 'IPv4-compatible private', url: 'http://[::10.0.0.1]:{port}/a.png' },
  { label: 'NAT64 of private', url: 'http://[64:ff9b::10.0.0.1]:{port}/a.png' },
  { label: 'NAT64 local-use prefix', url: 'http://[64:ff9b:1::808:808]:{port}/a.png' },
  { label: 'hex private 0xa000001', url: 'http://0xa000001:{port}/a.png' },
  { label: 'octal private 012.0.0.1', url: 'http://012.0.0.1:{port}/a.png' },
  name('ten.test', 'a name resolving to 10/8'),
  name('rfc1918.test', 'a name resolving to 192.168/16'),
  name('cgnat.test', 'a name resolving to CGNAT'),
  name('metadata.test', 'a name resolving to the metadata address'),
  name('ula.test', 'a name resolving to fc00::/7'),
  name('linklocal6.test', 'a name resolving to fe80::/10'),
  { label: 'a name that does not resolve', url: 'http://nowhere.invalid:{port}/a.png' },
];

export const refusedSchemes: Case[] = [
  { label: 'file:', url: 'file:///etc/passwd' },
  { label: 'file: with host', url: 'file://127.0.0.1/etc/passwd' },
  { label: 'ftp:', url: 'ftp://127.0.0.1:{port}/a.png' },
  { label: 'gopher:', url: 'gopher://127.0.0.1:{port}/_GET' },
  { label: 'data:', url: 'data:image/png;base64,UE5HIQ==' },
  { label: 'javascript:', url: 'javascript:alert(1)' },
  { label: 'ws:', url: 'ws://127.0.0.1:{port}/' },
  { label: 'no scheme', url: '//127.0.0.1:{port}/a.png' },
];

/**
 * Paths of the public stand-in (ssrf-matrix-standin.ts) that the acceptance probe refuses: the rule as the
 * answer words it, what `data` must hold, and exactly the requests the stand-in sees (HEAD first; a GET only
 * when the HEAD answered 4xx/5xx).
 */
export interface ProbeRefusal {
  label: string;
  path: string;
  rule: RegExp;
  data?: Record<string, unknown>;
  requests: string[];
}

export const probeRefusals: ProbeRefusal[] = [
  {
    label: 'more than 3 redirect hops: the 5th URL is never requested',
    path: '/hop/4',
    rule: /^mediaUrl redirects more than 3 times$/,
    data: { reason: 'too_many_redirects' },
    requests: ['HEAD /hop/4', 'HEAD /hop/3', 'HEAD /hop/2', 'HEAD /hop/1'],
  },
  {
    label: 'a declared Content-Length above 16 MiB: refused on the HEAD, nothing read',
    path: '/declared-17mib',
    rule: /^mediaUrl response exceeds 16777216 bytes \(Content-Length: 17825792\)$/,
    data: { reason: 'too_large', maxBytes: 16 * 1024 * 1024 },
    requests: ['HEAD /declared-17mib'],
  },
  {
    label: 'an error answer names its status (HEAD, then the GET verdict)',
    path: '/missing',
    rule: /^mediaUrl answered HTTP 404$/,
    data: { reason: 'http_status', status: 404 },
    requests: ['HEAD /missing', 'GET /missing'],
  },
  {
    label: 'a small Content-Length beside chunked framing (smuggling): not valid HTTP',
    path: '/length-and-chunked',
    rule: /^mediaUrl could not be reached: the answer is not valid HTTP \(HPE_[A-Z_]+\)$/,
    data: { reason: 'unreachable' },
    requests: ['HEAD /length-and-chunked'],
  },
  {
    label: 'two different Content-Lengths: not valid HTTP',
    path: '/two-lengths',
    rule: /^mediaUrl could not be reached: the answer is not valid HTTP \(HPE_[A-Z_]+\)$/,
    data: { reason: 'unreachable' },
    requests: ['HEAD /two-lengths'],
  },
];

/**
 * SSRF, without sockets: address classification and the acceptance-time URL check. Names resolve through an
 * injected resolver that answers PUBLIC for every name it does not know, so a refusal here can only come
 * from the address or the URL itself, never from a failed lookup.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyAddress, parseIPv6 } from '../../src/media/address.js';
import { assertPublicUrl, checkUrlSyntax, type Resolver } from '../../src/media/ssrf.js';
import { DomainError } from '../../src/errors.js';

const PUBLIC_V4 = '93.184.216.34';

function resolverFrom(table: Record<string, string[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const fn = async (host: string) => {
    calls.push(host);
    const answers = table[host] ?? [PUBLIC_V4];
    return answers.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));
  };
  return Object.assign(fn, { calls });
}

async function refused(url: string, resolver: Resolver, field = 'mediaUrl'): Promise<DomainError> {
  try {
    await assertPublicUrl(url, { resolver, field });
  } catch (err) {
    assert.ok(err instanceof DomainError, `expected DomainError for ${url}, got ${String(err)}`);
    assert.equal(err.status, 400);
    assert.equal(err.code, 'VALIDATION_FAILED');
    assert.equal(err.data.field, field);
    return err;
  }
  assert.fail(`${url} was accepted`);
}

describe('classifyAddress', () => {
  const cases: [string, string, boolean][] = [
    ['8.8.8.8', 'public', true],
    ['93.184.216.34', 'public', true],
    ['127.0.0.1', 'loopback', false],
    ['127.255.255.254', 'loopback', false],
    ['10.0.0.1', 'private', false],
    ['172.16.0.1', 'private', false],
    ['172.31.255.255', 'private', false],
    ['172.32.0.1', 'public', true],
    ['192.168.0.1', 'private', false],
    ['169.254.169.254', 'metadata', false],
    ['169.254.10.10', 'link-local', false],
    ['100.64.0.1', 'cgnat', false],
    ['100.127.255.255', 'cgnat', false],
    ['0.0.0.0', 'unspecified', false],
    ['0.1.2.3', 'unspecified', false],
    ['255.255.255.255', 'broadcast', false],
    ['224.0.0.251', 'multicast', false],
    ['240.0.0.1', 'reserved', false],
    ['198.18.0.1', 'benchmarking', false],
    ['192.0.2.1', 'documentation', false],
    ['::1', 'loopback', false],
    ['::', 'unspecified', false],
    ['fe80::1', 'link-local', false],
    ['fe80::1%eth0', 'link-local', false],
    ['fd00::1', 'unique-local', false],
    ['fc00::1', 'unique-local', false],
    ['fd00:ec2::254', 'metadata', false],
    ['ff02::1', 'multicast', false],
    ['::ffff:127.0.0.1', 'loopback', false],
    ['::ffff:7f00:1', 'loopback', false],
    ['::ffff:8.8.8.8', 'ipv4-mapped', false],
    ['::127.0.0.1', 'loopback', false],
    ['64:ff9b::7f00:1', 'loopback', false],
    ['64:ff9b::10.1.1.1', 'private', false],
    ['64:ff9b::8.8.8.8', 'public', true],
    ['2002:7f00:1::1', 'loopback', false],
    ['2002:c0a8:101::1', 'private', false],
    ['2002:808:808::1', 'public', true],
    ['2001:db8::1', 'documentation', false],
    ['2001:0::1', 'teredo', false],
    ['2606:4700:4700::1111', 'public', true],
    ['2a00:1450:4001::200e', 'public', true],
    ['5f00::1', 'reserved', false],
    // non-canonical spellings are never guessed at
    ['0177.0.0.1', 'invalid', false],
    ['127.1', 'invalid', false],
    ['2130706433', 'invalid', false],
    ['localhost', 'invalid', false],
  ];
  for (const [address, kind, isPublic] of cases) {
    test(`${address} is ${kind}`, () => {
      const c = classifyAddress(address);
      assert.equal(c.kind, kind);
      assert.equal(c.public, isPublic);
    });
  }

  test('IPv6 text forms parse to the same bytes', () => {
    assert.deepEqual(parseIPv6('::ffff:127.0.0.1'), parseIPv6('0:0:0:0:0:ffff:7f00:0001'));
    assert.deepEqual(parseIPv6('[::1]'), parseIPv6('0::0:1'));
    assert.equal(parseIPv6('1::2::3'), null);
  });
});

describe('assertPublicUrl: the SSRF matrix at acceptance', () => {
  const resolver = resolverFrom({
    'loopback.example': ['127.0.0.1'],
    'v6loop.example': ['::1'],
    'mixed.example': [PUBLIC_V4, '10.0.0.7'],
    'metadata.example': ['169.254.169.254'],
    'nothing.example': [],
  });

  const matrix: [label: string, url: string, reason: string][] = [
    ['127.0.0.1', 'http://127.0.0.1/x', 'loopback'],
    ['localhost', 'http://localhost:8080/x', 'loopback'],
    ['localhost with trailing dot', 'http://LOCALHOST./x', 'loopback'],
    ['a .localhost name', 'http://api.localhost/x', 'loopback'],
    ['::1', 'http://[::1]/x', 'loopback'],
    ['10/8', 'http://10.1.2.3/x', 'private'],
    ['172.16/12', 'http://172.20.0.5/x', 'private'],
    ['192.168/16', 'https://192.168.1.1/x', 'private'],
    ['169.254.169.254', 'http://169.254.169.254/latest/meta-data/', 'metadata'],
    ['fd00::/8', 'http://[fd00::1234]/x', 'unique-local'],
    ['fd00:ec2::254', 'http://[fd00:ec2::254]/x', 'metadata'],
    ['fe80::/10', 'http://[fe80::1]/x', 'link-local'],
    ['::ffff:127.0.0.1', 'http://[::ffff:127.0.0.1]/x', 'loopback'],
    ['::ffff:7f00:1', 'http://[::ffff:7f00:1]/x', 'loopback'],
    ['NAT64 of loopback', 'http://[64:ff9b::127.0.0.1]/x', 'loopback'],
    ['6to4 of 192.168.1.1', 'http://[2002:c0a8:101::1]/x', 'private'],
    ['2130706433', 'http://2130706433/x', 'loopback'],
    ['0x7f.0.0.1', 'http://0x7f.0.0.1/x', 'loopback'],
    ['0177.0.0.1', 'http://0177.0.0.1/x', 'loopback'],
    ['127.1', 'http://127.1/x', 'loopback'],
    ['percent-encoded 127.0.0.1', 'http://%31%32%37.0.0.1/x', 'loopback'],
    ['0.0.0.0', 'http://0.0.0.0/x', 'unspecified'],
    ['100.64/10', 'http://100.64.1.1/x', 'cgnat'],
    ['a DNS name resolving to loopback', 'http://loopback.example/x', 'loopback'],
    ['a DNS name resolving to ::1', 'http://v6loop.example/x', 'loopback'],
    ['a DNS name with one private answer among public ones', 'http://mixed.example/x', 'private'],
    ['a DNS name resolving to the metadata address', 'http://metadata.example/x', 'metadata'],
    ['a name that does not resolve', 'http://nothing.example/x', 'unresolvable'],
    ['file:', 'file:///etc/passwd', 'scheme'],
    ['gopher:', 'gopher://example.com:70/_GET', 'scheme'],
    ['ftp:', 'ftp://example.com/a.png', 'scheme'],
    ['data:', 'data:image/png;base64,AAAA', 'scheme'],
    ['not a URL', 'not a url', 'invalid_url'],
    ['localhost with two trailing dots', 'http://localhost../x', 'loopback'],
    ['an empty label inside the host', 'http://loopback..example/x', 'invalid_url'],
  ];
  for (const [label, url, reason] of matrix) {
    test(`refuses ${label}`, async () => {
      const err = await refused(url, resolver);
      assert.equal(err.data.reason, reason);
    });
  }

  test('accepts a public name and a public literal', async () => {
    assert.equal((await assertPublicUrl('https://cdn.example.com/a.png', { resolver })).hostname, 'cdn.example.com');
    assert.equal((await assertPublicUrl('http://93.184.216.34/a.png', { resolver })).hostname, '93.184.216.34');
    assert.equal((await assertPublicUrl('http://[2606:4700::1111]/a.png', { resolver })).hostname, '[2606:4700::1111]');
  });

  test('IP literals are judged without asking the resolver', async () => {
    const r = resolverFrom({});
    await refused('http://127.0.0.1/', r);
    await assertPublicUrl('http://8.8.8.8/', { resolver: r });
    assert.deepEqual(r.calls, []);
  });

  test('the field name is a parameter (webhooks use `url`)', async () => {
    const err = await refused('http://10.0.0.1/hook', resolver, 'url');
    assert.match(err.message, /^url /);
  });

  test('allowPrivate (operator setting) skips address checks but never the scheme check', async () => {
    await assertPublicUrl('http://127.0.0.1:9/hook', { resolver, allowPrivate: true, field: 'url' });
    await assertPublicUrl('http://localhost:9/hook', { resolver, allowPrivate: true, field: 'url' });
    await assert.rejects(assertPublicUrl('file:///etc/passwd', { resolver, allowPrivate: true, field: 'url' }), DomainError);
  });

  test('credentials in the URL never appear in the error', async () => {
    const err = await refused('http://alice:s3cr3t-pw@10.0.0.1/x?token=sig-abc', resolver);
    const text = JSON.stringify({ message: err.message, data: err.data });
    for (const secret of ['alice', 's3cr3t-pw', 'sig-abc']) assert.ok(!text.includes(secret), `${secret} leaked: ${text}`);
  });

  test('checkUrlSyntax never resolves', () => {
    assert.throws(() => checkUrlSyntax('http://[::1]/'), DomainError);
    assert.equal(checkUrlSyntax('http://some.name/').hostname, 'some.name');
  });
});

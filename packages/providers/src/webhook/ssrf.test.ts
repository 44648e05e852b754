import { describe, expect, it } from 'vitest';
import { TargetRefusedError, addressProblem, createTargetGuard, parseAllowCidrs } from './ssrf.js';

describe('addressProblem', () => {
  it.each([
    ['127.0.0.1', /loopback/],
    ['127.255.255.254', /loopback/],
    ['10.1.2.3', /private/],
    ['172.16.0.1', /private/],
    ['172.31.255.255', /private/],
    ['192.168.0.1', /private/],
    ['169.254.169.254', /metadata/],
    ['169.254.1.1', /link-local/],
    ['100.64.0.1', /carrier-grade NAT/],
    ['100.127.255.255', /carrier-grade NAT/],
    ['0.0.0.0', /unspecified/],
    ['0.1.2.3', /unspecified/],
    ['255.255.255.255', /broadcast/],
    ['224.0.0.1', /multicast/],
    ['239.255.255.250', /multicast/],
    ['240.0.0.1', /reserved/],
    ['192.0.2.1', /reserved/],
    ['198.18.0.1', /reserved/],
    ['::1', /loopback/],
    ['::', /unspecified/],
    ['fe80::1', /link-local/],
    ['fc00::1', /unique-local/],
    ['fd00::1', /unique-local/],
    ['fd00:ec2::254', /metadata/],
    ['ff02::1', /multicast/],
    ['::ffff:127.0.0.1', /IPv4-mapped/],
    ['::ffff:8.8.8.8', /IPv4-mapped/],
    ['::7f00:1', /IPv4-compatible/],
    ['64:ff9b::7f00:1', /NAT64/],
    ['2002:7f00:1::', /6to4/],
    ['2001:0::1', /Teredo/],
    ['2001:db8::1', /reserved/],
    ['fec0::1', /site-local/],
    ['100::1', /special-purpose|discard/],
    ['4000::1', /not a global unicast/],
    ['not-an-ip', /not an IP address/],
  ])('refuses %s', (address, reason) => {
    expect(addressProblem(address)).toMatch(reason);
  });

  it.each(['93.184.215.14', '8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e'])(
    'permits the public address %s',
    (address) => {
      expect(addressProblem(address)).toBeNull();
    },
  );

  it('permits allow-listed ranges, never the metadata addresses', () => {
    const allow = parseAllowCidrs(['127.0.0.0/8', '10.0.0.5', 'fd00::/8', '169.254.0.0/16']);
    expect(addressProblem('127.0.0.1', allow)).toBeNull();
    expect(addressProblem('10.0.0.5', allow)).toBeNull();
    expect(addressProblem('10.0.0.6', allow)).toMatch(/private/);
    expect(addressProblem('fd00::1', allow)).toBeNull();
    expect(addressProblem('169.254.169.254', allow)).toMatch(/metadata/);
    expect(addressProblem('fd00:ec2::254', allow)).toMatch(/metadata/);
    // An IPv4 allow-list does not open the IPv4-mapped IPv6 form of the same address.
    expect(addressProblem('::ffff:127.0.0.1', allow)).toMatch(/IPv4-mapped/);
  });

  it('rejects malformed allow-list entries', () => {
    expect(() => parseAllowCidrs(['10.0.0.0/33'])).toThrow(/not a CIDR/);
    expect(() => parseAllowCidrs(['localhost'])).toThrow(/not a CIDR/);
  });
});

describe('createTargetGuard', () => {
  const resolver = async (name: string) => {
    const table: Record<string, { address: string; family: 4 | 6 }[]> = {
      'public.example': [{ address: '93.184.215.14', family: 4 }],
      'mixed.example': [
        { address: '127.0.0.1', family: 4 },
        { address: '93.184.215.14', family: 4 },
      ],
      'metadata.example': [{ address: '169.254.169.254', family: 4 }],
      'v6local.example': [{ address: '::1', family: 6 }],
    };
    const hit = table[name];
    if (!hit) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return hit;
  };
  const guard = createTargetGuard({ resolver });

  it('refuses non-http schemes, credentials and hostile IP literals at URL check time', () => {
    for (const url of [
      'ftp://example.com/',
      'file:///etc/passwd',
      'gopher://x/',
      'http://user:pw@example.com/',
      'not a url',
      'http://2130706433/',
      'http://[::ffff:127.0.0.1]/',
    ]) {
      expect(() => guard.checkUrl(url)).toThrow(TargetRefusedError);
    }
    expect(guard.checkUrl('https://public.example/hook').hostname).toBe('public.example');
  });

  it('resolves names and keeps only permitted addresses', async () => {
    await expect(guard.resolve('public.example')).resolves.toEqual([{ address: '93.184.215.14', family: 4 }]);
    await expect(guard.resolve('mixed.example')).resolves.toEqual([{ address: '93.184.215.14', family: 4 }]);
    await expect(guard.resolve('metadata.example')).rejects.toThrow(/metadata/);
    await expect(guard.resolve('v6local.example')).rejects.toThrow(TargetRefusedError);
    await expect(guard.resolve('missing.example')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  it('lookup answers node:net in both shapes, with the checked addresses only', async () => {
    const all = await new Promise((resolve, reject) =>
      guard.lookup('mixed.example', { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
    );
    expect(all).toEqual([{ address: '93.184.215.14', family: 4 }]);
    const one = await new Promise((resolve, reject) =>
      guard.lookup('mixed.example', {}, (err, address, family) => (err ? reject(err) : resolve([address, family]))),
    );
    expect(one).toEqual(['93.184.215.14', 4]);
    const refused = await new Promise((resolve) => guard.lookup('metadata.example', {}, (err) => resolve(err)));
    expect(refused).toBeInstanceOf(TargetRefusedError);
    expect((refused as TargetRefusedError).code).toBe('ETARGETREFUSED');
  });
});

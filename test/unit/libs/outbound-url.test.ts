import fc from 'fast-check';
import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';
import {
  checkTargetUrl,
  classifyAddress,
  deniedRanges,
  guardedLookup,
  isAllowedClass,
  parseRange,
  resolvedHostRefusal,
  targetForLog,
  targetForOwner,
  type AddressClass,
  type OutboundPolicy,
  type Resolver,
} from '../../../libs/outbound-url';

const LIVE: OutboundPolicy = { requireHttps: true, allowPrivate: false };
const STAGING: OutboundPolicy = { requireHttps: false, allowPrivate: false };
const TESTS: OutboundPolicy = { requireHttps: false, allowPrivate: true };

describe('classifyAddress', () => {
  it.each<[AddressClass, string[]]>([
    [
      'PUBLIC',
      ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '2a00:1450::1'],
    ],
    [
      'PRIVATE',
      ['10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.255', '192.168.1.1', '100.64.0.1'],
    ],
    ['PRIVATE', ['100.127.255.255', 'fc00::1', 'fd12:3456::1']],
    ['LOOPBACK', ['127.0.0.1', '127.255.255.254', '::1', '0:0:0:0:0:0:0:1']],
    ['LINK_LOCAL', ['169.254.0.1', '169.254.170.2', 'fe80::1', 'febf::1', 'fe80::1%eth0']],
    [
      'METADATA',
      ['169.254.169.254', 'fd00:ec2::254', '100.100.100.200', '192.0.0.192', '168.63.129.16'],
    ],
    // Cloud metadata and host agents inside unique-local fc00::/7, which staging may call.
    ['METADATA', ['fd00:ec2::23', 'fd20:ce::254', 'fd00:42::42', 'fd20:ce:0:0::254']],
    ['UNSPECIFIED', ['0.0.0.0', '::', '0:0:0:0:0:0:0:0']],
    [
      'RESERVED',
      ['0.1.2.3', '224.0.0.1', '239.255.255.250', '255.255.255.255', '240.0.0.1', '192.0.2.1'],
    ],
    ['RESERVED', ['198.51.100.7', '203.0.113.9', '198.18.0.1', '192.0.0.8', 'ff02::1']],
    ['RESERVED', ['2001:db8::1', '3fff::1', '100::1', 'fec0::1', '2001::1', '4000::1', '::2']],
  ])('classes %s: %j', (kind, addresses) => {
    for (const ip of addresses) expect([ip, classifyAddress(ip)]).toEqual([ip, kind]);
  });

  it('judges an IPv6 address carrying an IPv4 one as that IPv4 address', () => {
    expect(classifyAddress('::ffff:127.0.0.1')).toBe('LOOPBACK');
    expect(classifyAddress('::ffff:7f00:1')).toBe('LOOPBACK');
    expect(classifyAddress('::ffff:169.254.169.254')).toBe('METADATA');
    expect(classifyAddress('::10.0.0.1')).toBe('PRIVATE');
    expect(classifyAddress('64:ff9b::10.0.0.1')).toBe('PRIVATE');
    expect(classifyAddress('2002:a9fe:a9fe::1')).toBe('METADATA'); // 6to4 of 169.254.169.254
    fc.assert(
      fc.property(fc.ipV4(), (v4) => {
        const kind = classifyAddress(v4);
        expect(classifyAddress(`::ffff:${v4}`)).toBe(kind);
        expect(classifyAddress(`64:ff9b::${v4}`)).toBe(kind);
      }),
    );
  });

  it('classes every IPv4 and IPv6 address, and only those', () => {
    fc.assert(
      fc.property(fc.oneof(fc.ipV4(), fc.ipV6()), (ip) => {
        expect(typeof classifyAddress(ip)).toBe('string');
      }),
    );
    expect(() => classifyAddress('example.com')).toThrow(/not an IP address/);
  });
});

describe('isAllowedClass', () => {
  it('allows public always, private and loopback only when allowed, the rest never', () => {
    const kinds: AddressClass[] = ['PUBLIC', 'PRIVATE', 'LOOPBACK', 'LINK_LOCAL', 'METADATA'];
    kinds.push('UNSPECIFIED', 'RESERVED');
    const allowed = (policy: OutboundPolicy) => kinds.filter((k) => isAllowedClass(k, policy));
    expect(allowed(LIVE)).toEqual(['PUBLIC']);
    expect(allowed(TESTS)).toEqual(['PUBLIC', 'PRIVATE', 'LOOPBACK']);
  });
});

describe('resolvedHostRefusal', () => {
  it('refuses a host when any of its addresses is refused, naming it and its range', () => {
    expect(resolvedHostRefusal('hooks.example.com', ['93.184.215.14', '10.1.2.3'], STAGING)).toBe(
      'url host hooks.example.com resolves to 10.1.2.3, a private address (10.0.0.0/8); use a public address',
    );
    expect(resolvedHostRefusal('h.example.com', ['::'], TESTS)).toBe(
      'url host h.example.com resolves to ::, the unspecified address (::/128); use a public address',
    );
  });

  it('accepts public addresses, and private ones only where the policy allows them', () => {
    expect(resolvedHostRefusal('h.example.com', ['93.184.215.14', '2606:2800::1'], LIVE)).toBe(
      undefined,
    );
    expect(resolvedHostRefusal('h.example.com', ['127.0.0.1'], TESTS)).toBe(undefined);
    expect(resolvedHostRefusal('h.example.com', ['169.254.169.254'], TESTS)).toMatch(
      /resolves to 169\.254\.169\.254, the cloud metadata address/,
    );
  });
});

describe('checkTargetUrl', () => {
  it.each([
    ['https://hooks.example.com/waybill', LIVE],
    ['https://hooks.example.com:8443/waybill?source=waybill', LIVE],
    ['http://hooks.example.com/waybill', STAGING],
    ['https://8.8.8.8/', LIVE],
    ['https://[2606:4700::1111]/', LIVE],
    ['http://127.0.0.1:3000/hook', TESTS],
    ['http://localhost:3000/hook', TESTS],
    ['http://[::ffff:10.0.0.1]/', TESTS],
  ])('accepts %s', (raw, policy) => {
    const checked = checkTargetUrl(raw, policy);
    expect(checked).toEqual({ ok: true, url: new URL(raw) });
  });

  it.each([
    [
      'http://hooks.example.com/',
      LIVE,
      'url must use https in live (http is accepted in staging only)',
    ],
    ['ftp://hooks.example.com/', STAGING, 'url uses ftp; use https or http'],
    ['javascript:alert(1)', LIVE, 'url uses javascript; use https'],
    ['/webhooks', LIVE, 'url is not an absolute URL; give one like https://example.com/webhooks'],
    ['https://', LIVE, 'url is not an absolute URL; give one like https://example.com/webhooks'],
    [
      'https://user:pw@hooks.example.com/',
      LIVE,
      'url must not hold a user name or password; authenticate by the signature instead',
    ],
    [
      'https://hooks.example.com/#frag',
      LIVE,
      'url must not have a fragment (#...); it is never sent, remove it',
    ],
    [
      'https://hooks.example.com/#',
      LIVE,
      'url must not have a fragment (#...); it is never sent, remove it',
    ],
    [
      'https://hooks.example.com:25/',
      LIVE,
      'url uses port 25, which belongs to another protocol; use 443 or another port',
    ],
    [
      'https://10.1.2.3/',
      LIVE,
      'url points to 10.1.2.3, a private address (10.0.0.0/8); use a public address',
    ],
    [
      'https://169.254.169.254/latest/meta-data/',
      TESTS,
      'url points to 169.254.169.254, the cloud metadata address (169.254.169.254/32); use a public address',
    ],
    [
      'https://[fd00:ec2::254]/',
      TESTS,
      'url points to fd00:ec2::254, the AWS metadata address (fd00:ec2::254/128); use a public address',
    ],
    [
      'https://[fe80::1]/',
      TESTS,
      'url points to fe80::1, a link-local address (fe80::/10); use a public address',
    ],
    [
      'https://0.0.0.0/',
      TESTS,
      'url points to 0.0.0.0, the unspecified address (0.0.0.0/32); use a public address',
    ],
    [
      'https://[::]/',
      TESTS,
      'url points to ::, the unspecified address (::/128); use a public address',
    ],
    [
      'https://224.0.0.1/',
      TESTS,
      'url points to 224.0.0.1, a multicast address (224.0.0.0/4); use a public address',
    ],
    ['https://localhost/', LIVE, 'url points to localhost, this host; use a public address'],
    [
      'https://api.localhost./',
      LIVE,
      'url points to api.localhost., this host; use a public address',
    ],
  ])('refuses %s, saying what to do', (raw, policy, reason) => {
    expect(checkTargetUrl(raw, policy)).toEqual({ ok: false, reason });
  });

  it.each(['fd00:ec2::23', 'fd20:ce::254', 'fd00:42::42'])(
    'refuses %s, a metadata address or host agent in fc00::/7, even when private targets are allowed',
    (ip) => {
      const checked = checkTargetUrl(`http://[${ip}]/`, TESTS);
      expect(checked.ok).toBe(false);
      expect(!checked.ok && checked.reason).toMatch(/metadata|agent/);
      // Its neighbours are only private: allowed in staging and tests.
      const neighbour = ip.replace(/[0-9a-f]+$/, (last) => (parseInt(last, 16) + 1).toString(16));
      expect(checkTargetUrl(`http://[${neighbour}]/`, TESTS).ok).toBe(true);
    },
  );

  it('refuses a URL longer than 2048 characters', () => {
    const path = 'a'.repeat(2048 - 'https://hooks.example.com/'.length);
    expect(checkTargetUrl(`https://hooks.example.com/${path}`, LIVE).ok).toBe(true);
    expect(checkTargetUrl(`https://hooks.example.com/${path}a`, LIVE)).toEqual({
      ok: false,
      reason: 'url is 2049 characters long; use one of at most 2048',
    });
  });

  it('refuses a URL longer than 2048 characters as it is sent, non-ASCII percent-encoded', () => {
    // 1,026 characters as typed, 6,026 as stored and requested (`é` is `%C3%A9`).
    const raw = `https://example.com/hooks/${'é'.repeat(1000)}`;
    expect(raw.length).toBeLessThan(2048);
    expect(checkTargetUrl(raw, LIVE)).toEqual({
      ok: false,
      reason:
        'url is 6026 characters long once written as it is sent (characters other than ASCII percent-encoded); use one of at most 2048',
    });
    // What passes is short enough in the form stored, so every request passes again.
    const fits = `https://example.com/hooks/${'é'.repeat(337)}`;
    const checked = checkTargetUrl(fits, LIVE);
    expect(checked.ok && checked.url.href.length).toBe(2048);
    expect(checked.ok && checkTargetUrl(checked.url.href, LIVE).ok).toBe(true);
    expect(checkTargetUrl(`${fits}é`, LIVE).ok).toBe(false);
  });

  it.each([
    ['decimal', 'https://2130706433/'],
    ['short', 'https://127.1/'],
    ['hex', 'https://0x7f.0x0.0x0.0x1/'],
    ['octal', 'https://0177.0.0.01/'],
    ['IPv4-mapped IPv6', 'https://[::ffff:127.0.0.1]/'],
    ['IPv4-mapped IPv6 in hex', 'https://[::ffff:7f00:1]/'],
    ['IPv4-compatible IPv6', 'https://[::127.0.0.1]/'],
    ['IPv6 loopback', 'https://[::1]/'],
  ])('sees through the %s form of a loopback address', (_form, raw) => {
    const checked = checkTargetUrl(raw, LIVE);
    expect(checked.ok).toBe(false);
    expect(!checked.ok && checked.reason).toMatch(/loopback address .*; use a public address$/);
  });

  it('gives every written form of an IPv4 address the verdict of its dotted form', () => {
    const forms = (n: number) => {
      const bytes = [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
      return [
        String(n),
        `0x${n.toString(16)}`,
        bytes.map((b) => `0x${b.toString(16)}`).join('.'),
        bytes.map((b) => `0${b.toString(8)}`).join('.'),
        `[::ffff:${bytes.join('.')}]`,
      ];
    };
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.boolean(), (n, allowPrivate) => {
        const policy = { requireHttps: true, allowPrivate };
        const dotted = [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff].join('.');
        const expected = checkTargetUrl(`https://${dotted}/`, policy).ok;
        expect(expected).toBe(isAllowedClass(classifyAddress(dotted), policy));
        for (const form of forms(n)) {
          expect([form, checkTargetUrl(`https://${form}/`, policy).ok]).toEqual([form, expected]);
        }
      }),
    );
  });
});

/** A receiver on 127.0.0.1 answering 204 to everything. */
let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((_req, res) => res.writeHead(204).end());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise((resolve) => server.close(resolve)));

/** A GET to `host` on the receiver's port through `lookup`: its status, or the error's code. */
function get(host: string, lookup: ReturnType<typeof guardedLookup>) {
  return new Promise<{ status?: number; code?: string; message?: string }>((resolve) => {
    const req = request({ host, port, path: '/hook', lookup, agent: false }, (res) => {
      res.resume();
      resolve({ status: res.statusCode });
    });
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ code: err.code, message: err.message }),
    );
    req.end();
  });
}

/** A resolver answering `answers` for every name, the next answer on each call. */
function stubResolver(...answers: string[][]): Resolver & { calls: string[]; families: number[] } {
  const calls: string[] = [];
  const families: number[] = [];
  let next = 0;
  const resolve = async (hostname: string, family: number) => {
    calls.push(hostname);
    families.push(family);
    const addresses = answers[Math.min(next++, answers.length - 1)];
    return addresses.map((address): LookupAddress => ({
      address,
      family: address.includes(':') ? 6 : 4,
    }));
  };
  return Object.assign(resolve, { calls, families });
}

describe('targetForOwner', () => {
  it('names a target by its origin and path, never its query', () => {
    expect(targetForOwner('https://hooks.example.com:8443/in/waybill?token=s3cret&a=1')).toBe(
      'https://hooks.example.com:8443/in/waybill',
    );
    expect(targetForOwner('http://[fd00::1]/?key=s3cret')).toBe('http://[fd00::1]/');
    expect(targetForOwner('not a url?token=s3cret')).toBe('(not a URL)');
  });
});

describe('targetForLog', () => {
  it('names a target by its origin and a hash of its path, never the path or its query', () => {
    const catchHook = 'https://hooks.zapier.com/hooks/catch/123456/s3cretT0ken/?token=s3cret';
    const logged = targetForLog(catchHook);
    expect(logged).toMatch(/^https:\/\/hooks\.zapier\.com\/\[path [0-9a-f]{8}\]$/);
    expect(logged).not.toMatch(/s3cret|123456/);
    // The same path, the same name; another path, another.
    expect(targetForLog('https://hooks.zapier.com/hooks/catch/123456/s3cretT0ken/')).toBe(logged);
    expect(targetForLog('https://hooks.zapier.com/hooks/catch/123456/other/')).not.toBe(logged);
    expect(targetForLog('http://[fd00::1]/?key=s3cret')).toBe('http://[fd00::1]/');
    expect(targetForLog('not a url?token=s3cret')).toBe('(not a URL)');
  });
});

describe('guardedLookup', () => {
  it('refuses a request to a name of this host when private targets are not allowed', async () => {
    const refused = await get('localhost', guardedLookup(STAGING));
    expect(refused.code).toBe('EUNSAFETARGET');
    expect(refused.message).toBe(
      'webhook target localhost has no public address now; use a host name with a public DNS record',
    );
  });

  it('lets the same request through when they are', async () => {
    const resolve = stubResolver(['127.0.0.1']);
    expect(await get('hooks.example.test', guardedLookup(TESTS, resolve))).toEqual({ status: 204 });
    expect(resolve.calls).toEqual(['hooks.example.test']);
  });

  it('refuses a name when any of its addresses is refused, even if another is public', async () => {
    const resolve = stubResolver(['8.8.8.8', '127.0.0.1']);
    const refused = await get('hooks.example.test', guardedLookup(STAGING, resolve));
    expect(refused).toEqual({
      code: 'EUNSAFETARGET',
      // Which address, and of what kind, is not told: it would map our network.
      message:
        'webhook target hooks.example.test has no public address now; use a host name with a public DNS record',
    });
  });

  it('refuses the metadata address even when private targets are allowed', async () => {
    const resolve = stubResolver(['169.254.169.254']);
    expect((await get('metadata.example.test', guardedLookup(TESTS, resolve))).code).toBe(
      'EUNSAFETARGET',
    );
  });

  it('judges the addresses at each connection: a name rebound to this host is refused', async () => {
    const resolve = stubResolver(['8.8.8.8'], ['127.0.0.1']);
    const lookup = guardedLookup(STAGING, resolve);
    const first = await new Promise((done) =>
      lookup('hooks.example.test', { all: true }, (err, addresses) => done({ err, addresses })),
    );
    expect(first).toEqual({ err: null, addresses: [{ address: '8.8.8.8', family: 4 }] });
    const second = await get('hooks.example.test', lookup);
    expect(second.code).toBe('EUNSAFETARGET');
    expect(resolve.calls).toHaveLength(2);
  });

  it('answers in both of dns.lookup’s shapes, and judges an IP literal without resolving it', async () => {
    const resolve = stubResolver(['8.8.8.8', '2606:4700::1111']);
    const lookup = guardedLookup(LIVE, resolve);
    const one = await new Promise((done) =>
      lookup('hooks.example.test', 0, (err, address, family) => done([err, address, family])),
    );
    expect(one).toEqual([null, '8.8.8.8', 4]);
    await new Promise<void>((done) =>
      lookup('hooks.example.test', { family: 'IPv6' }, () => done()),
    );
    expect(resolve.families).toEqual([0, 6]);
    const literal = await new Promise<Error | null>((done) =>
      lookup('10.0.0.1', {}, (err) => done(err)),
    );
    expect(literal?.message).toBe(
      'webhook target is 10.0.0.1, a private address (10.0.0.0/8); use a public address',
    );
    expect(resolve.calls).toEqual(['hooks.example.test', 'hooks.example.test']);
  });

  it('passes resolution errors through as they are', async () => {
    const notFound = Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.test'), {
      code: 'ENOTFOUND',
    });
    const lookup = guardedLookup(LIVE, () => Promise.reject(notFound));
    expect(await get('nowhere.test', lookup)).toEqual({
      code: 'ENOTFOUND',
      message: 'getaddrinfo ENOTFOUND nowhere.test',
    });
    const empty = await get('nowhere.test', guardedLookup(LIVE, stubResolver([])));
    expect(empty.code).toBe('ENOTFOUND');
  });
});

describe('an operator’s denied ranges (WEBHOOK_DENY_CIDRS)', () => {
  const denied = deniedRanges(['93.184.215.0/24', '2a05:d014::/32', '198.18.255.1']);
  const OURS: OutboundPolicy = { ...LIVE, denied };
  const PRIVATE_TOO: OutboundPolicy = { ...TESTS, denied: deniedRanges(['127.0.0.2']) };

  it('refuses a public address in them, written any way, without naming the range', () => {
    for (const host of [
      '93.184.215.14',
      '[::ffff:93.184.215.14]',
      '[2a05:d014:1::7]',
      '1572394766',
    ]) {
      const checked = checkTargetUrl(`https://${host}/hook`, OURS);
      expect(checked.ok).toBe(false);
      if (!checked.ok)
        expect(checked.reason).toMatch(/an address this platform does not call; use another$/);
    }
    expect(checkTargetUrl('https://93.184.216.14/hook', OURS).ok).toBe(true);
    expect(resolvedHostRefusal('hooks.example.com', ['8.8.8.8', '2a05:d014::1'], OURS)).toBe(
      'url host hooks.example.com resolves to 2a05:d014::1, an address this platform does not call; use another',
    );
    // Where private targets are allowed, the denied ones stay refused.
    expect(resolvedHostRefusal('h.example.com', ['127.0.0.1'], PRIVATE_TOO)).toBeUndefined();
    expect(resolvedHostRefusal('h.example.com', ['127.0.0.2'], PRIVATE_TOO)).toMatch(
      /does not call/,
    );
  });

  it('matches a range written in a form that carries IPv4 (NAT64, 6to4) as written', () => {
    const nat64: OutboundPolicy = {
      ...LIVE,
      denied: deniedRanges(['64:ff9b::/96', '2002:5db8::/32']),
    };
    // 93.184.215.14, public, reached through NAT64 and 6to4.
    expect(checkTargetUrl('https://[64:ff9b::5db8:d70e]/hook', nat64).ok).toBe(false);
    expect(checkTargetUrl('https://[2002:5db8:d70e::1]/hook', nat64).ok).toBe(false);
    expect(checkTargetUrl('https://93.184.215.14/hook', nat64).ok).toBe(true);
  });

  it('refuses at each connection a name that resolves into them', async () => {
    const resolve = stubResolver(['127.0.0.2']);
    const refused = await get('hooks.example.test', guardedLookup(PRIVATE_TOO, resolve));
    expect(refused.code).toBe('EUNSAFETARGET');
  });

  it('reads addresses and ranges of both families, and nothing else', () => {
    expect(parseRange('203.0.113.7')).toEqual({
      address: '203.0.113.7',
      prefix: 32,
      family: 'ipv4',
    });
    expect(parseRange(' 2a05:d014::/32 ')).toEqual({
      address: '2a05:d014::',
      prefix: 32,
      family: 'ipv6',
    });
    for (const bad of [
      '203.0.113.0/33',
      '2a05::/129',
      'example.com',
      '10.0.0.0/8/1',
      '10.0.0.0/',
      '10.0.0.0/x',
    ]) {
      expect(parseRange(bad)).toBeNull();
    }
    expect(deniedRanges([])).toBeUndefined();
    expect(() => deniedRanges(['nope'])).toThrow(/not an address or range: nope/);
  });
});

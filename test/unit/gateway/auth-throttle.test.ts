import type { IncomingMessage } from 'node:http';
import fc from 'fast-check';
import { addressBucket, clientAddress } from '../../../services/gateway/auth-throttle';

const req = (remoteAddress: string | undefined, forwardedFor?: string | string[]) =>
  ({
    socket: { remoteAddress },
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  }) as unknown as IncomingMessage;

describe('clientAddress', () => {
  it('is the socket address when no proxy is trusted, whatever X-Forwarded-For says', () => {
    expect(clientAddress(req('192.0.2.1'), 0)).toBe('192.0.2.1');
    expect(clientAddress(req('192.0.2.1', '198.51.100.7'), 0)).toBe('192.0.2.1');
  });

  it('takes the entry written by the outermost trusted proxy', () => {
    // client → proxy A (10.0.0.1) → proxy B (10.0.0.2) → gateway
    const chain = 'spoofed, 198.51.100.7, 10.0.0.1';
    expect(clientAddress(req('10.0.0.2', chain), 2)).toBe('198.51.100.7');
    expect(clientAddress(req('10.0.0.2', chain), 1)).toBe('10.0.0.1');
    expect(clientAddress(req('10.0.0.1', '198.51.100.7'), 1)).toBe('198.51.100.7');
  });

  it('reads repeated X-Forwarded-For headers as one list', () => {
    expect(clientAddress(req('10.0.0.1', ['203.0.113.1', '198.51.100.7']), 1)).toBe('198.51.100.7');
  });

  it('takes the first entry of a chain shorter than the trusted hops', () => {
    expect(clientAddress(req('10.0.0.2', '198.51.100.7'), 3)).toBe('198.51.100.7');
    expect(clientAddress(req('10.0.0.2'), 1)).toBe('10.0.0.2');
  });

  it('falls back to the socket address when the entry is not an address', () => {
    expect(clientAddress(req('10.0.0.1', 'unknown'), 1)).toBe('10.0.0.1');
    expect(clientAddress(req('10.0.0.1', '198.51.100.7:port'), 1)).toBe('10.0.0.1');
    expect(clientAddress(req('10.0.0.1', '[not-an-address]:4711'), 1)).toBe('10.0.0.1');
  });

  it('reads an entry a proxy wrote with the client’s port (Azure, ARR) as its address', () => {
    // Read as no address, every client would count as the proxy, and one throttle them all.
    expect(clientAddress(req('10.0.0.1', '198.51.100.7:4711'), 1)).toBe('198.51.100.7');
    expect(clientAddress(req('10.0.0.1', '[2001:db8:1:2::7]:4711'), 1)).toBe('2001:db8:1:2::/64');
    expect(clientAddress(req('10.0.0.1', '[2001:db8:1:2::7]'), 1)).toBe('2001:db8:1:2::/64');
  });

  it('unwraps IPv4-mapped IPv6 socket addresses', () => {
    expect(clientAddress(req('::ffff:127.0.0.1'), 0)).toBe('127.0.0.1');
  });
});

describe('addressBucket', () => {
  it.each([
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:0:0:0:1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['::', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['64:ff9b::192.0.2.1', '64:ff9b:0:0::/64'],
    ['198.51.100.7', '198.51.100.7'],
    ['::ffff:198.51.100.7', '198.51.100.7'],
  ])('%s counts as %s', (address, bucket) => {
    expect(addressBucket(address)).toBe(bucket);
  });

  it('gives every address of one /64 the same bucket, and others another (property)', () => {
    const group = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));
    const groups = (n: number) => fc.array(group, { minLength: n, maxLength: n });
    fc.assert(
      fc.property(groups(4), groups(4), groups(4), (prefix, a, b) => {
        const one = addressBucket([...prefix, ...a].join(':'));
        expect(addressBucket([...prefix, ...b].join(':'))).toBe(one);
        const other = [...prefix];
        other[3] = ((parseInt(other[3], 16) + 1) % 0x10000).toString(16);
        expect(addressBucket([...other, ...a].join(':'))).not.toBe(one);
      }),
    );
  });
});

import { createHash } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { MAX_URL_LENGTH } from './contracts/file';

/**
 * Rules for URLs integrators give us to call (webhook targets): we must never become their
 * way into our own network (SSRF). Two checks, because a host name can change its answer
 * between them (DNS rebinding): `checkTargetUrl` when the URL is registered and before each
 * request, and `guardedLookup` at each connection, on the addresses actually connected to.
 * Node connects to an IP-literal host without calling `lookup` at all, so the first check is
 * what covers literals at request time.
 */

export type AddressClass =
  'PUBLIC' | 'PRIVATE' | 'LOOPBACK' | 'LINK_LOCAL' | 'METADATA' | 'UNSPECIFIED' | 'RESERVED';

export interface OutboundPolicy {
  /** Live: only https. Staging may call http receivers. */
  requireHttps: boolean;
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS: private and loopback receivers (staging and tests). */
  allowPrivate: boolean;
  /**
   * WEBHOOK_DENY_CIDRS: public addresses the operator keeps out (the platform's own, a cloud
   * network's routable IPv6 prefix), which no address class can tell apart; `deniedRanges`.
   */
  denied?: DeniedRanges;
}

/** Ranges an operator keeps out of reach whatever their class (`deniedRanges`). */
export interface DeniedRanges {
  list: BlockList;
}

/**
 * One range an operator names: `203.0.113.7`, `203.0.113.0/24`, `2a05:d014::/32`; null when it
 * is none (the config's validation says why).
 */
export function parseRange(
  text: string,
): { address: string; prefix: number; family: Family } | null {
  const [address, prefixText, ...rest] = text.trim().split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return null;
  const family: Family = version === 4 ? 'ipv4' : 'ipv6';
  const full = version === 4 ? 32 : 128;
  if (prefixText === undefined) return { address, prefix: full, family };
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > full) return null;
  return { address, prefix: Number(prefixText), family };
}

/** The ranges of a comma list (WEBHOOK_DENY_CIDRS, validated by the config), as one list. */
export function deniedRanges(ranges: readonly string[]): DeniedRanges | undefined {
  if (ranges.length === 0) return undefined;
  const list = new BlockList();
  for (const text of ranges) {
    const range = parseRange(text);
    if (!range) throw new TypeError(`not an address or range: ${text}`);
    if (range.prefix === (range.family === 'ipv4' ? 32 : 128)) {
      list.addAddress(range.address, range.family);
    } else list.addSubnet(range.address, range.prefix, range.family);
  }
  return { list };
}

/** Never reachable through a target, whatever the policy: the host itself and the cloud. */
const NEVER: ReadonlySet<AddressClass> = new Set([
  'LINK_LOCAL',
  'METADATA',
  'UNSPECIFIED',
  'RESERVED',
]);

export function isAllowedClass(kind: AddressClass, policy: OutboundPolicy): boolean {
  if (kind === 'PUBLIC') return true;
  if (NEVER.has(kind)) return false;
  return policy.allowPrivate;
}

type Family = 'ipv4' | 'ipv6';
/** `[address, prefix, what it is]`; a prefix of 32 (or 128) is one address. */
type Range = [string, number, string];

/**
 * Tried in this order, so that a narrower class wins over the range holding it (the metadata
 * address over link-local, 0.0.0.0 over 0.0.0.0/8). IPv4-mapped, -compatible, NAT64 and 6to4
 * IPv6 addresses never reach the IPv6 table: they are judged by the IPv4 address they carry.
 */
const TABLE: [AddressClass, Family, Range[]][] = [
  [
    'METADATA',
    'ipv4',
    [
      ['169.254.169.254', 32, 'the cloud metadata address'],
      ['100.100.100.200', 32, 'the Alibaba Cloud metadata address'],
      ['192.0.0.192', 32, 'the Oracle Cloud metadata address'],
      // Public by its range, but inside Azure the host's agent (WireServer) answers on it.
      ['168.63.129.16', 32, 'the Azure host agent address (WireServer)'],
    ],
  ],
  [
    'METADATA',
    'ipv6',
    // Inside unique-local fc00::/7, which staging may call (WEBHOOK_ALLOW_PRIVATE_TARGETS):
    // listed here so that they stay refused there too.
    [
      ['fd00:ec2::254', 128, 'the AWS metadata address'],
      ['fd00:ec2::23', 128, 'the AWS EKS Pod Identity agent address'],
      ['fd20:ce::254', 128, 'the Google Cloud metadata address'],
      ['fd00:42::42', 128, 'the Scaleway metadata address'],
    ],
  ],
  ['UNSPECIFIED', 'ipv4', [['0.0.0.0', 32, 'the unspecified address']]],
  ['UNSPECIFIED', 'ipv6', [['::', 128, 'the unspecified address']]],
  ['LOOPBACK', 'ipv4', [['127.0.0.0', 8, 'a loopback address']]],
  ['LOOPBACK', 'ipv6', [['::1', 128, 'the loopback address']]],
  ['LINK_LOCAL', 'ipv4', [['169.254.0.0', 16, 'a link-local address']]],
  ['LINK_LOCAL', 'ipv6', [['fe80::', 10, 'a link-local address']]],
  [
    'PRIVATE',
    'ipv4',
    [
      ['10.0.0.0', 8, 'a private address'],
      ['172.16.0.0', 12, 'a private address'],
      ['192.168.0.0', 16, 'a private address'],
      ['100.64.0.0', 10, 'a carrier-grade NAT address'],
    ],
  ],
  ['PRIVATE', 'ipv6', [['fc00::', 7, 'a unique local (private) address']]],
  [
    'RESERVED',
    'ipv4',
    [
      ['0.0.0.0', 8, 'a "this network" address'],
      ['192.0.0.0', 24, 'an IETF protocol address'],
      ['192.0.2.0', 24, 'a documentation address'],
      ['198.51.100.0', 24, 'a documentation address'],
      ['203.0.113.0', 24, 'a documentation address'],
      ['192.88.99.0', 24, 'a 6to4 relay address'],
      ['198.18.0.0', 15, 'a benchmarking address'],
      ['224.0.0.0', 4, 'a multicast address'],
      ['255.255.255.255', 32, 'the broadcast address'],
      ['240.0.0.0', 4, 'a reserved address'],
    ],
  ],
  [
    'RESERVED',
    'ipv6',
    [
      ['ff00::', 8, 'a multicast address'],
      ['2001:db8::', 32, 'a documentation address'],
      ['3fff::', 20, 'a documentation address'],
      ['100::', 64, 'a discard-only address'],
      ['64:ff9b:1::', 48, 'a local NAT64 address'],
      ['2001::', 23, 'an IETF protocol address (Teredo, ORCHID, benchmarking)'],
      ['fec0::', 10, 'a site-local address'],
    ],
  ],
];

const RULES = TABLE.flatMap(([kind, family, ranges]) =>
  ranges.map(([address, prefix, what]) => {
    const list = new BlockList();
    if (prefix === (family === 'ipv4' ? 32 : 128)) list.addAddress(address, family);
    else list.addSubnet(address, prefix, family);
    return { kind, family, list, label: `${what} (${address}/${prefix})` };
  }),
);

/** Global unicast (2000::/3): an IPv6 address outside it is not on the public internet. */
const GLOBAL_UNICAST = new BlockList();
GLOBAL_UNICAST.addSubnet('2000::', 3, 'ipv6');

/** The eight 16-bit groups of an IPv6 address (any textual form the URL parser accepts). */
function ipv6Groups(ip: string): number[] {
  // The URL parser writes every valid IPv6 address in one compressed, hex-only form.
  const canonical = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  const [head, tail] = canonical.split('::');
  const parse = (part: string | undefined) =>
    part ? part.split(':').map((g) => parseInt(g, 16)) : [];
  const left = parse(head);
  const right = parse(tail);
  const zeros = tail === undefined ? [] : new Array<number>(8 - left.length - right.length).fill(0);
  return [...left, ...zeros, ...right];
}

const v4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
const allZero = (groups: number[]) => groups.every((g) => g === 0);

/**
 * The IPv4 address an IPv6 address stands for, if it carries one that a connection would
 * end up at: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d) and
 * 6to4 (2002:aabb:ccdd::).
 */
function embeddedIpv4(groups: number[]): string | undefined {
  const [g0, g1, g2, , , g5, g6, g7] = groups;
  if (allZero(groups.slice(0, 5)) && g5 === 0xffff) return v4Of(g6, g7);
  // :: and ::1 are themselves, not 0.0.0.0 and 0.0.0.1.
  if (allZero(groups.slice(0, 6)) && (g6 !== 0 || g7 > 1)) return v4Of(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b && allZero(groups.slice(2, 6))) return v4Of(g6, g7);
  if (g0 === 0x2002) return v4Of(g1, g2);
  return undefined;
}

interface Classification {
  kind: AddressClass;
  /** What the address is and the range it is in, for messages. */
  label: string;
  /** The address judged: an IPv4 address carried by an IPv6 one is judged as itself. */
  address: string;
}

function classify(ip: string): Classification {
  const bare = ip.replace(/%.*$/, ''); // a zone id says which interface, not which address
  const version = isIP(bare);
  if (version === 0) throw new TypeError(`not an IP address: ${ip}`);
  if (version === 6) {
    const groups = ipv6Groups(bare);
    const v4 = embeddedIpv4(groups);
    if (v4 !== undefined) return classify(v4);
  }
  const family: Family = version === 4 ? 'ipv4' : 'ipv6';
  for (const rule of RULES) {
    if (rule.family === family && rule.list.check(bare, family)) {
      return { kind: rule.kind, label: rule.label, address: bare };
    }
  }
  if (family === 'ipv6' && !GLOBAL_UNICAST.check(bare, 'ipv6')) {
    return { kind: 'RESERVED', label: 'a reserved address (outside 2000::/3)', address: bare };
  }
  return { kind: 'PUBLIC', label: 'a public address', address: bare };
}

/** What kind of address `ip` (IPv4 or IPv6, any form `net.isIP` accepts) is. */
export const classifyAddress = (ip: string): AddressClass => classify(ip).kind;

/** Why an address may not be called, for the integrator; undefined when it may. */
function refusal(ip: string, policy: OutboundPolicy): string | undefined {
  const { kind, label, address } = classify(ip);
  if (!isAllowedClass(kind, policy)) return `${address}, ${label}; use a public address`;
  // As written and as the IPv4 address it carries (6to4, NAT64...): a range may name either.
  const written = ip.replace(/%.*$/, '');
  const denied = [written, address].some((a) =>
    policy.denied?.list.check(a, isIP(a) === 4 ? 'ipv4' : 'ipv6'),
  );
  if (denied) {
    // Not which range: the operator's network is theirs to know.
    return `${address}, an address this platform does not call; use another`;
  }
  return undefined;
}

/**
 * Why a host whose name resolves to `addresses` may not be registered, for the integrator;
 * undefined when every address may be called. One address refused refuses the host, as
 * `guardedLookup` does at each connection.
 */
export function resolvedHostRefusal(
  host: string,
  addresses: readonly string[],
  policy: OutboundPolicy,
): string | undefined {
  for (const address of addresses) {
    const why = refusal(address, policy);
    if (why !== undefined) return `url host ${host} resolves to ${why}`;
  }
  return undefined;
}

/**
 * Ports of other protocols (the Fetch standard's "bad ports", and 0): an HTTP request sent to
 * a mail or SSH server is a cross-protocol attack made from our address. Any other port is
 * accepted: receivers on 8443 or 3000 are common, and the address rules are what keep us out
 * of our own network.
 */
const BAD_PORTS: ReadonlySet<number> = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102,
  103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465,
  512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993,
  995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668,
  6669, 6679, 6697, 10080,
]);

const LOCALHOST = /(^|\.)localhost\.?$/i;

export type TargetCheck = { ok: true; url: URL } | { ok: false; reason: string };

const refuse = (reason: string): TargetCheck => ({ ok: false, reason: `url ${reason}` });

/**
 * Whether `raw` may be registered (and requested) as a target under `policy`. Host names are
 * not resolved here: `guardedLookup` judges their addresses at each connection.
 */
export function checkTargetUrl(raw: string, policy: OutboundPolicy): TargetCheck {
  if (raw.length > MAX_URL_LENGTH) {
    return refuse(`is ${raw.length} characters long; use one of at most ${MAX_URL_LENGTH}`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('is not an absolute URL; give one like https://example.com/webhooks');
  }
  // What is stored and requested is the parsed form, non-ASCII percent-encoded (up to 12
  // characters for one), so the limit holds for it too: a URL accepted at registration must
  // pass this check again before every request.
  if (url.href.length > MAX_URL_LENGTH) {
    return refuse(
      `is ${url.href.length} characters long once written as it is sent (characters other than ASCII percent-encoded); use one of at most ${MAX_URL_LENGTH}`,
    );
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && !policy.requireHttps)) {
    return url.protocol === 'http:'
      ? refuse('must use https in live (http is accepted in staging only)')
      : refuse(
          `uses ${url.protocol.slice(0, -1)}; use ${policy.requireHttps ? 'https' : 'https or http'}`,
        );
  }
  if (url.username !== '' || url.password !== '') {
    return refuse('must not hold a user name or password; authenticate by the signature instead');
  }
  // `https://host/#` parses with an empty hash, so the raw text is what tells.
  if (url.hash !== '' || raw.includes('#')) {
    return refuse('must not have a fragment (#...); it is never sent, remove it');
  }
  if (url.port !== '' && BAD_PORTS.has(Number(url.port))) {
    return refuse(
      `uses port ${url.port}, which belongs to another protocol; use 443 or another port`,
    );
  }
  // The parser has already turned 2130706433, 0x7f.1 and 0177.0.0.1 into dotted IPv4.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) !== 0) {
    const why = refusal(host, policy);
    if (why !== undefined) return refuse(`points to ${why}`);
  } else if (!policy.allowPrivate && LOCALHOST.test(host)) {
    // Always loopback (RFC 6761): refused now rather than at the first delivery.
    return refuse(`points to ${host}, this host; use a public address`);
  }
  return { ok: true, url };
}

/**
 * A target URL as its owner is told of it (an e-mail): its origin and path. Its query is left
 * out: integrators often authenticate our requests by a token there, and a mailbox is no
 * place for one.
 */
export function targetForOwner(raw: string): string {
  try {
    const url = new URL(raw);
    return `${url.origin}${url.pathname}`;
  } catch {
    return '(not a URL)';
  }
}

/**
 * Where a target's redirect points, as its owner is shown it (`targetForOwner`): resolved
 * against the target, its query left out. A redirect keeps the query it was sent (a trailing
 * slash added, an apex sent to `www.`), token and all, and the attempt's error is quoted in
 * the owner's e-mail when the endpoint is disabled.
 */
export function redirectForOwner(target: string, location: string): string {
  try {
    return targetForOwner(new URL(location, target).href);
  } catch {
    return '(not a URL)';
  }
}

/**
 * A target URL as our logs name it: its origin, and its path only as a short hash (one target
 * told from another, and found again from the URL). Catch-hook receivers carry their secret in
 * the path (`/hooks/catch/<id>/<token>/`), and a log aggregation is no place for it either.
 */
export function targetForLog(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.pathname === '/') return `${url.origin}/`;
    const digest = createHash('sha256').update(url.pathname).digest('hex').slice(0, 8);
    return `${url.origin}/[path ${digest}]`;
  } catch {
    return '(not a URL)';
  }
}

/**
 * What a delivery is told of a name with no address it may call: the same whether the name
 * resolves to private addresses or not at all, so that which names exist inside is not told.
 */
export const noPublicAddressNow = (hostname: string) =>
  `webhook target ${hostname} has no public address now; use a host name with a public DNS record`;

/** The refusal of a connection: `code` is what a dispatcher tells apart from network errors. */
export class UnsafeTargetError extends Error {
  readonly code = 'EUNSAFETARGET';
  constructor(
    readonly hostname: string,
    readonly address: string,
    why: string,
  ) {
    // A name's addresses are not told: they would map our internal network for the caller.
    super(hostname === address ? `webhook target is ${why}` : noPublicAddressNow(hostname));
    this.name = 'UnsafeTargetError';
  }
}

/** Every address `hostname` has, in the order a connection would try them. */
export type Resolver = (hostname: string, family: 0 | 4 | 6) => Promise<LookupAddress[]>;

/** The system's resolver (`dns.lookup`): what `guardedLookup` asks unless told otherwise. */
export const systemResolver: Resolver = (hostname, family) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, family }, (err, addresses) =>
      err ? reject(err) : resolve(addresses),
    );
  });

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** `dns.lookup`'s shape, as `http.request({ lookup })` and `net.connect` call it. */
export type GuardedLookup = (
  hostname: string,
  options: LookupOptions | number | LookupCallback,
  callback?: LookupCallback,
) => void;

/**
 * A `lookup` for `http(s).request` that refuses a host when ANY of its addresses may not be
 * called: were one allowed, a name answering both a public and an internal address could
 * still reach the internal one on a retry or the next connection. `resolve` stands in for
 * DNS in tests.
 */
export function guardedLookup(policy: OutboundPolicy, resolve: Resolver = systemResolver) {
  const lookup: GuardedLookup = (hostname, options, callback) => {
    const done = (typeof options === 'function' ? options : callback) as LookupCallback;
    const opts: LookupOptions =
      typeof options === 'number'
        ? { family: options }
        : typeof options === 'object'
          ? options
          : {};
    const family =
      opts.family === 4 || opts.family === 'IPv4'
        ? 4
        : opts.family === 6 || opts.family === 'IPv6'
          ? 6
          : 0;
    const literal = isIP(hostname.replace(/%.*$/, ''));
    const found: Promise<LookupAddress[]> =
      literal !== 0
        ? Promise.resolve([{ address: hostname, family: literal }])
        : resolve(hostname, family);
    found.then(
      (addresses) => {
        if (addresses.length === 0) {
          const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
          err.code = 'ENOTFOUND';
          return done(err, []);
        }
        for (const { address } of addresses) {
          const why = refusal(address, policy);
          if (why !== undefined) return done(new UnsafeTargetError(hostname, address, why), []);
        }
        if (opts.all) return done(null, addresses);
        done(null, addresses[0].address, addresses[0].family);
      },
      (err: NodeJS.ErrnoException) => done(err, []),
    );
  };
  return lookup;
}

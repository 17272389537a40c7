import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { tooManyRequests } from '../../libs/errors';
import type { Quota, QuotaDecision, QuotaLimiter } from './quota';

/**
 * The address failed authentications are counted against. The socket's peer, unless
 * `trustedHops` proxies stand in front of the gateway: each appends the address it received
 * the request from to `X-Forwarded-For`, so the entry `trustedHops` places from the right was
 * written by the outermost proxy we trust, and everything left of it by the client. An entry
 * that is not an address falls back to the peer. IPv6 addresses count per /64, the block one
 * subscriber usually holds, so that hopping between them does not reset the count.
 */
export function clientAddress(req: IncomingMessage, trustedHops: number): string {
  const peer = req.socket.remoteAddress ?? 'unknown';
  let address = peer;
  if (trustedHops > 0) {
    const header = req.headers['x-forwarded-for'];
    const forwarded = (Array.isArray(header) ? header.join(',') : (header ?? ''))
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
    const chain = [...forwarded, peer];
    // A shorter chain skipped a proxy; its first entry is then the nearest to the client.
    const candidate = withoutPort(chain[Math.max(0, chain.length - 1 - trustedHops)]);
    if (isIP(candidate)) address = candidate;
  }
  return addressBucket(address);
}

/**
 * An `X-Forwarded-For` entry's address: some proxies (Azure Application Gateway, IIS's ARR)
 * write the client's port with it, `203.0.113.5:51234` or `[2001:db8::1]:51234`, and such an
 * entry read as no address would count every client as the proxy.
 */
export function withoutPort(entry: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(entry);
  if (bracketed) return bracketed[1];
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(entry);
  return v4WithPort ? v4WithPort[1] : entry;
}

/** IPv4 (also IPv4-mapped IPv6) as is, IPv6 as its /64 prefix; anything else as is. */
export function addressBucket(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  const ip = address.split('%')[0];
  if (isIP(ip) !== 6) return address;
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, undefined];
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  // A trailing dotted IPv4 part stands for two groups.
  const width = (parts: string[]) => parts.reduce((n, p) => n + (p.includes('.') ? 2 : 1), 0);
  const left = groups(head);
  const right = groups(tail);
  const zeros = Array<string>(8 - width(left) - width(right)).fill('0');
  const all = tail === undefined ? left : [...left, ...zeros, ...right];
  const prefix = all.slice(0, 4).map((g) => parseInt(g, 16).toString(16));
  return `${prefix.join(':')}::/64`;
}

/**
 * Failed authentications per client address (API keys and courier tokens alike), counted in
 * Redis so every gateway replica shares the count: up to `quota.limit` per window are answered 401, later ones 429 with
 * `Retry-After`, and a throttled address gets no database lookup of a key the gateway has
 * not accepted before. Successes are never counted. `credential` names what a 429 asks for
 * (`API key`, `courier token`).
 */
export class AuthFailureThrottle {
  constructor(
    private readonly limiter: QuotaLimiter,
    private readonly quota: Quota,
  ) {}

  /**
   * Counts a failed authentication of `address`, and refuses it once past the limit. Before
   * a lookup, the attempt is counted as failed in advance, so that concurrent attempts cannot
   * all pass one look at the count, and forgiven if the credential proves good.
   */
  async countFailure(address: string, credential = 'API key'): Promise<void> {
    refuseUnless(await this.limiter.consume(address, this.quota), credential);
  }

  /**
   * Takes back a failure counted before a lookup that found the credential good. Should Redis
   * not answer, the request goes on all the same: the count is one too high only until its
   * window ends.
   */
  async forgive(address: string): Promise<void> {
    await this.limiter.giveBack(address, this.quota).catch(() => undefined);
  }

  /**
   * Refuses an address that has used up its failures, reading the count in order with the
   * failures counted before it on this replica.
   */
  async admit(address: string, credential = 'API key'): Promise<void> {
    refuseUnless(await this.limiter.peek(address, this.quota), credential);
  }
}

function refuseUnless(decision: QuotaDecision, credential: string): void {
  if (decision.allowed) return;
  throw tooManyRequests(
    `Too many failed authentications from your address; retry in ${decision.resetSeconds} seconds with a valid ${credential}`,
    decision.resetSeconds,
  );
}

import { lookup as dnsLookup } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Webhook targets are customer supplied, so every address we connect to is checked first.
 * The policy (docs/providers.md, "SSRF policy"):
 *
 * - only `http:` and `https:` URLs without credentials;
 * - an address is permitted when it is global unicast: IPv4 outside every special range that
 *   ipaddr.js knows (loopback, private, link-local, CGNAT, multicast, broadcast, unspecified,
 *   reserved, benchmarking…), IPv6 inside 2000::/3 and outside every special range (IPv4-mapped,
 *   IPv4-compatible, NAT64, 6to4, Teredo and the other forms that embed an IPv4 address are
 *   refused outright, not unwrapped);
 * - `allowCidrs` permits addresses that would otherwise be refused (tests, internal receivers),
 *   except the cloud metadata addresses, which are refused always;
 * - a name is resolved once, refused addresses are dropped, and the connection goes to one of
 *   the remaining, checked addresses (the check happens inside the socket's `lookup`, so there
 *   is no window for DNS rebinding between check and connect). No address left → refused, with
 *   an error that names the kinds of address but not the addresses (it reaches the tenant; the
 *   addresses are in `TargetRefusedError.detail`, for the operator's log).
 */

/** A webhook target refused by the SSRF policy. Permanent: the same URL will be refused again. */
export class TargetRefusedError extends Error {
  /** Stable code; `CLASSIFICATION.webhook.errnos` maps it to permanent. */
  readonly code = 'ETARGETREFUSED';
  /**
   * For the operator's log: the message with the addresses a name resolved to. The message itself
   * goes back to the tenant (the attempt's error, a 422) and never names them: which private
   * addresses an internal name has is the operator's network map, not the tenant's business.
   */
  readonly detail: string;
  constructor(message: string, detail: string = message) {
    super(message);
    this.name = 'TargetRefusedError';
    this.detail = detail;
  }
}

/** One resolved address. */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** Resolves a host name to every address it has (the `dns.lookup` view: /etc/hosts, then DNS). */
export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/** `dns.lookup(hostname, { all: true })`. */
export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      if (err) reject(err);
      else resolve(addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 })));
    });
  });

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Always refused, even when an allow-listed CIDR covers them. */
const METADATA_ADDRESSES = new Set(['169.254.169.254', 'fd00:ec2::254']);

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
// Ranges ipaddr.js files under 'unicast' that still embed or stand for something local.
const EXTRA_REFUSED: readonly { readonly cidr: Cidr; readonly reason: string }[] = [
  { cidr: ipaddr.parseCIDR('::/96'), reason: 'an IPv4-compatible IPv6 address (embedded IPv4)' },
];

const RANGE_REASONS: Readonly<Record<string, string>> = {
  unspecified: 'an unspecified address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT address (100.64.0.0/10)',
  private: 'a private address',
  reserved: 'a reserved address',
  uniqueLocal: 'a unique-local IPv6 address',
  ipv4Mapped: 'an IPv4-mapped IPv6 address (embedded IPv4)',
  rfc6145: 'an IPv4-translated IPv6 address (embedded IPv4)',
  rfc6052: 'a NAT64 address (embedded IPv4)',
  '6to4': 'a 6to4 address (embedded IPv4)',
  teredo: 'a Teredo address (embedded IPv4)',
  deprecatedSiteLocal: 'a site-local IPv6 address',
};

/** Parses `NOTIFY_WEBHOOK_ALLOW_CIDRS` entries. A bare address is a /32 or /128. Throws on a malformed entry. */
export function parseAllowCidrs(list: readonly string[]): Cidr[] {
  return list.map((entry) => {
    const text = entry.trim();
    try {
      if (text.includes('/')) return ipaddr.parseCIDR(text);
      const addr = ipaddr.parse(text);
      return [addr, addr.kind() === 'ipv4' ? 32 : 128];
    } catch (cause) {
      throw new Error(`"${text}" is not a CIDR (e.g. 127.0.0.1/32 or fd00::/8)`, { cause });
    }
  });
}

function matches(addr: ipaddr.IPv4 | ipaddr.IPv6, cidr: Cidr): boolean {
  return addr.kind() === cidr[0].kind() && addr.match(cidr);
}

/**
 * Why `address` (a literal IPv4 or IPv6 address, as from DNS) may not be connected to, or null
 * when it may. `allow` comes from `parseAllowCidrs`.
 */
export function addressProblem(address: string, allow: readonly Cidr[] = []): string | null {
  const refusal = addressRefusal(address, allow);
  return refusal && `${refusal.text} is ${refusal.reason}`;
}

/** `addressProblem` in parts: the canonical address and the reason without it. */
function addressRefusal(address: string, allow: readonly Cidr[]): { readonly text: string; readonly reason: string } | null {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (isIP(bare) === 0) return { text: address, reason: 'not an IP address' };
  const addr = ipaddr.parse(bare);
  const text = addr.toString();
  if (METADATA_ADDRESSES.has(text)) return { text, reason: 'a cloud metadata address' };
  if (allow.some((cidr) => matches(addr, cidr))) return null;
  const range = addr.range();
  if (range !== 'unicast') return { text, reason: RANGE_REASONS[range] ?? `a special-purpose address (${range})` };
  if (addr.kind() === 'ipv6') {
    for (const extra of EXTRA_REFUSED) if (matches(addr, extra.cidr)) return { text, reason: extra.reason };
    if (!addr.match(GLOBAL_UNICAST_V6)) return { text, reason: 'not a global unicast IPv6 address' };
  }
  return null;
}

/** The SSRF guard of the webhook provider: checks URLs and supplies the checked `lookup`. */
export interface TargetGuard {
  /**
   * Parses and checks a target URL: scheme, credentials, and (for an IP literal host) the
   * address itself. Throws `TargetRefusedError`. Names are checked at connect time by `lookup`.
   */
  checkUrl(target: string): URL;
  /** Resolves `hostname` and returns the permitted addresses; throws `TargetRefusedError` when none is. */
  resolve(hostname: string): Promise<ResolvedAddress[]>;
  /** A `lookup` for node:http / node:net: resolves, keeps only permitted addresses, connects to those. */
  readonly lookup: LookupFunction;
}

/** Options of `createTargetGuard`. */
export interface TargetGuardOptions {
  /** CIDRs that may be connected to although the policy refuses them (e.g. `127.0.0.1/32` in tests). */
  readonly allowCidrs?: readonly string[];
  /** Name resolution; `systemResolver` by default. Tests inject names that resolve to hostile addresses. */
  readonly resolver?: Resolver;
}

/** Builds the guard. Throws when an `allowCidrs` entry is malformed. */
export function createTargetGuard(options: TargetGuardOptions = {}): TargetGuard {
  const allow = parseAllowCidrs(options.allowCidrs ?? []);
  const resolver = options.resolver ?? systemResolver;

  async function resolve(hostname: string): Promise<ResolvedAddress[]> {
    const name = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
    const literal = isIP(name);
    const addresses: readonly ResolvedAddress[] = literal !== 0 ? [{ address: name, family: literal === 6 ? 6 : 4 }] : await resolver(name);
    const permitted: ResolvedAddress[] = [];
    const refusals: { readonly text: string; readonly reason: string }[] = [];
    for (const a of addresses) {
      const refusal = addressRefusal(a.address, allow);
      if (refusal === null) permitted.push(a);
      else refusals.push(refusal);
    }
    if (permitted.length === 0) {
      const prefix = `webhook target host "${name}" refused: `;
      if (refusals.length === 0) throw new TargetRefusedError(`${prefix}it resolves to no address`);
      const detail = `${prefix}${refusals.map((r) => `${r.text} is ${r.reason}`).join('; ')}`;
      // A literal is the caller's own text; a name's addresses are not told (the kinds are).
      if (literal !== 0) throw new TargetRefusedError(detail);
      const kinds = [...new Set(refusals.map((r) => r.reason))].join('; ');
      throw new TargetRefusedError(`${prefix}every address it resolves to is refused (${kinds})`, detail);
    }
    return permitted;
  }

  const lookup: LookupFunction = (hostname, options, callback) => {
    resolve(hostname).then(
      (permitted) => {
        const family = options.family === 4 || options.family === 6 ? options.family : undefined;
        const fitting = family === undefined ? permitted : permitted.filter((a) => a.family === family);
        if (fitting.length === 0) {
          callback(new TargetRefusedError(`webhook target host "${hostname}" has no permitted IPv${family} address`), '', 4);
          return;
        }
        if (options.all) (callback as unknown as (e: null, a: ResolvedAddress[]) => void)(null, fitting);
        else callback(null, fitting[0]!.address, fitting[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 4),
    );
  };

  return {
    checkUrl(target) {
      let url: URL;
      try {
        url = new URL(target);
      } catch {
        throw new TargetRefusedError('webhook target is not a valid absolute URL');
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw new TargetRefusedError(`webhook target scheme ${url.protocol} refused: only http and https are allowed`);
      }
      if (url.username !== '' || url.password !== '') throw new TargetRefusedError('webhook target URL must not carry credentials');
      if (url.hostname === '') throw new TargetRefusedError('webhook target URL has no host');
      const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
      if (isIP(host) !== 0) {
        // node:net skips `lookup` for IP literals, so they are checked here.
        const problem = addressProblem(host, allow);
        if (problem !== null) throw new TargetRefusedError(`webhook target refused: ${problem}`);
      }
      return url;
    },
    resolve,
    lookup,
  };
}

import type { RateLimit } from '../rate-limit.js';

const RATE_UNITS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600 };

/**
 * Parses a rate limit written as `50/s`, `600/m`, `1000/h`, optionally `,burst=100`; the burst
 * defaults to one second's worth (at least 1). The one parser of the format: environment
 * variables (NOTIFY_RATE_LIMIT_*, NOTIFY_ENDPOINT_RATE_LIMIT, …), `tenants.delivery_rate_limit`
 * and the endpoint overrides of the API. Throws `RangeError` with a message a person can act on.
 */
export function parseRateLimit(raw: string): RateLimit {
  const m = /^(\d+(?:\.\d+)?)\s*\/\s*([smh])(?:\s*,\s*burst\s*=\s*(\d+))?$/.exec(raw.trim());
  if (!m) throw new RangeError(`expected <count>/<s|m|h>[,burst=<n>], e.g. 50/s,burst=100, got "${raw}"`);
  const perSecond = Number(m[1]) / RATE_UNITS[m[2]!]!;
  if (!(perSecond > 0)) throw new RangeError('the rate must be above 0');
  const burst = m[3] !== undefined ? Number(m[3]) : Math.max(1, Math.ceil(perSecond));
  if (burst < 1 || burst > 1_000_000) throw new RangeError(`burst must be from 1 to 1000000, got ${burst}`);
  return { perSecond, burst };
}

import type { SqlExecutor } from '@notify/outbox';
import type { Clock } from '@notify/runtime';
import type { RateLimitCheck } from '../env.js';
import { ProblemError } from '../problem.js';
import { type RateBucketSpec, rateBucketTake } from '../sql/rate-bucket-take.js';

/** A token bucket's rate: `perSecond` refill, `burst` capacity. */
export interface TokenRate {
  readonly perSecond: number;
  readonly burst: number;
}

/** The API's limits: per API key (NOTIFY_API_RATE_LIMIT) and per tenant (NOTIFY_API_TENANT_RATE_LIMIT); either may be off. */
export interface ApiRateLimits {
  readonly perKey?: TokenRate | undefined;
  readonly perTenant?: TokenRate | undefined;
}

/**
 * The rate-limit check that `bearerAuth` runs once it knows the caller. Buckets live in
 * PostgreSQL (`api_rate_buckets`), so every API process draws from the same ones. Every limited
 * response carries the IETF draft's `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`
 * and `RateLimit-Policy` for the tighter bucket; a refusal is a 429 `rate_limited` problem with
 * `Retry-After` (seconds until one token is back).
 */
export function apiRateLimit(deps: {
  readonly db: SqlExecutor;
  readonly clock: Clock;
  readonly limits: ApiRateLimits;
}): RateLimitCheck | undefined {
  const { perKey, perTenant } = deps.limits;
  if (!perKey && !perTenant) return undefined;
  return async (c, auth) => {
    const specs: (RateBucketSpec & { rate: TokenRate })[] = [];
    if (perKey) specs.push({ bucket: `key:${auth.apiKeyId}`, ...perKey, rate: perKey });
    if (perTenant) specs.push({ bucket: `tenant:${auth.tenantId}`, ...perTenant, rate: perTenant });
    const states = await rateBucketTake(deps.db, { buckets: specs, now: deps.clock.now() });
    // The tighter bucket: a refusing one first, else the one with the fewest whole tokens left.
    const view = states
      .map((s, i) => ({ ...s, rate: specs[i]!.rate }))
      .sort((a, b) => Number(a.allowed) - Number(b.allowed) || a.tokens - b.tokens)[0]!;
    const untilOne = Math.max(1, Math.ceil((1 - view.tokens) / view.rate.perSecond));
    const untilFull = Math.max(0, Math.ceil((view.rate.burst - view.tokens) / view.rate.perSecond));
    const headers: Record<string, string> = {
      'ratelimit-limit': String(view.rate.burst),
      'ratelimit-remaining': String(Math.max(0, Math.floor(view.tokens))),
      'ratelimit-reset': String(view.allowed ? untilFull : untilOne),
      'ratelimit-policy': `${view.rate.burst};w=${Math.max(1, Math.round(view.rate.burst / view.rate.perSecond))}`,
    };
    if (!view.allowed) {
      const which = view.bucket.startsWith('key:') ? 'this API key' : 'this tenant';
      throw new ProblemError('rate_limited', `too many requests for ${which}; retry after ${untilOne} s`, {
        headers: { ...headers, 'retry-after': String(untilOne) },
      });
    }
    for (const [k, v] of Object.entries(headers)) c.header(k, v);
  };
}

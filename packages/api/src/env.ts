import type { Context } from 'hono';
import type { ApiKeyLookup } from './api-key-cache.js';
import type { RequestTrace } from './tracing.js';

/** Who is calling: set by the bearer-auth middleware on every /v1 route. */
export interface AuthContext {
  readonly tenantId: string;
  /** The id of the API key (never the key), for the action history and logs. */
  readonly apiKeyId: string;
}

/** Hono's environment type for this app: the per-request variables. */
export interface AppEnv {
  Variables: {
    /** Request id: the caller's `X-Request-Id` when it is sane, else a new one; echoed in the response. */
    reqId: string;
    auth: AuthContext;
    /** The parsed JSON body (set by `jsonBody`). */
    json: unknown;
    trace: RequestTrace;
    /** The API's rate-limit check (`apiRateLimit`), when limits are configured: `bearerAuth` runs it. */
    rateLimit: RateLimitCheck | undefined;
    /** The API-key lookup with its cache (`apiKeyLookup`), when the app has one: `bearerAuth` uses it. */
    apiKeyLookup: ApiKeyLookup | undefined;
  };
}

/** Checks one authenticated request against its buckets; throws a 429 problem when one is empty. */
export type RateLimitCheck = (c: Context<AppEnv>, auth: AuthContext) => Promise<void>;

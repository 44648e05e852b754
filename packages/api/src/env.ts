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
    /** The request's in-flight slot (`shedOverload`), given back while the body is still arriving. */
    inFlightSlot: InFlightSlot | undefined;
  };
}

/** Checks one authenticated request against its buckets; throws a 429 problem when one is empty. */
export type RateLimitCheck = (c: Context<AppEnv>, auth: AuthContext) => Promise<void>;

/**
 * The in-flight slot of the request in progress (`shedOverload`, middleware/shed.ts, sets it as `inFlightSlot`): the
 * body reader gives it back while it waits for the client to send the rest of its body, and takes
 * it again once the body is in.
 */
export interface InFlightSlot {
  /** Gives the request's slot back. Call `retake` exactly once after it. */
  release(): void;
  /** Takes a slot again; throws 503 `overloaded` (the slot counted, `shedOverload` gives it back) when none is free. */
  retake(): void;
}

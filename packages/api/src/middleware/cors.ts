import type { Context, MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import type { AppEnv } from '../env.js';

/** Request headers a browser may send cross-origin to /v1: the key, a JSON body, retries' key, tracing. */
const ALLOW_HEADERS = ['authorization', 'content-type', 'idempotency-key', 'traceparent', 'tracestate', 'x-request-id'];
/** Response headers a page may read besides the CORS-safelisted ones: where a resource is, when to retry, limits, the request id. */
const EXPOSE_HEADERS = [
  'location',
  'retry-after',
  'x-request-id',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'ratelimit-policy',
];
/** How long a browser may reuse a preflight's answer: 10 minutes (Chromium caps it at 2 hours). */
const PREFLIGHT_MAX_AGE_S = 600;
/**
 * The methods a preflight allows, the same on every /v1 path: the ones /v1 has at all. Not the
 * path's own (the router knows them): a preflight carries no key, and its answer must not tell a
 * caller without one which paths exist. The request it announces gets the path's 404 or 405.
 */
const PREFLIGHT_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * CORS for /v1, for pages on `origins` (NOTIFY_CORS_ORIGINS: exact origins, or `*` for any) that
 * call the API with a key themselves. Hono's `cors` does the headers; this decides which requests
 * it sees:
 * - a preflight (OPTIONS with Access-Control-Request-Method) from a listed origin is answered here,
 *   before authentication (a browser never sends the key on one): 204 with the same methods on
 *   every path (`PREFLIGHT_METHODS`), the headers above and a max age, so it tells nothing of which
 *   paths exist (an Origin header is no proof: any client can send a listed one);
 * - any other request from a listed origin goes on as without CORS, and its answer (a 401, 404,
 *   429 or 503 problem too) carries Access-Control-Allow-Origin and the exposed headers, so the
 *   page can read it;
 * - a request from an origin not listed, a preflight too, goes on as without CORS (an OPTIONS
 *   needs the key, like any method) and its answer carries no CORS header but `Vary: Origin`: the
 *   browser refuses it;
 * - an OPTIONS that is no preflight keeps its own answer (204 with Allow), an unknown path its 404.
 * The console (/console) never gets CORS: it is a same-origin site with cookies.
 */
export function apiCors(origins: readonly string[]): MiddlewareHandler<AppEnv> {
  const allow = allowedOrigin(origins);
  const headers = cors({
    origin: allow,
    allowMethods: PREFLIGHT_METHODS,
    allowHeaders: ALLOW_HEADERS,
    exposeHeaders: EXPOSE_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_S,
  });
  return async (c, next) => {
    const origin = c.req.header('origin');
    if (origin === undefined) return next();
    if (allow(origin) === null) {
      await next();
      c.header('vary', 'Origin', { append: true });
      return;
    }
    if (c.req.method === 'OPTIONS' && !isPreflightRequest(c)) return next();
    return headers(c, next);
  };
}

/** A CORS preflight: an OPTIONS saying which method the request it announces will use. */
function isPreflightRequest(c: Context<AppEnv>): boolean {
  return c.req.method === 'OPTIONS' && c.req.header('access-control-request-method') !== undefined;
}

/** Access-Control-Allow-Origin for a request's Origin: itself when listed, `*` when any is, else null (none). */
function allowedOrigin(origins: readonly string[]): (origin: string) => string | null {
  const any = origins.includes('*');
  return (origin) => (any ? '*' : origins.includes(origin) ? origin : null);
}

/** What the load shedding that runs before `apiCors` (pressure.ts) needs to know of CORS. */
export interface EarlyCors {
  /**
   * A CORS preflight to /v1 from a listed origin (OPTIONS with Access-Control-Request-Method): never shed.
   * A browser takes only a 2xx as a preflight's answer, so a shed one would reach the page as a
   * network error, without the 503 or its Retry-After; answered by `apiCors` it costs no more than
   * the shed answer (no key, no database), and the request it announces is shed readably instead.
   */
  isPreflight(c: Context<AppEnv>): boolean;
  /**
   * The CORS headers of a /v1 answer given before `apiCors` runs (a shed request): those `apiCors`
   * writes on any other answer (for a listed origin Access-Control-Allow-Origin and the exposed
   * headers; `Vary: Origin` for any), so a page on a listed origin reads the 503 and its Retry-After
   * instead of a network error. None for a request without Origin or outside /v1.
   */
  headers(c: Context<AppEnv>): Record<string, string> | undefined;
}

/** `EarlyCors` for `origins` (NOTIFY_CORS_ORIGINS), as `apiCors` with the same origins answers. */
export function earlyCors(origins: readonly string[]): EarlyCors {
  const allow = allowedOrigin(origins);
  const expose = EXPOSE_HEADERS.join(',');
  const listed = (c: Context<AppEnv>): string | null => {
    const origin = c.req.header('origin');
    return origin === undefined || !c.req.path.startsWith('/v1/') ? null : allow(origin);
  };
  return {
    isPreflight: (c) => isPreflightRequest(c) && listed(c) !== null,
    headers(c): Record<string, string> | undefined {
      if (c.req.header('origin') === undefined || !c.req.path.startsWith('/v1/')) return undefined;
      const allowed = listed(c);
      if (allowed === null) return { vary: 'Origin' };
      return { 'access-control-allow-origin': allowed, 'access-control-expose-headers': expose, vary: 'Origin' };
    },
  };
}

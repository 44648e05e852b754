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
 * CORS for /v1, for pages on `origins` (NOTIFY_CORS_ORIGINS: exact origins, or `*` for any) that
 * call the API with a key themselves. Hono's `cors` does the headers; this decides which requests
 * it sees:
 * - a preflight (OPTIONS with Access-Control-Request-Method) on a path that has routes is answered
 *   here, before authentication (a browser never sends the key on one): 204, and for an allowed
 *   origin the path's methods (`methodsOf`, the router's own list), the headers above, a max age;
 *   an origin not listed gets no Access-Control-Allow-Origin, so the browser refuses;
 * - any other request with an Origin goes on as without CORS, and its answer (a 401, 429 or 503
 *   problem too) carries Access-Control-Allow-Origin for a listed origin, so the page can read it;
 * - an OPTIONS that is no preflight keeps its own answer (204 with Allow), an unknown path its 404.
 * The console (/console) never gets CORS: it is a same-origin site with cookies.
 */
export function apiCors(origins: readonly string[], methodsOf: (path: string) => string[]): MiddlewareHandler<AppEnv> {
  // A preflight's methods, asked of the router once: to know it is a preflight of a known path, then for the header.
  const preflightMethods = new WeakMap<Context, string[]>();
  const headers = cors({
    origin: allowedOrigin(origins),
    allowMethods: (_origin, c) => (preflightMethods.get(c) ?? methodsOf(c.req.path)).filter((m) => m !== 'OPTIONS' && m !== 'HEAD'),
    allowHeaders: ALLOW_HEADERS,
    exposeHeaders: EXPOSE_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_S,
  });
  return async (c, next) => {
    if (c.req.header('origin') === undefined) return next();
    if (c.req.method === 'OPTIONS') {
      if (c.req.header('access-control-request-method') === undefined) return next();
      const methods = methodsOf(c.req.path);
      if (methods.length === 0) return next();
      preflightMethods.set(c, methods);
    }
    return headers(c, next);
  };
}

/** Access-Control-Allow-Origin for a request's Origin: itself when listed, `*` when any is, else null (none). */
function allowedOrigin(origins: readonly string[]): (origin: string) => string | null {
  const any = origins.includes('*');
  return (origin) => (any ? '*' : origins.includes(origin) ? origin : null);
}

/** What the load shedding that runs before `apiCors` (pressure.ts) needs to know of CORS. */
export interface EarlyCors {
  /**
   * A CORS preflight to /v1 (OPTIONS with Origin and Access-Control-Request-Method): never shed.
   * A browser takes only a 2xx as a preflight's answer, so a shed one would reach the page as a
   * network error, without the 503 or its Retry-After; answered by `apiCors` it costs no more than
   * the shed answer (no key, no database), and the request it announces is shed readably instead.
   */
  isPreflight(c: Context<AppEnv>): boolean;
  /**
   * The CORS headers of a /v1 answer given before `apiCors` runs (a shed request): those Hono's
   * `cors` writes on any other answer (Access-Control-Allow-Origin for a listed origin, the exposed
   * headers, `Vary: Origin`), so a page on a listed origin reads the 503 and its Retry-After instead
   * of a network error. None for a request without Origin or outside /v1.
   */
  headers(c: Context<AppEnv>): Record<string, string> | undefined;
}

/** `EarlyCors` for `origins` (NOTIFY_CORS_ORIGINS), as `apiCors` with the same origins answers. */
export function earlyCors(origins: readonly string[]): EarlyCors {
  const allow = allowedOrigin(origins);
  const expose = EXPOSE_HEADERS.join(',');
  return {
    isPreflight: (c) =>
      c.req.method === 'OPTIONS' &&
      c.req.header('access-control-request-method') !== undefined &&
      c.req.header('origin') !== undefined &&
      c.req.path.startsWith('/v1/'),
    headers(c) {
      const origin = c.req.header('origin');
      if (origin === undefined || !c.req.path.startsWith('/v1/')) return undefined;
      const allowed = allow(origin);
      return {
        ...(allowed === null ? {} : { 'access-control-allow-origin': allowed }),
        'access-control-expose-headers': expose,
        vary: 'Origin',
      };
    },
  };
}

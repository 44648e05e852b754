import { performance } from 'node:perf_hooks';
import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { Logger } from '@notify/runtime';
import type { AppEnv } from '../env.js';
import type { HttpMetrics } from '../metrics.js';
import { pooledRandomBytes } from '@notify/outbox';

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * Assigns the request id, then after the handler records the HTTP metrics and logs one line per
 * request: at `error` for a 5xx, at `info` for a 4xx, at `debug` for the rest (a request that
 * succeeded is in the metrics; at the default level `info` no line is written for it). The line
 * has ids, the route pattern and the status; never headers, query values or bodies.
 */
export function requestContext(deps: { readonly logger: Logger; readonly metrics: HttpMetrics }): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const incoming = c.req.header('x-request-id');
    const reqId = incoming && REQUEST_ID.test(incoming) ? incoming : `req_${pooledRandomBytes(9).toString('base64url')}`;
    c.set('reqId', reqId);
    const started = performance.now();
    await next();
    c.header('x-request-id', reqId);
    const seconds = (performance.now() - started) / 1000;
    // The route that answered (a console page, whose sub-app also has a catch-all), else the last
    // one matched (a 401 from the authentication in front of /v1), else none: an unmatched path
    // would otherwise be its own label value; bound the label set.
    const route = [routePath(c), routePath(c, -1)].find((p) => p !== '' && !p.endsWith('*')) ?? 'unmatched';
    deps.metrics.observeHttp({ method: c.req.method, route, status: c.res.status }, seconds);
    const auth = c.get('auth') as AppEnv['Variables']['auth'] | undefined;
    const trace = c.get('trace') as AppEnv['Variables']['trace'] | undefined;
    const line = {
      reqId,
      method: c.req.method,
      route,
      status: c.res.status,
      durationMs: Math.round(seconds * 10_000) / 10,
      ...(auth ? { tenantId: auth.tenantId, apiKeyId: auth.apiKeyId } : {}),
      ...(trace ? { traceId: trace.traceId } : {}),
    };
    // A successful request's line is off the hot path at info: writing it was 4.8 % of the API
    // process's busy time under POST /v1/notifications load (BENCHMARKS.md, session 7 profile).
    // A 503 is a state the process announces with Retry-After (shedding, not ready, the database
    // out of reach), logged once by what caused it: a warning here, not an error per request.
    if (c.res.status === 503) deps.logger.warn(line, 'request answered 503: unavailable');
    else if (c.res.status >= 500) deps.logger.error(line, 'request failed');
    else if (c.res.status >= 400) deps.logger.info(line, 'request');
    else deps.logger.debug(line, 'request');
  };
}

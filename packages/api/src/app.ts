import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { Kysely } from 'kysely';
import type { Database } from '@notify/migrations';
import { type Clock, type Logger, errorSummary, silentLogger, systemClock } from '@notify/runtime';
import { apiKeyLookup } from './api-key-cache.js';
import type { AppEnv } from './env.js';
import { allowedMethods } from './allowed-methods.js';
import { bearerAuth } from './middleware/bearer-auth.js';
import { apiCors, earlyCors } from './middleware/cors.js';
import { requestContext } from './middleware/request-context.js';
import { strictQuery } from './middleware/strict-query.js';
import { shedOverload } from './middleware/shed.js';
import { type EventLoopPressure, eventLoopPressure, shedOnEventLoopDelay } from './middleware/pressure.js';
import { type ApiRateLimits, apiRateLimit } from './middleware/rate-limit.js';
import { fromKysely } from '@notify/outbox';
import type { RateLimit } from '@notify/providers';
import { type HttpMetrics, noMetrics } from './metrics.js';
import { buildOpenApiDocument, queryParametersByRoute, renderDocsPage } from './openapi.js';
import { type ProblemCode, ProblemError, problem, problemFromError, problemResponse } from './problem.js';
import { suppressionRoutes, templateRoutes, webhookSecretRoutes } from './routes/management.js';
import { notificationRoutes } from './routes/notifications.js';
import { callbackRoutes } from './routes/callbacks.js';
import { erasureRoutes } from './routes/erasures.js';
import { endpointRoutes } from './routes/endpoints.js';
import type { SecretsSettings } from './management/webhook-secret.js';
import { type ConsoleOptions, consoleApp } from './console/console.js';
import { type ReadinessCheck, opsRoutes } from './routes/ops.js';

/** What `createApp` needs. Only `db` and `config` are required; the rest default for tests. */
export interface AppDeps {
  readonly db: Kysely<Database>;
  /** The retry budget and default expiry of new notifications (NOTIFY_MAX_ATTEMPTS, NOTIFY_DEFAULT_TTL_MS). */
  readonly config: {
    readonly retry: { readonly maxAttempts: number; readonly defaultTtlMs: number };
    /** NOTIFY_ENDPOINT_RATE_LIMIT, shown by /v1/endpoints as the limit of endpoints without their own. Default: none. */
    readonly endpoints?: { readonly endpointRateLimit: RateLimit | undefined };
  };
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Records each request (the service's registry in @notify/cli). Default: `noMetrics`. */
  readonly metrics?: HttpMetrics;
  /** Token buckets per API key and per tenant, shared through PostgreSQL (NOTIFY_API_RATE_LIMIT, NOTIFY_API_TENANT_RATE_LIMIT). Default: none. */
  readonly rateLimits?: ApiRateLimits;
  /**
   * NOTIFY_API_MAX_IN_FLIGHT: /v1 requests this process works on at once at most; one more is
   * answered 503 `overloaded` with Retry-After at once, without touching the database, so an
   * overload sheds instead of queueing until clients time out. Default: no bound.
   */
  readonly maxInFlight?: number;
  /**
   * NOTIFY_API_MAX_EVENT_LOOP_DELAY_MS: while this process's event loop runs more than this late
   * (CPU starvation, a long synchronous task), every public request is answered 503 `overloaded`
   * with Retry-After at once, before anything else runs. Default: off.
   */
  readonly maxEventLoopDelayMs?: number;
  /**
   * NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION: with `maxEventLoopDelayMs`, requests are also shed while
   * the event loop is busier than this share of the time (0–1; unset: not).
   */
  readonly maxEventLoopUtilization?: number;
  /** How late the event loop runs, read by that shedding. Default: this process's, measured from `createApp` on (`eventLoopPressure`). */
  readonly eventLoopPressure?: EventLoopPressure;
  /** How tenant signing secrets are stored (NOTIFY_SECRETS_KEY, NOTIFY_SECRET_ROTATION_GRACE_MS). Default: no key (rotation refused), 24 h grace. */
  readonly secrets?: SecretsSettings;
  /**
   * NOTIFY_API_KEY_CACHE_MS: how long a looked-up API key is remembered, and so the bound on how
   * long a revoked key still works (`apiKeyLookup`). Default 0: every request reads api_keys.
   */
  readonly apiKeyCacheMs?: number;
  /**
   * Group commit of `POST /v1/notifications` (`createEnqueueGroups`): requests that arrive while
   * `maxInFlight` groups are being written are written together, up to `maxGroupSize` in one
   * statement (NOTIFY_API_GROUP_COMMIT, NOTIFY_API_GROUP_COMMIT_IN_FLIGHT). Default: 100 and 1;
   * `maxGroupSize` 1 writes every request on its own.
   */
  readonly enqueueGroup?: { readonly maxGroupSize?: number; readonly maxInFlight?: number };
  /**
   * A /v1 request with no answer after this long is answered 503 `database_unreachable` with
   * Retry-After (408 `request_timeout` when its body is still arriving), while its work goes on (`notify start`: twice NOTIFY_DB_POOL_WAIT_MS). The pool's
   * wait bounds only getting a connection: a statement on a connection whose server stopped
   * answering (not refusing) waits for ever, and the group commit queues every later POST behind
   * it. What the request started may still be written: a repeat with the same Idempotency-Key
   * finds it. Default: none.
   */
  readonly requestDeadlineMs?: number;
  /** The console at /console: content visibility, the pipeline probe. */
  readonly console?: ConsoleOptions;
  /** NOTIFY_WEBHOOK_ALLOW_CIDRS, for the SSRF check of callback URLs at registration. Default: none. */
  readonly webhookAllowCidrs?: readonly string[];
  /** NOTIFY_CORS_ORIGINS: the origins (or `*`) whose pages may call /v1 (`apiCors`). Default: none, no CORS headers. */
  readonly corsOrigins?: readonly string[];
}

/** What `createAdminApp` needs. */
export interface AdminAppDeps {
  /** Records each request and renders GET /metrics. */
  readonly metrics: HttpMetrics;
  readonly logger?: Logger;
  /** Checks behind /readyz, by name (e.g. `{ database, kafka }`). */
  readonly readiness: Readonly<Record<string, ReadinessCheck>>;
}

/** The group commit of single enqueues when `AppDeps.enqueueGroup` does not say (the defaults of NOTIFY_API_GROUP_COMMIT*). */
const DEFAULT_ENQUEUE_GROUP = { maxGroupSize: 100, maxInFlight: 1 } as const;

const HTTP_EXCEPTION_CODES: Record<number, ProblemCode> = {
  400: 'malformed_json',
  401: 'unauthorized',
  404: 'not_found',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

/**
 * The public HTTP app: the API under /v1, its OpenAPI document and the docs page. Resources are
 * mounted as sub-apps, one error handler renders every failure as RFC 9457 problem+json with a
 * stable `type`. Every /v1 request is authenticated before anything else looks at it, an unknown
 * route too, so a caller without a key learns nothing of which routes exist; then its query string
 * is held to what the OpenAPI document lists for the route (`strictQuery`). Serve it with
 * @hono/node-server, or call `app.request()` in tests. Health, readiness and metrics are not here:
 * they are `createAdminApp`'s, on the admin port.
 */
export function createApp(deps: AppDeps): Hono<AppEnv> {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? silentLogger;
  const metrics = deps.metrics ?? noMetrics;
  const onShed = (reason: string) => metrics.observeShed(reason);
  const cors = deps.corsOrigins !== undefined && deps.corsOrigins.length > 0 ? deps.corsOrigins : undefined;
  // Shedding on event-loop delay comes first, before request ids and logging: the cheapest answer
  // (with the CORS headers a listed origin needs to read it).
  const first =
    deps.maxEventLoopDelayMs === undefined
      ? []
      : [
          shedOnEventLoopDelay(
            deps.eventLoopPressure ?? eventLoopPressure(),
            deps.maxEventLoopDelayMs,
            onShed,
            deps.maxEventLoopUtilization,
            cors && earlyCors(cors),
          ),
        ];
  const app = baseApp(logger, metrics, first);
  const openapi = buildOpenApiDocument();
  const docs = renderDocsPage(openapi);
  app.get('/openapi.json', (c) => c.json(openapi));
  // Static text: no script, no frame ancestor, its one inline <style> (the security audit found no headers on it).
  app.get('/docs', (c) =>
    c.html(docs, 200, {
      'content-security-policy':
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      'x-frame-options': 'DENY',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    }),
  );
  // CORS first, so that a shed, refused or rate-limited answer is readable by the page too.
  if (cors) {
    app.use('/v1/*', apiCors(cors));
  }
  if (deps.maxInFlight !== undefined) app.use('/v1/*', shedOverload(deps.maxInFlight, onShed));
  if (deps.requestDeadlineMs !== undefined && deps.requestDeadlineMs > 0) {
    const ms = deps.requestDeadlineMs;
    app.use('/v1/*', async (c, next) => {
      let timer: NodeJS.Timeout | undefined;
      const passed = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          // A client still sending its body is the one that is late, not the database: 408, as
          // Node answers a request that does not arrive within its own timeout.
          const incoming = (c.env as { incoming?: { complete?: unknown } } | undefined)?.incoming;
          if (incoming?.complete === false) {
            logger.warn({ reqId: c.get('reqId'), deadlineMs: ms }, 'request body still arriving at its deadline: answered 408');
            reject(new ProblemError('request_timeout', `the request body did not arrive within ${ms} ms`));
            return;
          }
          logger.warn({ reqId: c.get('reqId'), deadlineMs: ms }, 'request passed its deadline: answered 503, its work goes on');
          reject(
            new ProblemError(
              'database_unreachable',
              `the database did not answer within ${ms} ms; what the request started may still be written: repeat it with the same Idempotency-Key`,
              { headers: { 'retry-after': '5' } },
            ),
          );
        }, ms);
      });
      try {
        await Promise.race([next(), passed]);
      } finally {
        clearTimeout(timer);
      }
    });
  }
  const sql = fromKysely(deps.db);
  const rateLimit = apiRateLimit({ db: sql, clock, limits: deps.rateLimits ?? {} });
  const keyLookup = apiKeyLookup({ db: sql, clock, ttlMs: deps.apiKeyCacheMs ?? 0 });
  app.use('/v1/*', async (c, next) => {
    c.set('apiKeyLookup', keyLookup);
    if (rateLimit) c.set('rateLimit', rateLimit);
    await next();
  });
  app.use('/v1/*', bearerAuth({ db: sql }));
  app.use('/v1/*', strictQuery(queryParametersByRoute(openapi)));
  app.route(
    '/v1/notifications',
    notificationRoutes({
      db: deps.db,
      clock,
      logger,
      retry: deps.config.retry,
      enqueueGroup: {
        maxGroupSize: deps.enqueueGroup?.maxGroupSize ?? DEFAULT_ENQUEUE_GROUP.maxGroupSize,
        maxInFlight: deps.enqueueGroup?.maxInFlight ?? DEFAULT_ENQUEUE_GROUP.maxInFlight,
      },
      onEnqueueGroup: (size, isolated) => metrics.observeEnqueueGroup(size, isolated),
    }),
  );
  const management = { db: deps.db, clock, logger, secrets: deps.secrets ?? { key: undefined, rotationGraceMs: 86_400_000 } };
  app.route('/v1/templates', templateRoutes(management));
  app.route('/v1/suppressions', suppressionRoutes(management));
  app.route('/v1/webhook-secret', webhookSecretRoutes(management));
  app.route('/v1/callbacks', callbackRoutes({ db: deps.db, clock, logger, allowCidrs: deps.webhookAllowCidrs ?? [] }));
  app.route('/v1/erasures', erasureRoutes({ db: deps.db, clock, logger }));
  app.route('/v1/endpoints', endpointRoutes({ db: deps.db, clock, logger, defaultRateLimit: deps.config.endpoints?.endpointRateLimit }));
  app.route('/console', consoleApp({ db: deps.db, clock, logger, retry: deps.config.retry, options: deps.console ?? {} }));
  return app;
}

/**
 * The admin HTTP app: `GET /healthz`, `GET /readyz` and `GET /metrics`, without authentication.
 * `notify start` serves it on NOTIFY_ADMIN_PORT, bound to 127.0.0.1 unless NOTIFY_ADMIN_HOST says
 * otherwise, so none of it is reachable on the public port.
 */
export function createAdminApp(deps: AdminAppDeps): Hono<AppEnv> {
  const logger = deps.logger ?? silentLogger;
  const app = baseApp(logger, deps.metrics);
  app.route('/', opsRoutes({ metrics: deps.metrics, logger, readiness: deps.readiness }));
  return app;
}

/**
 * Request ids, request metrics and logs, problem+json for every error and for unknown routes: a
 * path no route matches is a 404; a path some route matches with another method is a 405 with
 * `Allow` (`allowedMethods`, from the router), and OPTIONS on it a 204 with `Allow`.
 */
function baseApp(logger: Logger, metrics: HttpMetrics, first: readonly MiddlewareHandler<AppEnv>[] = []): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  for (const m of first) app.use('*', m);
  app.use('*', requestContext({ logger, metrics }));
  app.onError((err, c) => {
    const instance = new URL(c.req.url).pathname;
    if (err instanceof HTTPException) {
      const code = HTTP_EXCEPTION_CODES[err.status] ?? 'internal_error';
      return withSetHeaders(c, problemResponse(problem(code, err.message || 'request failed', {}, instance)));
    }
    const { body, headers, expected } = problemFromError(err, instance);
    if (!expected) {
      logger.error({ reqId: c.get('reqId'), code: body.code, err: errorSummary(err) }, 'request failed');
    }
    return withSetHeaders(c, problemResponse(body, headers));
  });
  app.notFound((c) => {
    const { method, path } = c.req;
    const allowed = allowedMethods(app, path);
    if (allowed.length === 0) return withSetHeaders(c, problemResponse(problem('not_found', `no route for ${method} ${path}`, {}, path)));
    const allow = allowed.join(', ');
    if (method === 'OPTIONS') return c.body(null, 204, { allow });
    return withSetHeaders(
      c,
      problemResponse(problem('method_not_allowed', `${method} is not allowed on ${path}; it takes ${allow}`, {}, path), { allow }),
    );
  });
  return app;
}

/**
 * `res` with the headers the request's middleware set before it failed (`c.header`): the
 * RateLimit-* headers of the token the request took (rate-limit.ts), which a 404, 405 or 422
 * spends as a 200 does. A Response built anew would drop them.
 */
function withSetHeaders(c: Context<AppEnv>, res: Response): Response {
  return c.newResponse(res.body, res);
}

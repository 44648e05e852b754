import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { Kysely } from 'kysely';
import type { Database } from '@notify/migrations';
import { type Clock, type Logger, errorSummary, silentLogger, systemClock } from '@notify/runtime';
import type { AppEnv } from './env.js';
import { requestContext } from './middleware/request-context.js';
import { type HttpMetrics, noMetrics } from './metrics.js';
import { buildOpenApiDocument, renderDocsPage } from './openapi.js';
import { type ProblemCode, problem, problemFromError, problemResponse } from './problem.js';
import { suppressionRoutes, templateRoutes, webhookSecretRoutes } from './routes/management.js';
import { notificationRoutes } from './routes/notifications.js';
import type { SecretsSettings } from './management/webhook-secret.js';
import { type ReadinessCheck, opsRoutes } from './routes/ops.js';

/** What `createApp` needs. Only `db` and `config` are required; the rest default for tests. */
export interface AppDeps {
  readonly db: Kysely<Database>;
  /** The retry budget and default expiry of new notifications (NOTIFY_MAX_ATTEMPTS, NOTIFY_DEFAULT_TTL_MS). */
  readonly config: { readonly retry: { readonly maxAttempts: number; readonly defaultTtlMs: number } };
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Records each request and serves GET /metrics (the service's registry in @notify/cli). Default: `noMetrics`. */
  readonly metrics?: HttpMetrics;
  /** Checks behind /readyz. Default: the database answers `SELECT 1`. */
  readonly readiness?: Readonly<Record<string, ReadinessCheck>>;
  /** How tenant signing secrets are stored (NOTIFY_SECRETS_KEY, NOTIFY_SECRET_ROTATION_GRACE_MS). Default: no key (rotation refused), 24 h grace. */
  readonly secrets?: SecretsSettings;
  /** Serve /v1 (the api role). False leaves only the ops and docs routes, for relay or dispatcher processes. Default true. */
  readonly serveApi?: boolean;
}

const HTTP_EXCEPTION_CODES: Record<number, ProblemCode> = {
  400: 'malformed_json',
  401: 'unauthorized',
  404: 'not_found',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

/**
 * The HTTP app: resources mounted as sub-apps, one error handler that renders every failure as
 * RFC 9457 problem+json with a stable `type`. Serve it with @hono/node-server, or call
 * `app.request()` in tests.
 */
export function createApp(deps: AppDeps): Hono<AppEnv> {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? silentLogger;
  const metrics = deps.metrics ?? noMetrics;
  const readiness = deps.readiness ?? {
    database: async () => {
      await deps.db.selectNoFrom((eb) => eb.lit(1).as('one')).execute();
    },
  };

  const app = new Hono<AppEnv>();
  app.use('*', requestContext({ logger, metrics }));

  app.onError((err, c) => {
    const instance = new URL(c.req.url).pathname;
    if (err instanceof HTTPException) {
      const code = HTTP_EXCEPTION_CODES[err.status] ?? 'internal_error';
      return problemResponse(problem(code, err.message || 'request failed', {}, instance));
    }
    const { body, headers, expected } = problemFromError(err, instance);
    if (!expected) {
      logger.error({ reqId: c.get('reqId'), code: body.code, err: errorSummary(err) }, 'request failed');
    }
    return problemResponse(body, headers);
  });
  app.notFound((c) => problemResponse(problem('not_found', `no route for ${c.req.method} ${new URL(c.req.url).pathname}`)));

  app.route('/', opsRoutes({ metrics, logger, readiness }));

  const openapi = buildOpenApiDocument();
  const docs = renderDocsPage(openapi);
  app.get('/openapi.json', (c) => c.json(openapi));
  app.get('/docs', (c) => c.html(docs));

  if (deps.serveApi ?? true) {
    app.route('/v1/notifications', notificationRoutes({ db: deps.db, clock, logger, retry: deps.config.retry }));
    const management = { db: deps.db, clock, logger, secrets: deps.secrets ?? { key: undefined, rotationGraceMs: 86_400_000 } };
    app.route('/v1/templates', templateRoutes(management));
    app.route('/v1/suppressions', suppressionRoutes(management));
    app.route('/v1/webhook-secret', webhookSecretRoutes(management));
  }
  return app;
}

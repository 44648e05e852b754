import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { html } from 'hono/html';
import type { Kysely } from 'kysely';
import type { Database } from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import type { ProviderOrigins } from '@notify/providers';
import { type Clock, type Logger, errorSummary } from '@notify/runtime';
import { isUnstorableText } from '../problem.js';
import { authRoutes, logoutRoute, requireSession } from './auth.js';
import { type ConsoleEnv, notFoundPage } from './context.js';
import { deadPages } from './dead-page.js';
import { endpointPages } from './endpoints.js';
import { healthPages } from './health-page.js';
import { backLink, layout } from './layout.js';
import { notificationPages } from './notifications-page.js';
import { optOutPages } from './opt-outs-page.js';
import type { PipelineProbe } from './pipeline.js';
import { templatePages } from './templates-page.js';

const CONTENT_SECURITY_POLICY =
  "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/** The largest form body the console reads. */
const MAX_FORM_BYTES = 1024 * 1024;

/** Settings of the console. */
export interface ConsoleOptions {
  /** NOTIFY_CONSOLE_SHOW_CONTENT=1: show bodies and data. Default false: recipients, states and errors only. */
  readonly showContent?: boolean;
  /** Outbox and consumer lag for the pipeline page (from `notify start`); without it the page says they are not available. */
  readonly pipeline?: PipelineProbe;
  /**
   * The endpoint origins of the email and SMS providers (`providerOrigins(config)`), so a
   * notification's page finds its endpoint as the dispatcher does. Without them only webhook
   * notifications show their endpoint's state (a webhook's endpoint is its URL's origin).
   */
  readonly endpointOrigins?: ProviderOrigins;
  /** Session lifetime. Default 8 h. */
  readonly sessionTtlMs?: number;
}

/**
 * The operator console, served under /console by the API role: server-rendered HTML without
 * client scripts. Sign-in exchanges an API key for a session cookie (HttpOnly, SameSite=Strict,
 * Secure over TLS, expiring); every state-changing form carries the session's CSRF token; every
 * query is scoped to the session's tenant, and another tenant's id is a 404 page.
 */
export function consoleApp(deps: {
  db: Kysely<Database>;
  clock: Clock;
  logger: Logger;
  retry: { maxAttempts: number };
  options: ConsoleOptions;
}): Hono<ConsoleEnv> {
  const d = {
    db: deps.db,
    exec: fromKysely(deps.db),
    clock: deps.clock,
    logger: deps.logger.child({ component: 'console' }),
    retry: deps.retry,
    showContent: deps.options.showContent ?? false,
    pipeline: deps.options.pipeline,
    endpointOrigins: deps.options.endpointOrigins ?? {},
    sessionTtlMs: deps.options.sessionTtlMs ?? 8 * 3_600_000,
  };
  const app = new Hono<ConsoleEnv>();
  // No page may be kept by the browser after sign-out (Back showed a notification), framed by
  // another site, sniffed as another type, or run a script (the console has none), and no
  // address leaves in a Referer.
  app.use('*', async (c, next) => {
    await next();
    c.header('cache-control', 'no-store');
    c.header('x-frame-options', 'DENY');
    c.header('x-content-type-options', 'nosniff');
    c.header('referrer-policy', 'same-origin');
    c.header('content-security-policy', CONTENT_SECURITY_POLICY);
  });
  // A form is a few KiB; a template version's body at most 64 Ki characters (percent-encoded: up to 12 bytes each).
  app.use(
    '*',
    bodyLimit({
      maxSize: MAX_FORM_BYTES,
      onError: (c) => c.html(layout({ title: 'Too large', error: 'The form is too large.' }, backLink(c.req.header('referer'))), 413),
    }),
  );
  app.onError((err, c) => {
    if (isUnstorableText(err)) {
      const error = 'A value holds a character that cannot be stored (U+0000). Remove it and try again.';
      return c.html(layout({ title: 'Not done', error }, html`<p><a href="/console/notifications">Back to notifications</a></p>`), 400);
    }
    d.logger.error({ reqId: c.get('reqId'), err: errorSummary(err) }, 'console request failed');
    // The request id finds the log line (the page says nothing of the error itself).
    const error = `The request failed; it has been logged with request id ${c.get('reqId') ?? 'unknown'}.`;
    return c.html(layout({ title: 'Something went wrong', error }, backLink(c.req.header('referer'))), 500);
  });
  app.route('/', authRoutes(d));
  const secured = new Hono<ConsoleEnv>();
  const session = requireSession(d);
  secured.use('*', async (c, next) => {
    if (new URL(c.req.url).pathname === '/console/login') return next();
    // Hono types a wildcard middleware's input as any; requireSession reads only cookies and the form.
    // eslint-disable-next-line @typescript-eslint/no-unsafe-argument
    return session(c, next);
  });
  secured.get('/', (c) => c.redirect('/console/notifications', 303));
  for (const pages of [
    logoutRoute(d),
    notificationPages(d),
    deadPages(d),
    templatePages(d),
    optOutPages(d),
    healthPages(d),
    endpointPages(d),
  ])
    secured.route('/', pages);
  secured.all('*', (c) => notFoundPage(c, 'page'));
  app.route('/', secured);
  return app;
}

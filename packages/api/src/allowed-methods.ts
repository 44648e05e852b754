import type { Env, Hono } from 'hono';
import { METHOD_NAME_ALL } from 'hono/router';

/** The order of the methods in an `Allow` header; others (none today) after them. */
const ALLOW_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const rank = (m: string) => (ALLOW_ORDER.includes(m) ? ALLOW_ORDER.indexOf(m) : ALLOW_ORDER.length);

/**
 * The methods `app` answers on `path`, for a 405's or an OPTIONS answer's `Allow` header: every
 * method one of its routes matches `path` for, asked of the app's own router, so a new route
 * counts without a table to keep. Middleware (`use`, `all`: method ALL) does not count; a
 * catch-all `all` route (the console's) answers every method itself and never gets here. HEAD is
 * added where GET is (Hono answers HEAD with the GET route, without the body), and OPTIONS (the
 * app answers it with this list). Empty when no route matches `path`: that is a 404, not a 405.
 */
export function allowedMethods<E extends Env>(app: Hono<E>, path: string): string[] {
  const registered = new Set(app.routes.map((r) => r.method).filter((m) => m !== METHOD_NAME_ALL));
  const allowed = [...registered].filter((method) =>
    app.router.match(method, path)[0].some(([[, route]]) => route.method !== METHOD_NAME_ALL),
  );
  if (allowed.length === 0) return [];
  if (allowed.includes('GET')) allowed.push('HEAD');
  allowed.push('OPTIONS');
  return allowed.sort((a, b) => rank(a) - rank(b));
}

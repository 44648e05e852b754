import type { MiddlewareHandler } from 'hono';
import { METHOD_NAME_ALL } from 'hono/router';
import { matchedRoutes } from 'hono/route';
import type { AppEnv } from '../env.js';
import { ProblemError } from '../problem.js';

/** The query parameters each route takes, by method and Hono path: `GET /v1/notifications` → state, to, limit, cursor. */
export type QueryParametersByRoute = ReadonlyMap<string, readonly string[]>;

/**
 * Refuses a query string the route the request reached does not take, before its handler (and
 * its body checks) runs: a parameter given more than once (`?state=sent&state=dead` is not
 * read as either), and one the route does not list in `parameters` (a route missing from it
 * takes none). One 400 `invalid_query` names every parameter at fault. A request that reached
 * no route passes on to the 404 or 405. The handler still validates the values (`parseQuery`).
 */
export function strictQuery(parameters: QueryParametersByRoute): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // The route the request reached: its handler is the last route matched that is not middleware.
    const route = matchedRoutes(c).findLast((r) => r.method !== METHOD_NAME_ALL);
    if (route) {
      const taken = parameters.get(`${route.method} ${route.path}`) ?? [];
      const errors = Object.entries(c.req.queries()).flatMap(([name, values]) => {
        if (!taken.includes(name)) {
          const message = `unknown parameter; this operation takes ${taken.length > 0 ? taken.join(', ') : 'none'}`;
          return [{ path: name, message }];
        }
        return values.length > 1 ? [{ path: name, message: `given more than once (${values.length} times); give it once` }] : [];
      });
      if (errors.length > 0) {
        const names = errors.map((e) => `"${e.path}"`).join(', ');
        throw new ProblemError('invalid_query', `the query parameters are not valid: ${names}`, { extensions: { errors } });
      }
    }
    await next();
  };
}

import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env.js';
import { ProblemError } from '../problem.js';
import type { ShedReason } from './pressure.js';

/**
 * Load shedding: at most `max` requests in progress through this middleware; the next one is
 * refused at once with 503 `overloaded` and `Retry-After: 1`, before any database work. Without
 * it an overload queues requests on the database pool until clients time out (issue 13, item 3).
 */
export function shedOverload(max: number, onShed: (reason: ShedReason) => void = () => {}): MiddlewareHandler<AppEnv> {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxInFlight must be an integer ≥ 1, got ${max}`);
  let inFlight = 0;
  return async (_c, next) => {
    if (inFlight >= max) {
      onShed('in_flight');
      throw new ProblemError('overloaded', `more than ${max} requests in progress; retry later`, { headers: { 'retry-after': '1' } });
    }
    inFlight++;
    try {
      await next();
    } finally {
      inFlight--;
    }
  };
}

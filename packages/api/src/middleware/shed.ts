import type { MiddlewareHandler } from 'hono';
import type { AppEnv, InFlightSlot } from '../env.js';
import { ProblemError } from '../problem.js';
import type { ShedReason } from './pressure.js';

/**
 * Load shedding: at most `max` requests in progress through this middleware; the next one is
 * refused at once with 503 `overloaded` and `Retry-After: 1`, before any database work. Without
 * it an overload queues requests on the database pool until clients time out (issue 13, item 3).
 * A request waiting for its client's body bytes does not count (`InFlightSlot`): 64 connections
 * of one tenant that each sent a byte of a body held every slot, and every tenant's requests were
 * shed, for as long as the request deadline (security audit, session 2026-12-07).
 */
export function shedOverload(max: number, onShed: (reason: ShedReason) => void = () => {}): MiddlewareHandler<AppEnv> {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxInFlight must be an integer ≥ 1, got ${max}`);
  let inFlight = 0;
  const overloaded = () => {
    onShed('in_flight');
    return new ProblemError('overloaded', `more than ${max} requests in progress; retry later`, { headers: { 'retry-after': '1' } });
  };
  // One object for every request: the count is the process's, not the request's.
  const slot: InFlightSlot = {
    release() {
      inFlight--;
    },
    retake() {
      // Counted first either way, so the `finally` below balances a shed retake too.
      if (++inFlight > max) throw overloaded();
    },
  };
  return async (c, next) => {
    if (inFlight >= max) throw overloaded();
    inFlight++;
    c.set('inFlightSlot', slot);
    try {
      await next();
    } finally {
      inFlight--;
    }
  };
}

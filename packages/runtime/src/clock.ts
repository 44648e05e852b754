/**
 * The clock is a port. Production code takes a `Clock` from its deps and never calls
 * `Date.now()` itself, so tests can drive time (the article's lab runs 20 s of "time" instantly).
 * SQL receives `clock.now()` as a parameter for the same reason.
 */
export interface Clock {
  /** The current instant. */
  now(): Date;
}

/** The wall clock. */
export const systemClock: Clock = {
  now: () => new Date(),
};

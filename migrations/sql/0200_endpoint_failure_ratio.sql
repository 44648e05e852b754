-- 0200: the circuit breaker also looks at an endpoint's recent failure ratio, not only at its
-- failure streak. Forward-only.
--
-- Before, N consecutive transient failures (NOTIFY_ENDPOINT_FAILURE_THRESHOLD, 5) opened the
-- circuit. On a busy endpoint that fails a fraction of its requests at random, a streak of 5 is
-- a matter of time: at 30 % failures and 130 deliveries a second one comes every few seconds
-- (n × 0.7 × 0.3^5), and each one put every delivery to that origin off for a cool-down (10 s).
-- Measured with `pnpm bench retry-heavy` (the receiver fails 30 % of requests at random): retries
-- of both runs started up to 11 s and 21 s after their due time, all at the end of a cool-down.
-- Now the streak opens the circuit only if failures are also at least NOTIFY_ENDPOINT_FAILURE_RATIO
-- (default 0.5) of the endpoint's recent answers: counts that decay with a 10 s time constant,
-- kept in the row (health_attempts, health_failures as of health_at) by the same statement that
-- records the results. A dead endpoint is at 100 % and opens as before after N failures.
--
-- Locks: ADD COLUMN with a constant default is a catalogue change (no table rewrite); it takes the
-- table's ACCESS EXCLUSIVE lock for that moment only.
ALTER TABLE endpoints
  ADD COLUMN health_attempts double precision NOT NULL DEFAULT 0,  -- answers (successes and transient failures), decayed to health_at
  ADD COLUMN health_failures double precision NOT NULL DEFAULT 0,  -- transient failures among them, decayed the same way
  ADD COLUMN health_at       timestamptz;                          -- when the two counts were last updated

-- 0320: the seven cross-column invariants of notifications are checked by one BEFORE INSERT OR
-- UPDATE row trigger instead of seven table CHECKs, under the same constraint names. Forward-only.
-- Numbers: BENCHMARKS.md ("What session 31 changed").
--
-- PostgreSQL reads every table CHECK of a table again from its stored node text in each statement
-- that writes a row of it (ExecRelCheck: stringToNode, then expression_planner, per statement).
-- 0193 and 0230 moved the single-column CHECKs into domains, whose expressions are read once per
-- backend; these seven compare columns with each other, which a domain over one column cannot.
-- Their ~5.6 KB of node text was a fifth of a single-row enqueue's statement and commit: 578k CPU
-- instructions with them, 456k with this trigger (callgrind, single-user backend, both rows with
-- constant values, the same empty tables). A PL/pgSQL trigger function is compiled once per
-- backend and keeps its expression's plan. Per row the trigger costs more than the CHECKs did
-- (about 4.5k instructions against under 1k): a statement that writes n rows saves 122k and pays
-- n x 4.5k, even at about 27 rows, and a row of a 100-row INSERT costs 3 % more (137k -> 142k).
-- enqueue() writes one row per statement in the caller's transaction. A backlog drain's outcome
-- UPDATEs carry ~50 rows each (session 30 counted 384 for 20,000 notifications): ~2k instructions
-- more per notification there, about a microsecond of PostgreSQL's ~250 us per notification.
--
-- What stays the same for a client: a row that breaks an invariant is refused with SQLSTATE 23514
-- (check_violation), the constraint's name in the error's constraint field and the message PostgreSQL
-- gives for a table CHECK (without its DETAIL, which would print the row: logs never carry a
-- body). A NULL result passes as it does for a CHECK, so a NULL in a NOT NULL column (attempts,
-- max_attempts, state) is still refused as a not-null violation (23502), checked after BEFORE
-- triggers. When several invariants fail, the first by name is reported, as for CHECKs.
--
-- What differs: a trigger is not a constraint. It does not fire under
-- `session_replication_role = replica` (logical replication's apply, `pg_restore
-- --disable-triggers`), `ALTER TABLE notifications DISABLE TRIGGER` turns it off, and it checks
-- only rows written after it exists (every existing row passed the CHECKs it replaces: they are
-- dropped in the same transaction). docs/state-machine.md says so.
--
-- Locks: ALTER TABLE ... DROP CONSTRAINT and CREATE TRIGGER take ACCESS EXCLUSIVE / SHARE ROW
-- EXCLUSIVE on notifications until the migration commits; neither reads the table.
CREATE FUNCTION notifications_check_invariants() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
DECLARE
  failed text;
BEGIN
  -- One expression for the common case (every invariant holds or is NULL); the names only on failure.
  IF (NEW.attempts >= 0 AND NEW.attempts <= NEW.max_attempts) IS NOT FALSE
     AND ((NEW.body IS NULL) <> (NEW.template IS NULL)) IS NOT FALSE
     AND ((NEW.state = 'dead') = (NEW.dead_reason IS NOT NULL)) IS NOT FALSE
     AND (NEW.held_until IS NULL OR NEW.send_at IS NOT NULL) IS NOT FALSE
     AND ((NEW.idempotency_key IS NULL) = (NEW.request_hash IS NULL)) IS NOT FALSE
     AND ((NEW.state = 'queued') = (NEW.next_attempt_at IS NOT NULL)) IS NOT FALSE
     AND ((NEW.state = 'sent') = (NEW.sent_at IS NOT NULL)) IS NOT FALSE THEN
    RETURN NEW;
  END IF;
  failed := CASE
    WHEN (NEW.attempts >= 0 AND NEW.attempts <= NEW.max_attempts) IS FALSE THEN 'notifications_attempts_in_range'
    WHEN ((NEW.body IS NULL) <> (NEW.template IS NULL)) IS FALSE THEN 'notifications_body_xor_template'
    WHEN ((NEW.state = 'dead') = (NEW.dead_reason IS NOT NULL)) IS FALSE THEN 'notifications_dead_iff_reason'
    WHEN (NEW.held_until IS NULL OR NEW.send_at IS NOT NULL) IS FALSE THEN 'notifications_held_is_scheduled'
    WHEN ((NEW.idempotency_key IS NULL) = (NEW.request_hash IS NULL)) IS FALSE THEN 'notifications_key_has_hash'
    WHEN ((NEW.state = 'queued') = (NEW.next_attempt_at IS NOT NULL)) IS FALSE THEN 'notifications_queued_iff_next_attempt'
    ELSE 'notifications_sent_iff_sent_at'
  END;
  RAISE EXCEPTION 'new row for relation "%" violates check constraint "%"', TG_TABLE_NAME, failed
    USING ERRCODE = 'check_violation', CONSTRAINT = failed, TABLE = TG_TABLE_NAME, SCHEMA = TG_TABLE_SCHEMA;
END
$$;

CREATE TRIGGER notifications_invariants BEFORE INSERT OR UPDATE ON notifications
  FOR EACH ROW EXECUTE FUNCTION notifications_check_invariants();

ALTER TABLE notifications
  DROP CONSTRAINT notifications_attempts_in_range,
  DROP CONSTRAINT notifications_body_xor_template,
  DROP CONSTRAINT notifications_dead_iff_reason,
  DROP CONSTRAINT notifications_held_is_scheduled,
  DROP CONSTRAINT notifications_key_has_hash,
  DROP CONSTRAINT notifications_queued_iff_next_attempt,
  DROP CONSTRAINT notifications_sent_iff_sent_at;
